"""Parse one OpenSSH public key line ("<type> <base64> [comment]") into what svc stores.

Accepted (spec: SSH keys): ssh-ed25519, ecdsa-sha2-nistp256/384/521, ssh-rsa of 2048 to 16384 bits.
Everything else is refused with a message that says why: DSA, short RSA, certificates, security-key
(sk-) keys, private keys, authorized_keys options, several keys, anything that is not base64 of a
well-formed key blob. The blob must be in canonical form (as OpenSSH writes it), so the fingerprint
is the one `ssh-keygen -lf` prints and one key cannot be registered twice under two encodings.
The comment is dropped: `publicKey` is stored and returned as "<type> <base64>".
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from svc.domains.credentials.errors import BadSSHKey

MAX_KEY_TEXT = 16 * 1024
RSA_MIN_BITS = 2048
RSA_MAX_BITS = 16384  # OpenSSH's own upper bound

ACCEPTED_TYPES = ("ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "ssh-rsa")
_ACCEPTED_TEXT = "ssh-ed25519, ecdsa-sha2-nistp256/384/521 or ssh-rsa (2048 bits or more)"
_KEY_TYPE_WORD = re.compile(
    r"^(ssh-[a-z0-9-]+|ecdsa-sha2-[a-z0-9-]+|sk-[a-z0-9@.-]+|[a-z0-9.-]+-cert-v0\d@openssh\.com)$")
_B64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")
# Key data of a second key in the comment: every key blob starts with a length prefix, "AAAA".
_KEY_DATA_WORD = re.compile(r"^AAAA[A-Za-z0-9+/]{40,}={0,2}$")


# What the key data of each accepted type starts with, in base64: the blob's type name (and curve)
# and length prefixes, fixed by the canonical form required below. An ed25519 key is that and 32
# bytes of any value, so its data is stated exactly; the others' points and numbers only parse_public_key
# can check. The document states the line's shape with this, for clients; parse_public_key decides.
_DATA_STARTS = {
    "ssh-ed25519": r"AAAAC3NzaC1lZDI1NTE5AAAAI[A-P][A-Za-z0-9+/]{42}",
    "ecdsa-sha2-nistp256": r"AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABB[A-Za-z0-9+/]+={0,2}",
    "ecdsa-sha2-nistp384": r"AAAAE2VjZHNhLXNoYTItbmlzdHAzODQAAAAIbmlzdHAzODQAAABh[A-Za-z0-9+/]+={0,2}",
    "ecdsa-sha2-nistp521": r"AAAAE2VjZHNhLXNoYTItbmlzdHA1MjEAAAAIbmlzdHA1MjEAAACF[A-Za-z0-9+/]+={0,2}",
    "ssh-rsa": r"AAAAB3NzaC1yc2EAAAA[A-Za-z0-9+/]+={0,2}",
}
PUBLIC_KEY_PATTERN = (r"^\s*(?:" + "|".join(rf"{t}\s+{data}" for t, data in _DATA_STARTS.items())
                      + r")(?:\s.*)?$")
# The document's name for a public key line: a client that knows it can generate or check real keys.
PUBLIC_KEY_FORMAT = "openssh-public-key"


@dataclass(frozen=True)
class ParsedKey:
    key_type: str
    bits: int
    public_key: str
    fingerprint: str


def fingerprint(blob: bytes) -> str:
    """The SHA-256 fingerprint as OpenSSH prints it: "SHA256:" + base64 without padding."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def _refuse(message: str) -> BadSSHKey:
    # Never echo the input: a person may have pasted a private key by mistake.
    return BadSSHKey(f"publicKey: {message}", details={"accepted": list(ACCEPTED_TYPES)})


def _kind_of(key_type: str) -> str:
    if key_type == "ssh-dss":
        return "DSA keys are not accepted; use " + _ACCEPTED_TEXT
    if "-cert-v0" in key_type:
        return "SSH certificates are not accepted; register the plain public key"
    if key_type.startswith("sk-"):
        return "security-key (sk-) keys are not supported yet; use " + _ACCEPTED_TEXT
    return "unsupported key type; use " + _ACCEPTED_TEXT


def parse_public_key(text: str) -> ParsedKey:
    """One OpenSSH public key line -> ParsedKey, or BadSSHKey (400 bad_request) saying what is wrong."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_KEY_TEXT:
        raise _refuse(f"longer than {MAX_KEY_TEXT} bytes")
    line = text.strip()
    if not line:
        raise _refuse("empty; paste the contents of your .pub file")
    if "PRIVATE KEY" in line:
        raise _refuse("this is a private key; never share it. Paste the public key (the .pub file) instead")
    if line.startswith("-----BEGIN") or line.startswith("---- BEGIN"):
        raise _refuse("PEM and RFC 4716 files are not accepted; paste the one-line OpenSSH format "
                      "('ssh-ed25519 AAAA... comment')")
    if "\n" in line or "\r" in line:
        raise _refuse("one key per request: the value must be a single line")
    fields = line.split(None, 2)
    key_type = fields[0]
    if key_type not in ACCEPTED_TYPES:
        if not _KEY_TYPE_WORD.match(key_type) and len(fields) > 1 and _KEY_TYPE_WORD.match(fields[1]):
            raise _refuse("authorized_keys options are not accepted; paste the key alone")
        raise _refuse(_kind_of(key_type) if _KEY_TYPE_WORD.match(key_type) else "not an OpenSSH public key")
    if len(fields) < 2 or not _B64.match(fields[1]):
        raise _refuse("the key data after the type is missing or not base64")
    comment = fields[2] if len(fields) > 2 else ""
    if any(_KEY_DATA_WORD.match(word) for word in comment.split()):
        raise _refuse("one key per request: the value holds more than one key")
    try:
        blob = base64.b64decode(fields[1], validate=True)
    except (binascii.Error, ValueError):
        raise _refuse("the key data is not valid base64") from None
    try:
        key = serialization.load_ssh_public_key(f"{key_type} {fields[1]}".encode())
    except (ValueError, UnsupportedAlgorithm):
        raise _refuse(f"the key data is not a valid {key_type} key") from None
    canonical = key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    canonical_type, canonical_b64 = canonical.split(" ", 1)
    if canonical_type != key_type or base64.b64decode(canonical_b64) != blob:
        raise _refuse("the key data is not in canonical OpenSSH form")
    if isinstance(key, ed25519.Ed25519PublicKey):
        bits = 256
    elif isinstance(key, ec.EllipticCurvePublicKey):
        bits = key.curve.key_size
    elif isinstance(key, rsa.RSAPublicKey):
        bits = key.key_size
        if bits < RSA_MIN_BITS:
            raise _refuse(f"RSA keys need {RSA_MIN_BITS} bits or more; this one has {bits}. "
                          "Generate a new key, preferably with 'ssh-keygen -t ed25519'")
        if bits > RSA_MAX_BITS:
            raise _refuse(f"RSA keys over {RSA_MAX_BITS} bits are not accepted")
    else:  # pragma: no cover - the type check above lets only the three kinds through
        raise _refuse("unsupported key type; use " + _ACCEPTED_TEXT)
    return ParsedKey(key_type=key_type, bits=bits, public_key=canonical, fingerprint=fingerprint(blob))

"""The receive hooks of every repository (pre-receive and post-receive are copies of this file,
run by git with svc's Python, without site packages, so a push pays no import of svc).

git hands a hook the push's ref changes on stdin; this passes them to svc through the node's gate
(the Unix socket named by SVC_GIT_GATE, for the push SVC_GIT_PUSH) in the gate's text form, with
(pre-receive) the bytes the push brought: its quarantine, the directory git keeps a push's objects
in until the hook has said yes (GIT_QUARANTINE_PATH), which svc counts against the org's quota; and
prints svc's answer, which git sends the pusher as "remote: ..." lines. A pre-receive hook that
exits non-zero refuses the whole push. A repository reached without svc's environment (someone on
the machine with a plain git) is refused: every ref change must be recorded.

A hook starts twice per push, on the core that git's index-pack uses: it imports C's `_socket`
rather than `socket` and speaks text rather than JSON, because `socket` (its enums) and `json`
(`re`) took 12 of a hook's 21 ms to start (10 ms now; bench/git.py, docs/repos.md)."""

import _socket
import os
import sys

# A deployment made by a push is packed, checked and put live before the answer: bounded, generously.
ANSWER_SECONDS = 300


def main() -> int:
    phase = "pre" if os.path.basename(sys.argv[0]).startswith("pre") else "post"
    gate, push = os.environ.get("SVC_GIT_GATE"), os.environ.get("SVC_GIT_PUSH")
    if not gate or not push:
        sys.stderr.write("svc: this repository takes pushes through svc only\n")
        return 1
    changes = sys.stdin.buffer.read()
    question = f"hook {phase} {push}"
    if phase == "pre":
        question += f" {incoming_bytes(os.environ.get('GIT_QUARANTINE_PATH'))}"
    try:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.settimeout(ANSWER_SECONDS)
            sock.connect(gate)
            sock.sendall(f"{question}\n".encode() + changes)
            sock.shutdown(_socket.SHUT_WR)
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        finally:
            sock.close()
    except OSError as exc:
        sys.stderr.write(f"svc: the push could not be checked ({exc.__class__.__name__}); try again\n")
        return 1
    verdict, _, lines = answer.decode("utf-8", "replace").partition("\n")
    sys.stderr.write(lines)
    return 0 if verdict == "ok" else 1


def incoming_bytes(quarantine: str | None) -> int:
    """The disk the push's quarantine takes (none: a push that only moves or deletes refs): its
    files' and directories' allocated blocks, as svc counts the repositories (local.py)."""
    total = 0
    for folder, dirs, files in os.walk(quarantine or ""):
        for name in (*dirs, *files):
            try:
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
            except OSError:
                pass
    return total


if __name__ == "__main__":
    sys.exit(main())

"""`svc keys list|add|remove`: SSH public keys (for git over SSH)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from svc.cli import output
from svc.cli.client import Api, CliError, seg
from svc.cli.output import JsonFlag

if TYPE_CHECKING:
    from rich.console import Console

HELP = "Your SSH public keys, for git over SSH."  # its line in `svc --help`
app = typer.Typer(help="Your SSH public keys, for git over SSH.", no_args_is_help=True)

DEFAULT_KEY = "~/.ssh/id_ed25519.pub"
MAX_KEY_FILE = 64 * 1024


def read_public_key(path: Path) -> tuple[str, str]:
    """(the key line, its comment) from an OpenSSH public key file; refuses private keys."""
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_KEY_FILE + 1)
    except FileNotFoundError:
        raise CliError(f"No such file: {path}", "file_not_found",
                       hint="give the path of a public key (.pub), or create one with ssh-keygen -t ed25519") from None
    except OSError as exc:
        raise CliError(f"Cannot read {path}: {exc.strerror}", "file_unreadable") from None
    text = raw.decode("utf-8", errors="replace")
    if "PRIVATE KEY" in text:
        raise CliError(f"{path} is a private key; give its public half (the .pub file)", "private_key")
    if len(raw) > MAX_KEY_FILE:
        raise CliError(f"{path} is too large to be a public key", "bad_public_key")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if len(lines) != 1:
        raise CliError(f"{path} should hold exactly one public key line", "bad_public_key")
    parts = lines[0].split(None, 2)
    if len(parts) < 2:
        raise CliError(f"{path} does not look like an OpenSSH public key ('<type> <base64> [comment]')",
                       "bad_public_key")
    return lines[0], parts[2].strip() if len(parts) == 3 else ""


@app.command("list")
def list_keys(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """List your SSH keys."""
    with Api.for_context(ctx) as api:
        data = api.get("/v1/me/ssh-keys")

    def render(c: Console) -> None:
        c.print(output.table(["ID", "NAME", "TYPE", "BITS", "FINGERPRINT", "ADDED"],
                             ([k.get("id"), k.get("name"), k.get("type"), k.get("bits"), k.get("fingerprint"),
                               output.when(k.get("createdAt"))] for k in data.get("sshKeys") or []),
                             empty="No SSH keys.", shrink={"NAME": 8}, optional=("ADDED", "BITS")))

    output.emit(as_json, data, render)


@app.command("add")
def add(
    ctx: typer.Context,
    path: Annotated[str, typer.Argument(metavar="PATH", help="A public key file.")] = DEFAULT_KEY,
    name: Annotated[str | None, typer.Option(help="A label (default: the key's comment, else the file name).")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Add an SSH public key (default ~/.ssh/id_ed25519.pub). Needs a browser/dev session, not a token."""
    file = Path(path).expanduser()
    key, comment = read_public_key(file)
    label = (name or comment or file.name)[:100]
    with Api.for_context(ctx) as api:
        created = api.post("/v1/me/ssh-keys", {"name": label, "publicKey": key})

    def render(c: Console) -> None:
        from rich.text import Text

        c.print(Text(f"Added SSH key {created.get('name')!r} ({created.get('type')}, {created.get('fingerprint')})."),
                soft_wrap=True)

    output.emit(as_json, created, render)


@app.command("remove")
def remove(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(metavar="KEY", help="The key's id, fingerprint (SHA256:...) or name.")],
    as_json: JsonFlag = False,
) -> None:
    """Remove an SSH key; it stops working at once."""
    with Api.for_context(ctx) as api:
        key_id = _resolve(api, key)
        api.delete(f"/v1/me/ssh-keys/{seg(key_id)}")
    output.emit_line(as_json, {"removed": True, "id": key_id}, f"Removed SSH key {key}.")


def _resolve(api: Api, key: str) -> str:
    rows: list[dict[str, Any]] = api.get("/v1/me/ssh-keys").get("sshKeys") or []
    for field in ("id", "fingerprint", "name"):
        hits = [k for k in rows if k.get(field) == key]
        if len(hits) == 1:
            return str(hits[0].get("id"))
        if len(hits) > 1:
            raise CliError(f"{key!r} names {len(hits)} keys; give the id instead", "ambiguous")
    raise CliError(f"No SSH key {key!r}", "not_found")

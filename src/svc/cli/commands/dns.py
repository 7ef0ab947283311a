"""`svc dns zones|records|dnssec`: an org's DNS zones on svc's nameservers, their record sets and DNSSEC.

Records go in as zone-file text (`192.0.2.1`, `10 mail`, `"v=spf1 -all"`), names relative to the
zone (`www`, `_sip._tcp`, `@` for the apex), exactly as the API takes them; the server checks every
record and answers in words. The server stores a change and its nameserver follows within a moment
(docs/dns.md, "How a change reaches the nameserver"), so the commands say "stored", not "live".
"""

from __future__ import annotations

import shlex
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from svc.cli import output
from svc.cli.client import Api, ApiError, CliError, seg
from svc.cli.commands.projects import OrgOption, local_manifest, resolve_org
from svc.cli.output import JsonFlag
from svc.kit.hosts import unicode_spelling

if TYPE_CHECKING:
    from rich.console import Console

HELP = "DNS zones on svc's nameservers: zones, records, DNSSEC."  # its line in `svc --help`
app = typer.Typer(help="DNS zones on svc's nameservers: zones, their records, DNSSEC.", no_args_is_help=True)
zones_app = typer.Typer(help="An org's DNS zones: list, create, delete.", no_args_is_help=True)
records_app = typer.Typer(help="A zone's record sets, in zone-file text: list, set, delete.", no_args_is_help=True)
dnssec_app = typer.Typer(help="DNSSEC of a zone: on, off, and the DS records for the registrar.",
                         no_args_is_help=True)
app.add_typer(zones_app, name="zones")
app.add_typer(records_app, name="records")
app.add_typer(dnssec_app, name="dnssec")

POLL_SECONDS = 0.5
# What the API spells in its path; lowercase input is uppercased for the user (the API refuses it).
TYPES = ("A", "AAAA", "MX", "SRV", "CAA", "CNAME", "TXT", "NS")
MAX_FILE_BYTES = 1_048_576  # a --file of records: far above what 100 records of 16 KiB text could need

ZoneArg = Annotated[str, typer.Argument(metavar="ZONE", help="The zone, such as example.com.")]
NameArg = Annotated[str, typer.Argument(metavar="NAME",
                                        help='Relative to the zone ("www", "_sip._tcp"); "@" is the apex.')]
TypeArg = Annotated[str, typer.Argument(metavar="TYPE", help="A, AAAA, MX, SRV, CAA, CNAME, TXT or NS.")]

# Hints after an API error, by its code: the CLI's own next step (the message says what is wrong
# and the remedy in words both the CLI and the dashboard show).
_HINTS = {
    "dns_not_configured": "this svc server has no nameserver: its `svc serve` banner says why (the `dns:` line)",
    "dnssec_off": "turn DNSSEC on first: svc dns dnssec on ZONE",
    "ds_managed": "svc dns zones list shows where the DS stands at the registrar (DS AT REGISTRAR)",
}


# --- helpers ---

def _org(api: Api, org: str | None) -> str:
    return resolve_org(api, org, local_manifest() if not org else None)


def _command(org: str, *words: str) -> str:
    """A command to paste, with the org named (so it works wherever it is pasted, whatever the
    folder's svc.json says)."""
    return " ".join(["svc", "dns", *words, "--org", shlex.quote(org)])


def _zones_path(org: str) -> str:
    return f"/v1/orgs/{seg(org)}/dns/zones"


def _zone_path(org: str, zone: str) -> str:
    return f"{_zones_path(org)}/{seg(zone)}"


def _rrset_path(org: str, zone: str, name: str, rtype: str) -> str:
    return f"{_zone_path(org, zone)}/rrsets/{seg(name)}/{seg(rtype)}"


def shown(name: Any) -> str:
    """A zone's name as people write it: without the trailing dot."""
    text = str(name or "")
    return text[:-1] if text.endswith(".") and text != "." else text


def record_type(text: str) -> str:
    upper = text.strip().upper()
    if upper not in TYPES and upper != "SOA":  # SOA: the API's own answer (managed_rrset) is the better one
        raise typer.BadParameter(f"{text!r} is not one of {', '.join(TYPES)}", param_hint="TYPE")
    return upper


def relative_name(name: str, zone: str) -> str:
    """A --name filter as the API shows names: `@` for the apex, else relative to the zone. Takes
    `www`, `WWW`, `www.example.com.`, `example.com`, and unicode labels (shown as punycode)."""
    value = name.strip().lower()
    labels = [_ascii_label(label) for label in value.rstrip(".").split(".")] if value not in ("", "@") else []
    joined = ".".join(labels)
    apex = shown(zone).lower()
    if not labels or joined == apex:
        return "@"
    if joined.endswith("." + apex):
        return joined[: -len(apex) - 1]
    return joined


def unicode_name(name: str) -> str:
    """xn--bcher-kva.example -> bücher.example (as it is when it has no punycode label, or a bad one)."""
    return unicode_spelling(name) or name


def _ascii_label(label: str) -> str:
    if label.isascii():
        return label
    import idna  # only for a unicode name: the server stores names as punycode

    try:
        return idna.encode(label, uts46=True).decode("ascii")
    except idna.IDNAError:
        return label  # no match then: the filter simply finds nothing


@contextmanager
def explained(records: list[str] | None = None, rtype: str | None = None) -> Iterator[None]:
    """API errors with a hint in the CLI's terms; a refused record is named by its text as given
    (the API says `records.1 ...`, the user typed the second record)."""
    try:
        yield
    except ApiError as exc:
        details = exc.details if isinstance(exc.details, dict) else {}
        if exc.hint is None and exc.code in _HINTS:
            exc.hint = _HINTS[exc.code]
        elif exc.hint is None and exc.code == "not_found" and "zone" in details:
            exc.hint = "`svc dns zones list` shows the org's zones (--org ORG for another org)"
        if records is not None and exc.code == "bad_request":
            _name_the_record(exc, details, records, rtype)
        raise


def _name_the_record(exc: ApiError, details: dict[str, Any], records: list[str], rtype: str | None) -> None:
    errors = details.get("errors")
    first = errors[0] if isinstance(errors, list) and errors and isinstance(errors[0], dict) else {}
    field = str(first.get("field", ""))
    prefix, _, index = field.partition(".")
    if prefix != "records" or not index.isdigit() or int(index) >= len(records) or not exc.message.startswith(field):
        return
    given = records[int(index)]
    text = given if len(given) <= 60 else given[:57] + "..."
    exc.message = f"The record {text!r}{exc.message[len(field):]}"
    if rtype in _SEVERAL_WORDS and not any(ch.isspace() for ch in given) and len(records) > 1:
        # `records set ZONE @ MX 10 mail` unquoted: two records, "10" and "mail".
        exc.hint = f'quote each record as one argument, such as: {_SEVERAL_WORDS[rtype]}'


# Types whose every record has several words: a one-word record of them was likely split by the shell.
_SEVERAL_WORDS = {"MX": '"10 mail"', "SRV": '"10 60 5060 sip.example.com."', "CAA": '\'0 issue "letsencrypt.org"\''}


def _confirm(zone: str, yes: bool, question: str) -> None:
    if yes:
        return
    typed = output.ask(question)
    if shown(typed.strip()).lower() != shown(zone).lower():
        raise CliError("The name you typed does not match; nothing was changed", "confirm_mismatch")


def _rows(rrsets: list[dict[str, Any]]) -> list[list[Any]]:
    """One table row per record: the set's name, type, TTL and lock on its first row only; the apex first."""
    rows: list[list[Any]] = []
    for rrset in sorted(rrsets, key=lambda r: (r.get("name") != "@", str(r.get("name")), str(r.get("type")))):
        # "system": the SOA and apex NS; "project": a custom hostname's record (docs/dns.md).
        lock = f"locked ({rrset['managed_by']})" if rrset.get("managed_by") else ""
        records = [str(r) for r in rrset.get("records") or []] or [""]
        for i, record in enumerate(records):
            first = i == 0
            rows.append([rrset.get("name") if first else "", rrset.get("type") if first else "",
                         rrset.get("ttl") if first else "", record, lock if first else ""])
    return rows


def _records_table(rrsets: list[dict[str, Any]], empty: str) -> Any:
    return output.table(["NAME", "TYPE", "TTL", "RECORDS", "MANAGED"], _rows(rrsets), empty=empty,
                        shrink={"RECORDS": 24, "NAME": 12}, optional=["MANAGED"])


# --- zones ---

@zones_app.command("list")
def list_zones(ctx: typer.Context, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """List an org's zones with their DNSSEC state."""
    with Api.for_context(ctx) as api, explained():
        slug = _org(api, org)
        data = api.get(_zones_path(slug))

    def render(c: Console) -> None:
        zones = data.get("zones") or []
        # A domain bought through svc: where its DS stands at the registrar (a column only when one is).
        bought = any(z.get("registrarDs") for z in zones)
        rows = ([shown(z.get("name")), _delegated(z), z.get("dnssec"), len(z.get("ds") or []),
                 *([z.get("registrarDs") or "by its owner"] if bought else []),
                 ", ".join(shown(n) for n in z.get("nameservers") or []), output.when(z.get("createdAt"))]
                for z in zones)
        columns = ["ZONE", "DELEGATED", "DNSSEC", "DS RECORDED", *(["DS AT REGISTRAR"] if bought else []),
                   "NAMESERVERS", "CREATED"]
        c.print(output.table(columns, rows, empty=f"No DNS zones in {slug}.", shrink={"NAMESERVERS": 16},
                             optional=["DS RECORDED", "DS AT REGISTRAR"]))

    output.emit(as_json, data, render)


def _delegated(zone: dict[str, Any]) -> str:
    return {True: "yes", False: "no"}.get(zone.get("delegated"), "not checked")  # type: ignore[arg-type]


def _delegation_line(zone: dict[str, Any]) -> str:
    name = shown(zone.get("name"))
    if zone.get("delegated"):
        return f"{name} is delegated to svc's nameservers: its records are the public DNS's answers."
    seen = zone.get("delegationSeen")
    if zone.get("delegated") is None:
        return f"{name}: the public DNS has not been asked yet whether it delegates the zone to svc."
    return (f"{name} is not delegated to svc's nameservers yet{': ' + seen if seen else ''}. Until it is, the zone "
            "proves no name in it is yours.")


@zones_app.command("check")
def check_zone(ctx: typer.Context, zone: ZoneArg, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Ask the public DNS now whether it delegates the zone to svc's nameservers (members; svc also
    checks by itself every few minutes)."""
    with Api.for_context(ctx) as api, explained():
        slug = _org(api, org)
        data = api.post(f"{_zone_path(slug, zone)}/delegation")
    output.emit_line(as_json, data, _delegation_line(data))
    if not as_json and not data.get("delegated"):
        output.say("Set the nameservers (NS) at your registrar to: " +
                   ", ".join(shown(n) for n in data.get("nameservers") or []))


@zones_app.command("create")
def create_zone(ctx: typer.Context,
                name: Annotated[str, typer.Argument(metavar="NAME", help="The domain, such as example.com "
                                                    "(internationalized names are stored as punycode).")],
                org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Create a zone (admins), then print the nameservers to set at your registrar. Creating it again is fine."""
    with Api.for_context(ctx) as api, explained():
        slug = _org(api, org)
        zone = api.post(_zones_path(slug), {"name": name})
    if as_json:
        output.print_json(zone)
        return
    zone_name = shown(zone.get("name"))
    spelled = unicode_name(zone_name)
    output.emit_line(False, zone, "Zone ", (zone_name, "bold"), f" ({spelled})" if spelled != zone_name else "",
                     f" is on svc's nameservers (org {slug}).")
    output.say(f"To delegate it, set the nameservers (NS) of {zone_name} at your registrar to:")
    for ns in zone.get("nameservers") or []:
        output.say(f"  {shown(ns)}")
    if not zone.get("delegated"):
        output.say("Until then the zone proves no name in it is yours; svc checks the public DNS every few minutes, "
                   f"or now with: {_command(slug, 'zones', 'check', zone_name)}")
    output.say(f"Add records with: {_command(slug, 'records', 'set', zone_name, 'www', 'A', '192.0.2.1')}")


@zones_app.command("delete")
def delete_zone(ctx: typer.Context, zone: ZoneArg, org: OrgOption = None,
                yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask to type the zone's name "
                                                  "(for scripts).")] = False,
                as_json: JsonFlag = False) -> None:
    """Delete a zone and all its records (admins); the nameserver stops answering for it. Asks you to
    type the zone's name unless --yes. Move the delegation (NS at the registrar) away first."""
    with Api.for_context(ctx) as api, explained():
        slug = _org(api, org)
        _confirm(zone, yes, f"This deletes the zone {shown(zone)!r} of {slug} with all its records; the nameserver "
                            "stops answering for it. Type its name to confirm: ")
        api.delete(_zone_path(slug, zone))
    output.emit_line(as_json, {"deleted": True, "org": slug, "zone": zone}, "Deleted zone ", (shown(zone), "bold"),
                     "; the nameserver stops answering for it within a moment.")


# --- records ---

@records_app.command("list")
def list_records(ctx: typer.Context, zone: ZoneArg,
                 rtype: Annotated[str | None, typer.Option("--type", "-t", metavar="TYPE",
                                                           help="Only record sets of this type.")] = None,
                 name: Annotated[str | None, typer.Option("--name", "-n", metavar="NAME",
                                                          help='Only record sets of this name ("www", "@").')] = None,
                 org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """List a zone's record sets: name, type, TTL and records, one per line (the SOA and apex NS are locked).

    With --json: the zone as the API gives it (rrsets filtered by --type and --name)."""
    with Api.for_context(ctx) as api, explained():
        slug = _org(api, org)
        data = api.get(_zone_path(slug, zone))
    rrsets = [r for r in data.get("rrsets") or [] if isinstance(r, dict)]
    if rtype is not None:
        want_type = rtype.strip().upper()
        rrsets = [r for r in rrsets if str(r.get("type")) == want_type]
    if name is not None:
        want_name = relative_name(name, str(data.get("name") or zone))
        rrsets = [r for r in rrsets if str(r.get("name")).lower() == want_name]
    data["rrsets"] = rrsets
    zone_name = shown(data.get("name"))
    filtered = " matching" if rtype is not None or name is not None else ""
    output.emit(as_json, data, lambda c: c.print(_records_table(rrsets, f"No record sets{filtered} in {zone_name}.")))


def _read_records(source: str) -> list[str]:
    """One record per line, zone-file style: blank lines and lines starting with ; are skipped."""
    if source == "-":
        raw = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
        where = "standard input"
    else:
        path = Path(source).expanduser()
        if not path.is_file():
            raise CliError(f"{source} is not a file", "file_not_found")
        with path.open("rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
        where = source
    if len(raw) > MAX_FILE_BYTES:
        raise CliError(f"{where} holds over {MAX_FILE_BYTES:,} bytes of records", "value_too_large")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise CliError(f"{where} is not UTF-8 text", "bad_value") from None
    lines = [line.strip() for line in text.splitlines()]
    return [line for line in lines if line and not line.startswith(";")]


@records_app.command("set")
def set_records(
    ctx: typer.Context, zone: ZoneArg, name: NameArg, rtype: TypeArg,
    records: Annotated[list[str] | None, typer.Argument(
        metavar="RECORD", help='The whole new content of the set, one argument per record, in zone-file text: '
        '192.0.2.1 | "10 mail" | "v=spf1 -all" | "0 issue letsencrypt.org" (quote each one).')] = None,
    ttl: Annotated[int | None, typer.Option("--ttl", metavar="SECONDS",
                                            help="60 to 86400 (default: the set's current TTL, else 3600).")] = None,
    file: Annotated[str | None, typer.Option("--file", "-f", metavar="FILE",
                                             help="Read the records from FILE (- for standard input), one per line; "
                                             "blank lines and ; comments are skipped.")] = None,
    org: OrgOption = None, as_json: JsonFlag = False,
) -> None:
    """Set a record set: it becomes exactly these records (members). `svc dns records delete` removes one."""
    rtype = record_type(rtype)
    if records and file is not None:
        raise typer.BadParameter("give the records as arguments or with --file, not both", param_hint="RECORD")
    given = list(records or []) if file is None else _read_records(file)
    if not given:
        raise CliError("No records given: name at least one (a set is never empty; `svc dns records delete` "
                       "removes it)", "no_records")
    body: dict[str, Any] = {"records": given}
    if ttl is not None:
        body["ttl"] = ttl
    with Api.for_context(ctx) as api, explained(given, rtype):
        slug = _org(api, org)
        rrset = api.put(_rrset_path(slug, zone, name, rtype), body)
    if as_json:
        output.print_json(rrset)
        return
    output.out().print(_records_table([rrset], ""))
    count = len(rrset.get("records") or [])
    output.say(f"Stored {count} {rrset.get('type')} record{'s' if count != 1 else ''} at {rrset.get('name')} in "
               f"{shown(zone)} (TTL {rrset.get('ttl')}); the nameserver answers with "
               f"{'them' if count != 1 else 'it'} within a moment.")


@records_app.command("delete")
def delete_records(ctx: typer.Context, zone: ZoneArg, name: NameArg, rtype: TypeArg, org: OrgOption = None,
                   as_json: JsonFlag = False) -> None:
    """Delete a record set: every record of that name and type (members)."""
    rtype = record_type(rtype)
    with Api.for_context(ctx) as api, explained():
        slug = _org(api, org)
        api.delete(_rrset_path(slug, zone, name, rtype))
    output.emit_line(as_json, {"deleted": True, "org": slug, "zone": zone, "name": name, "type": rtype},
                     "Deleted the ", (f"{name} {rtype}", "bold"), f" records of {shown(zone)}; the nameserver "
                     "stops answering them within a moment.")


# --- DNSSEC ---

# A domain bought through svc: where its DS stands at the registrar (the zone's registrarDs), in words.
REGISTRAR_DS = {
    "none": "none at the registrar",
    "sending": "svc is sending it to the registrar",
    "sent": "the registrar holds it; the parent does not serve it yet",
    "published": "the parent serves it: DNSSEC is active",
    "removing": "svc is removing it at the registrar; the zone stays signed meanwhile",
    "withdrawn": "removed at the registrar; the zone stays signed until the parent stops serving it",
}


def _print_ds(org: str, zone: str, ds_records: list[str], registrar_ds: str | None = None) -> None:
    """The DS lines on stdout (nothing else: `svc dns dnssec ds ZONE > ds.txt`), what to do on stderr."""
    if registrar_ds is not None:
        output.note(f"The DS records of {zone}: svc bought it, so svc sends them to the registrar itself "
                    f"({REGISTRAR_DS.get(registrar_ds, registrar_ds)}; `{_command(org, 'zones', 'list')}` "
                    "shows when the parent serves them). Nothing to register.")
    else:
        output.note(f"The DS records of {zone}: register them at your registrar (the parent zone), then record "
                    "them with: " + _command(org, "dnssec", "ds", zone, '"<DS>"'))
    for line in ds_records:
        output.say(line)
    for line in ds_records:
        parts = line.split()
        if len(parts) >= 4:
            output.note(f"  key tag {parts[0]}, algorithm {parts[1]}{_ALGORITHMS.get(parts[1], '')}, digest type "
                        f"{parts[2]}{' (SHA-256)' if parts[2] == '2' else ''}")


_ALGORITHMS = {"8": " (RSASHA256)", "10": " (RSASHA512)", "13": " (ECDSAP256SHA256)", "14": " (ECDSAP384SHA384)",
               "15": " (ED25519)"}


def _wait_for_ds(api: Api, slug: str, zone: str, timeout: float) -> dict[str, Any]:
    """Poll the zone until the nameserver has signed it (its DS records exist), with a spinner."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn  # only when needed

    deadline = time.monotonic() + timeout
    columns = (SpinnerColumn(), TextColumn("{task.description}", markup=False), TimeElapsedColumn())
    with Progress(*columns, console=output.err(), transient=True) as progress:
        progress.add_task(f"Waiting for the nameserver to sign {shown(zone)}", total=None)
        while True:
            detail: dict[str, Any] = api.get(_zone_path(slug, zone))
            sending = detail.get("registrarDs") == "sending"  # a bought domain: until the registrar holds the DS
            if (detail.get("dsRecords") and not sending) or detail.get("dnssec") == "off":
                return detail
            if time.monotonic() >= deadline:
                raise CliError(f"The nameserver has not signed {shown(zone)} after {timeout:g} s", "timeout",
                               hint=f"it goes on in the background: {_command(slug, 'dnssec', 'ds', shown(zone))} "
                                    "shows the DS once it has")
            time.sleep(POLL_SECONDS)


@dnssec_app.command("on")
def dnssec_on(ctx: typer.Context, zone: ZoneArg, org: OrgOption = None,
              wait: Annotated[bool, typer.Option("--wait", help="Wait until the zone is signed, then print its DS "
                                                 "records.")] = False,
              timeout: Annotated[float, typer.Option(min=1, metavar="SECONDS", help="Seconds to wait.")] = 120,
              as_json: JsonFlag = False) -> None:
    """Turn DNSSEC on (admins): the nameserver makes the keys and signs the zone (svc never holds a key)."""
    with Api.for_context(ctx) as api, explained():
        slug = _org(api, org)
        data = api.post(f"{_zone_path(slug, zone)}/dnssec", {"enabled": True})
        if wait:
            data = _wait_for_ds(api, slug, zone, timeout)
    if as_json:
        output.print_json(data)
        return
    name = shown(data.get("name"))
    output.emit_line(False, data, "DNSSEC is on for ", (name, "bold"), f" ({data.get('dnssec')}): the nameserver "
                     "signs the zone.")
    registrar_ds = data.get("registrarDs")
    if wait and data.get("dsRecords"):
        _print_ds(slug, name, [str(d) for d in data["dsRecords"]], registrar_ds)
    elif registrar_ds is not None:
        output.say(f"svc bought {name}, so it sends the DS records to the registrar itself "
                   f"({REGISTRAR_DS.get(registrar_ds, registrar_ds)}): nothing to register. "
                   f"`{_command(slug, 'zones', 'list')}` shows when the parent serves them.")
    else:
        output.say(f"Next: {_command(slug, 'dnssec', 'ds', name)} prints the DS records to register at your "
                   "registrar.")


@dnssec_app.command("off")
def dnssec_off(ctx: typer.Context, zone: ZoneArg, org: OrgOption = None, as_json: JsonFlag = False) -> None:
    """Turn DNSSEC off (admins): the nameserver stops signing and drops the keys; the recorded DS are deleted."""
    with Api.for_context(ctx) as api, explained():
        slug = _org(api, org)
        data = api.post(f"{_zone_path(slug, zone)}/dnssec", {"enabled": False})
    output.emit_line(as_json, data, "DNSSEC is off for ", (shown(data.get("name")), "bold"),
                     "; any recorded DS records were deleted.")
    registrar_ds = data.get("registrarDs")
    if not as_json and registrar_ds is not None:
        output.note(f"svc removes the DS at the registrar first ({REGISTRAR_DS.get(registrar_ds, registrar_ds)}), "
                    "then the nameserver stops signing: a DS left at the parent over an unsigned zone would break it.")
    elif not as_json:
        output.note("If the parent zone still has DS records for it, remove them at your registrar: validating "
                    "resolvers refuse an unsigned zone while its parent has a DS.")


def _ds_arguments(values: list[str]) -> list[str]:
    """Each argument is one DS record ("12345 13 2 ABCD..."); one record pasted unquoted (four or
    more words, none holding a space: "12345 13 2 ABCD...") is read as one record, since no DS
    record is a single word."""
    if len(values) >= 4 and not any(any(ch.isspace() for ch in v) for v in values) and values[0].isdigit():
        return [" ".join(values)]
    return values


@dnssec_app.command("ds")
def dnssec_ds(
    ctx: typer.Context, zone: ZoneArg,
    ds: Annotated[list[str] | None, typer.Argument(
        metavar="DS", help='DS records registered at the parent, each quoted: "12345 13 2 ABCD...". Without '
        "any: print the DS records to register.")] = None,
    clear: Annotated[bool, typer.Option("--clear", help="Record that no DS is registered at the parent.")] = False,
    org: OrgOption = None, as_json: JsonFlag = False,
) -> None:
    """Without DS: print the DS records the nameserver computed, to register at your registrar. With DS
    (or --clear): record what you registered at the parent (admins); svc does not query the parent."""
    if ds and clear:
        raise typer.BadParameter("give DS records or --clear, not both", param_hint="DS")
    with Api.for_context(ctx) as api, explained():
        slug = _org(api, org)
        if ds or clear:
            records = _ds_arguments(list(ds or []))
            data = api.put(f"{_zone_path(slug, zone)}/dnssec/ds", {"ds": records})
        else:
            data = api.get(_zone_path(slug, zone))
    if ds or clear:
        count = len(data.get("ds") or [])
        output.emit_line(as_json, data, f"Recorded {count} DS record{'s' if count != 1 else ''} for ",
                         (shown(data.get("name")), "bold"), f"; DNSSEC is {data.get('dnssec')}.")
        return
    _show_computed_ds(slug, data, as_json)


def _show_computed_ds(org: str, data: dict[str, Any], as_json: bool) -> None:
    name = shown(data.get("name"))
    if data.get("dnssec") == "off":
        raise CliError(f"DNSSEC is off for {name}: there are no DS records", "dnssec_off",
                       hint=f"turn it on first: {_command(org, 'dnssec', 'on', name)}")
    computed = data.get("dsRecords")
    if computed is None:
        raise CliError(f"The nameserver could not be asked for the DS records of {name}", "nameserver_unavailable",
                       hint="the server keeps the zone and signs it once its nameserver is back; try again later")
    if not computed:
        raise CliError(f"The nameserver has not signed {name} yet", "not_signed_yet",
                       hint=f"it follows within a moment: try again, or {_command(org, 'dnssec', 'on', name)} --wait")
    if as_json:
        output.print_json(data)
        return
    _print_ds(org, name, [str(d) for d in computed], data.get("registrarDs"))
    recorded = data.get("ds") or []
    output.note(f"DNSSEC is {data.get('dnssec')}; DS recorded at the parent: "
                f"{len(recorded) if recorded else 'none yet'}.")

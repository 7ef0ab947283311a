"""`svc --version`, help that reads naturally, and what a command loads when it starts (the start-up
figures themselves are in docs/cli.md; these tests keep the heavy imports from coming back)."""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path

from tests.cli.conftest import SVC, Cli, clean_env, uniq
from tests.support.ports import free_port


def test_version_prints_the_installed_package_version() -> None:
    p = subprocess.run([SVC, "--version"], capture_output=True, text=True, timeout=60, env=clean_env())
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"svc {importlib.metadata.version('svc')}\n"
    assert p.stdout == "svc 0.1.0\n"


def test_deploy_help_has_no_type_labels() -> None:
    p = subprocess.run([SVC, "deploy", "--help"], capture_output=True, text=True, timeout=60, env=clean_env())
    assert p.returncode == 0, p.stderr
    assert "Usage: svc deploy [OPTIONS] [DIR]" in p.stdout
    assert re.search(r"-p, --project NAME\s", p.stdout) and re.search(r"--org ORG\s", p.stdout)
    for label in ("<bool>", "<str>", "<path>", "{DIR}"):
        assert label not in p.stdout


_EVERY_HELP = """
import sys
from svc.cli import main
from svc.cli.plain import command_of
command = command_of(main.build([*main.VERBS, *main.groups()]))

def walk(cmd, path):
    ctx = cmd.make_context(" ".join(path), [], resilient_parsing=True)
    yield " ".join(path), cmd.get_help(ctx)
    for name, sub in getattr(cmd, "commands", {}).items():
        yield from walk(sub, [*path, name])

import json
print(json.dumps(dict(walk(command, ["svc"]))))
"""


def test_no_help_text_shows_a_type_label() -> None:
    """Every command and group, in one process (`svc serve --help` is the server's, not checked here)."""
    p = subprocess.run([sys.executable, "-c", _EVERY_HELP], capture_output=True, text=True, timeout=60,
                       env=clean_env())
    assert p.returncode == 0, p.stderr
    helps: dict[str, str] = json.loads(p.stdout)
    assert len(helps) > 40 and "svc projects delete" in helps and "svc access bypass new" in helps
    for name, text in helps.items():
        assert not re.search(r"<(bool|str|int|float|path|float range|int range)\b[^>]*>|\{[A-Z_]+\}", text), \
            f"{name}:\n{text}"
    assert "Usage: svc projects delete [OPTIONS] NAME\n" in helps["svc projects delete"]
    assert re.search(r"--timeout SECONDS\s", helps["svc projects delete"])
    assert re.search(r"--role ROLE\s+The role to give: viewer, member or admin", helps["svc members add"])


_SAME_PARAMETERS = """
import json, re, typer
from svc.cli import main, plain
from svc.operator import admin

def params(cmd, path, out):
    found = [*cmd.params, cmd.get_help_option(cmd.context_class(cmd))]
    out[" ".join(path)] = [(type(p).__name__, {k: re.sub(" at 0x[0-9a-f]+", "", repr(v)) for k, v in vars(p).items()})
                           for p in found if p is not None]
    for name, sub in getattr(cmd, "commands", {}).items():
        params(sub, [*path, name], out)
    return out

apps = {"svc": main.build([*main.VERBS, *main.groups()]), "svc admin": admin.app}
server = typer.Typer(add_completion=False)
server.command()(__import__("svc.operator.serve", fromlist=["serve"]).serve)
apps["svc serve"] = server
print(json.dumps({name: [params(typer.main.get_command(app), [name], {}),
                         params(plain.command_of(app), [name], {})] for name, app in apps.items()}))
"""


def test_plain_parameters_hold_what_typer_made() -> None:
    """Every parameter of every command (the server's too) rebuilt as a PlainArgument/PlainOption
    holds every value typer's own held, its placeholder aside: nothing typer sets is lost."""
    p = subprocess.run([sys.executable, "-c", _SAME_PARAMETERS], capture_output=True, text=True, timeout=120,
                       env=clean_env())
    assert p.returncode == 0, p.stderr
    apps = json.loads(p.stdout)
    assert set(apps) == {"svc", "svc admin", "svc serve"}
    checked = 0
    for typers, plains in apps.values():
        assert typers.keys() == plains.keys()
        for path, made in typers.items():
            rebuilt = plains[path]
            assert [kind for kind, _ in made] == [kind.replace("Plain", "Typer") for kind, _ in rebuilt], path
            for (_, before), (_, after) in zip(made, rebuilt, strict=True):
                assert {k: v for k, v in before.items() if k != "metavar"} == \
                       {k: v for k, v in after.items() if k != "metavar"}, path
                checked += 1
    assert checked > 300


_LOADED = """
import sys
sys.argv = ["svc", *sys.argv[1:]]
from svc.entry import main
try:
    main()
except SystemExit:
    pass
packages = {"httpx", "rich", "pydantic", "platformdirs", "fastapi", "sqlalchemy", "uvicorn"}
server = ("svc.app", "svc.db", "svc.domains", "svc.models", "svc.settings", "svc.operator.serve", "svc.cli.loopback")
loaded = list(sys.modules)
found = {m.split(".")[0] for m in loaded if m.split(".")[0] in packages}
found |= {s for s in server for m in loaded if m == s or m.startswith(s + ".")}
found |= {"http.client"} & set(loaded)  # the client's HTTP, loaded only to send a request
print("loaded:", *sorted(found), file=sys.__stderr__)
"""


def _loaded(*args: str, env: dict[str, str] | None = None) -> set[str]:
    """The heavy modules a run of `svc ARGS` loaded (it runs in a child Python, like the console script)."""
    p = subprocess.run([sys.executable, "-c", _LOADED, *args], capture_output=True, text=True, timeout=60,
                       env=env or clean_env())
    line = p.stderr.strip().splitlines()[-1]
    assert line.startswith("loaded:"), p.stderr
    return set(line.split()[1:])


def test_help_loads_no_http_client_no_rich_and_no_server() -> None:
    assert _loaded("--help") == set()
    assert _loaded("deploy", "--help") == set()
    assert _loaded("--version") == set()


def test_whoami_loads_nothing_heavy(tmp_path: Path) -> None:
    env = clean_env() | {"XDG_CONFIG_HOME": str(tmp_path), "SVC_API_URL": f"http://127.0.0.1:{free_port()}"}
    assert _loaded("whoami", env=env) == {"http.client"}  # nothing answers: an error line, no Rich, no httpx
    assert _loaded("whoami", "--json", env=env | {"SVC_TOKEN": "t"}) == {"http.client"}


def test_whoami_against_the_server(cli: Cli) -> None:
    """Signed in: the JSON answer needs no Rich; the table for people does, and nothing else heavy
    (the client speaks HTTP with the standard library's http.client, never httpx)."""
    cli.login(uniq("fast"))
    assert _loaded("whoami", "--json", env=cli.env()) == {"http.client"}
    assert _loaded("whoami", env=cli.env()) == {"http.client", "rich"}

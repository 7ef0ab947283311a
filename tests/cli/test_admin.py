"""`svc admin plan`: an operator moves an org between plans on the server itself (no billing
provider), against the same store a running `svc serve` uses; the limits follow at once."""

from __future__ import annotations

from pathlib import Path

from tests.cli.conftest import Cli, Result, clean_env, run_in_process, running_server


def _admin(data_dir: Path, *args: str) -> Result:
    return run_in_process(["admin", *args], clean_env() | {"SVC_DATA_DIR": str(data_dir)})


def test_an_operator_moves_an_org_to_pro_and_back(tmp_path: Path) -> None:
    (tmp_path / "server").mkdir()
    with running_server(tmp_path / "server") as url:
        data = tmp_path / "server" / "data"
        cli = Cli(url, tmp_path / "alice")
        cli.login("alice")
        cli.ok("orgs", "create", "acme")
        for name in ("one", "two", "three"):
            cli.ok("projects", "create", name, "--org", "acme")
        cli.fails("project_limit", "projects", "create", "four", "--org", "acme")

        moved = _admin(data, "plan", "acme", "pro", "--json")
        assert moved.code == 0, moved.err
        assert moved.json() | {"role": "admin"} == moved.json()
        assert (moved.json()["plan"], moved.json()["projectLimit"]) == ("pro", 100)
        cli.ok("projects", "create", "four", "--org", "acme")
        [acme] = [o for o in cli.ok("orgs", "list", "--json").json()["orgs"] if o["slug"] == "acme"]
        assert acme["plan"] == "pro"

        back = _admin(data, "plan", "acme", "free")
        assert back.code == 0 and "acme is on the free plan: up to 3 projects." in back.out
        cli.fails("project_limit", "projects", "create", "five", "--org", "acme")

        unknown = _admin(data, "plan", "nope", "pro")
        assert unknown.code == 1 and unknown.error_code() == "not_found" and unknown.out == ""
        wrong = _admin(data, "plan", "acme", "gold")
        assert wrong.code == 2 and "gold" in wrong.err

"""What a hostile key holder sends the SSH server instead of a git command (issue 42's probe): a
shell, other programs, shell syntax after the git command, paths that climb out of the repository
root or into another org's. Each is refused in words and leaves no trace on the machine."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.repos.conftest import Git, Served
from tests.repos.test_ssh import ssh_key


async def _ssh(key: Path, port: int, *command: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        "ssh", "-i", str(key), "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=no",
        "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-o", "BatchMode=yes", "-T",
        "-p", str(port), "git@127.0.0.1", *command,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    return process.returncode or 0, (out + err).decode(errors="replace")


async def test_nothing_but_git_on_ones_own_repositories_runs(ssh_served: Served, git: Git, tmp_path: Path) -> None:
    svc = ssh_served.svc
    port = (await svc.anon.get("/v1/config")).json()["sshPort"]
    alice, eve = await svc.login("alice"), await svc.login("eve")
    for user, org in ((alice, "team"), (eve, "evil")):
        assert (await user.client.post("/v1/orgs", json={"slug": org, "name": org})).status_code == 201
        assert (await user.client.post(f"/v1/orgs/{org}/projects", json={"name": "web"})).status_code == 201
        r = await user.client.post(f"/v1/orgs/{org}/projects/web/repos", json={"name": "site"})
        assert r.status_code == 201, r.text
    key = tmp_path / "eve_key"
    r = await eve.client.post("/v1/me/ssh-keys", json={"name": "eve", "publicKey": await ssh_key(key)})
    assert r.status_code == 201, r.text
    # Her own repository answers (an empty one's advertisement, then git waits for a client that
    # has nothing to say): the key works, so every refusal below is the rule's.
    code, said = await _ssh(key, port, "git-upload-pack 'evil/web/site.git'")
    assert said.startswith("0000"), said

    marker = tmp_path / "escaped"
    attempts = [
        (), ("sh",), ("/bin/sh", "-c", f"touch {marker}"), (f"touch {marker}",), ("ls", "/"),
        (f"git-upload-pack 'evil/web/site.git'; touch {marker}",),
        (f"git-upload-pack 'evil/web/site.git' && touch {marker}",),
        (f"git-upload-pack \"$(touch {marker})\"",), (f"git-upload-pack `touch {marker}`",),
        ("git-upload-pack 'evil/web/site.git' | cat",),
        ("git-upload-pack '../../team/web/site.git'",), ("git-upload-pack 'evil/web/../../team/web/site.git'",),
        ("git-upload-pack '/etc'",), ("git-upload-pack 'team/web/site.git'",),
        ("git-receive-pack 'team/web/site.git'",), ("git-upload-archive 'evil/web/site.git'",),
        ("git upload-pack --help",), ("git -c core.sshCommand=sh upload-pack 'evil/web/site.git'",),
        ("git-upload-pack --upload-pack=touch 'evil/web/site.git'",),
    ]
    for attempt in attempts:
        code, said = await _ssh(key, port, *attempt)
        assert code != 0 and not said.startswith("0000"), (attempt, said)
        assert said.strip(), (attempt, "refused without a word")
        assert "team" not in said.replace("team/web/site.git", ""), (attempt, said)
    assert not marker.exists()

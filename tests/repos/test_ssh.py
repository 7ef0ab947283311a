"""Git over SSH through svc: a key registered with the API clones and pushes (and deploys), the same
rule as HTTPS decides who may do what, a deleted key stops at once, and the port is in /v1/config."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.access.helpers import add_member
from tests.repos.conftest import Git, Served


async def ssh_key(path: Path) -> str:
    """A key pair made by ssh-keygen; the public key's line."""
    made = await asyncio.create_subprocess_exec("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test", "-f",
                                                str(path), stdout=asyncio.subprocess.DEVNULL)
    assert await made.wait() == 0
    return Path(f"{path}.pub").read_text().strip()


def over_ssh(key: Path) -> dict[str, str]:
    return {"GIT_SSH_COMMAND": f"ssh -i {key} -o IdentitiesOnly=yes -o StrictHostKeyChecking=no "
                               f"-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"}


async def test_clone_and_push_over_ssh(ssh_served: Served, git: Git, tmp_path: Path) -> None:
    svc = ssh_served.svc
    config = (await svc.anon.get("/v1/config")).json()
    assert isinstance(config["sshPort"], int)
    alice, carol = await svc.login("alice"), await svc.login("carol")
    assert (await alice.client.post("/v1/orgs", json={"slug": "team", "name": "Team"})).status_code == 201
    await add_member(alice, "team", carol, "viewer")
    assert (await alice.client.post("/v1/orgs/team/projects", json={"name": "web"})).status_code == 201
    repo = (await alice.client.post("/v1/orgs/team/projects/web/repos", json={"name": "site"})).json()
    assert repo["sshUrl"] == f"ssh://git@127.0.0.1:{config['sshPort']}/team/web/site.git"
    url = repo["sshUrl"]

    alice_key = tmp_path / "alice_key"
    r = await alice.client.post("/v1/me/ssh-keys", json={"name": "laptop", "publicKey": await ssh_key(alice_key)})
    assert r.status_code == 201, r.text
    key_id = r.json()["id"]
    work = await git.site(tmp_path / "work")
    pushed = await git("push", url, "main", cwd=work, env=over_ssh(alice_key))
    assert "as version 1" in pushed.err
    updates = (await alice.client.get("/v1/orgs/team/projects/web/repos/site/ref-updates")).json()["updates"]
    assert updates[0]["transport"] == "ssh"
    await git("clone", "-q", url, str(tmp_path / "copy"), env=over_ssh(alice_key))
    assert (tmp_path / "copy" / "svc.json").exists()

    # A viewer's key clones, but does not push.
    carol_key = tmp_path / "carol_key"
    assert (await carol.client.post("/v1/me/ssh-keys", json={"name": "c", "publicKey": await ssh_key(carol_key)})
            ).status_code == 201
    await git("clone", "-q", url, str(tmp_path / "carol"), env=over_ssh(carol_key))
    refused = await git("push", url, "main:other", cwd=work, env=over_ssh(carol_key), ok=False)
    assert refused.code != 0 and "member role" in refused.said
    missing = await git("clone", url.replace("/site.git", "/nope.git"), str(tmp_path / "nope"),
                        env=over_ssh(alice_key), ok=False)
    assert missing.code != 0 and "not found" in missing.said.lower()

    # Deleted: refused at the next connection.
    assert (await alice.client.delete(f"/v1/me/ssh-keys/{key_id}")).status_code == 204
    gone = await git("ls-remote", url, env=over_ssh(alice_key), ok=False)
    assert gone.code != 0 and "Permission denied" in gone.said

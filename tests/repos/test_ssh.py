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


async def test_svcs_rule_over_ssh_outsiders_public_and_other_orgs(ssh_served: Served, git: Git,
                                                                 tmp_path: Path) -> None:
    """svc's own rule (repos/authorize.py, through the gate and the real SSH server, not a stub):
    an outsider's key learns nothing of a private repository and cannot push to a public one it
    clones; a member's key reaches its org's projects and no other org's."""
    svc = ssh_served.svc
    alice, dave = await svc.login("alice"), await svc.login("dave")
    assert (await alice.client.post("/v1/orgs", json={"slug": "team", "name": "Team"})).status_code == 201
    for project in ("web", "api"):
        assert (await alice.client.post("/v1/orgs/team/projects", json={"name": project})).status_code == 201
    site = (await alice.client.post("/v1/orgs/team/projects/web/repos", json={"name": "site"})).json()["sshUrl"]
    code = (await alice.client.post("/v1/orgs/team/projects/api/repos", json={"name": "code"})).json()["sshUrl"]
    keys = {}
    for name, user in (("alice", alice), ("dave", dave)):
        keys[name] = tmp_path / f"{name}_key"
        r = await user.client.post("/v1/me/ssh-keys", json={"name": name, "publicKey": await ssh_key(keys[name])})
        assert r.status_code == 201, r.text
    work = await git.site(tmp_path / "work")
    await git("push", site, "main", cwd=work, env=over_ssh(keys["alice"]))
    await git("push", code, "main", cwd=work, env=over_ssh(keys["alice"]))  # another project of her org

    # Dave, in no org of these: a private repository is not found, whatever he tries.
    for verb in (["clone", site, str(tmp_path / "dave")], ["ls-remote", site], ["push", site, "main:dave"]):
        refused = await git(*verb, cwd=work, env=over_ssh(keys["dave"]), ok=False)
        assert refused.code != 0 and "Repository not found" in refused.said, refused.said
    # Dave's own org's path does not lead to Alice's repository either.
    dave_org = dave.personal_org
    refused = await git("ls-remote", site.replace("/team/", f"/{dave_org}/"), env=over_ssh(keys["dave"]), ok=False)
    assert refused.code != 0 and "Repository not found" in refused.said

    # Public: Dave's key clones it, and still cannot push; the other project's stays private.
    assert (await alice.client.patch("/v1/orgs/team/projects/web/repos/site",
                                     json={"visibility": "public"})).status_code == 204
    await git("clone", "-q", site, str(tmp_path / "dave-public"), env=over_ssh(keys["dave"]))
    assert (tmp_path / "dave-public" / "svc.json").exists()
    pushed = await git("push", site, "main:dave", cwd=work, env=over_ssh(keys["dave"]), ok=False)
    assert pushed.code != 0 and "Repository not found" in pushed.said
    hidden = await git("ls-remote", code, env=over_ssh(keys["dave"]), ok=False)
    assert hidden.code != 0 and "Repository not found" in hidden.said
    refs = (await git("ls-remote", site, env=over_ssh(keys["alice"]))).out
    assert "refs/heads/dave" not in refs and "refs/heads/main" in refs

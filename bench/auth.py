"""End-user auth on a project's host (issue 48): what the auth service and the signed-in user cost.

    .venv/bin/python bench/auth.py [--duration 5] [--rounds 3]

A real `svc serve` (SQLite store, dev login, its edge, its worker runtime, a private PostgreSQL
cluster for the project's database, and its own fake social providers: SVC_AUTH_FAKE) on a fresh
data dir; one project with a hello worker and a static file, granted auth, GitHub set up; one end
user signed in through the fake (the real round trip, walked with httpx). Then `wrk -c32` on core 1,
the targets alternated over the rounds (each ratio: the median of the rounds' ratios):

1. `GET /__svc/auth/session` with the browser's two cookies (the edge answers from the signed
   svc_auth_user cookie) against the edge's static file path (`/static.txt`), same run. Goal:
   >= 0.3x. Also printed: the same with the session cookie only (`session_api`: the edge asks the
   auth service, which renews the user cookie; its session lookups are kept 5 s per process).
2. `GET /hello` to the worker signed in (the session and svc_auth_user cookies: the edge checks
   the signed cookie and sets Svc-Auth-User) against the same request anonymous. Goal: the
   signed-in one costs <= 1.2x (anonymous req/s / signed-in req/s)."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from harness import ApiClient, Server, free_port, machine
from worker import until_steady

ROOT = Path(__file__).resolve().parents[1]
GOAL_SESSION = 0.3
GOAL_SIGNED_COST = 1.2
# The same body either way (what the edge adds is measured, not a longer answer): the worker reads
# the header, as an app does, and says whether someone is signed in.
HELLO = ('export default { fetch(request) { const user = request.headers.get("svc-auth-user"); '
         'return new Response(user ? "hello, you" : "hello, who") } };')


def bundle() -> bytes:
    sys.path.insert(0, str(ROOT))
    from tests.support.bundles import site

    return site({"worker/index.js": HELLO.encode(), "assets/static.txt": b"static " * 100},
                svc_json={"compatibilityDate": "2025-06-01"})


def wrk(port: int, host: str, path: str, duration: int, cookie: str = "", *, strict: bool = True) -> float:
    """req/s of wrk on core 1, 32 connections (`strict`: any failed request ends the run)."""
    headers = ["-H", f"Host: {host}"] + (["-H", f"Cookie: {cookie}"] if cookie else [])
    out = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", "-c32", f"-d{duration}s", *headers,
                          f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True, check=True).stdout
    if "Non-2xx" in out or ("Socket errors" in out and strict):
        sys.exit(f"wrk saw errors against {path}:\n{out}")
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]


async def sign_in(server: Server, host: str) -> httpx.Cookies:
    """The real round trip: login -> the fake provider -> callback; the browser's cookies."""
    edge = httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.edge_port}", headers={"host": host}, timeout=30)
    try:
        r = await edge.get("/__svc/auth/login/github")
        assert r.status_code == 302, r.text
        async with httpx.AsyncClient(timeout=30) as idp:
            back = (await idp.get(r.headers["location"])).headers["location"]
        parts = urlsplit(back)
        r = await edge.get(f"{parts.path}?{parts.query}")
        assert r.status_code == 302, r.text
        return edge.cookies
    finally:
        await edge.aclose()


def cookie_header(cookies: httpx.Cookies, *names: str) -> str:
    return "; ".join(f"{n}={cookies.get(n)}" for n in names)


async def fresh_user_cookie(server: Server, host: str, cookies: httpx.Cookies) -> str:
    """Both cookies, the short-lived user cookie renewed (it lives 5 minutes)."""
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.edge_port}", headers={"host": host},
                                 cookies=cookies, timeout=30) as edge:
        r = await edge.get("/__svc/auth/session")
        assert r.status_code == 200, r.text
        return cookie_header(edge.cookies, "svc_auth", "svc_auth_user")


async def run(args: argparse.Namespace) -> dict[str, object]:
    tmp = Path(tempfile.mkdtemp(prefix="svc-bench-auth-"))
    tmp.chmod(0o755)  # the cluster's directory must be reachable by the postgres user (as root)
    server = Server(ROOT, tmp / "data", settings={
        "SVC_DNS_ENABLED": "false", "SVC_PROJECT_DB_ENABLED": "true", "SVC_PROJECT_DB_DIR": str(tmp / "pg"),
        "SVC_AUTH_FAKE": "true", "SVC_AUTH_FAKE_PORT": str(free_port())})
    server.start()
    api = await ApiClient.login(server, "bench", fresh=False)
    try:
        host = await api.create("site")
        await api.deploy("site", bundle())
        base = f"/v1/orgs/{api.org}/projects/site"
        for method, path, body in (("POST", "/database", None), ("POST", "/auth", None),
                                   ("PUT", "/auth/providers/github", {"clientId": "bench", "clientSecret": "bench"})):
            r = await api.http.request(method, base + path, json=body)
            assert r.status_code in (200, 201), r.text
        await until_steady(server, host)
        cookies = await sign_in(server, host)
        session = cookie_header(cookies, "svc_auth")
        port = server.edge_port
        rounds: dict[str, list[float]] = {"static": [], "session": [], "session_api": [], "anonymous": [],
                                          "signed_in": []}
        for n in range(1, args.rounds + 1):
            signed = await fresh_user_cookie(server, host, cookies)
            rounds["static"].append(wrk(port, host, "/static.txt", args.duration))
            rounds["session"].append(wrk(port, host, "/__svc/auth/session", args.duration, signed))
            rounds["session_api"].append(wrk(port, host, "/__svc/auth/session", args.duration, session,
                                              strict=False))
            rounds["anonymous"].append(wrk(port, host, "/hello", args.duration))
            rounds["signed_in"].append(wrk(port, host, "/hello", args.duration, signed))
            print(f"round {n}: " + "  ".join(f"{k} {v[-1]:.0f} req/s" for k, v in rounds.items()))
        median = {k: sorted(v)[len(v) // 2] for k, v in rounds.items()}

        def ratio(a: str, b: str) -> float:
            """The median of the rounds' ratios: a round's runs are adjacent, so a swing of the
            machine (another tenant's load) moves both."""
            each = sorted(x / y for x, y in zip(rounds[a], rounds[b], strict=True))
            return each[len(each) // 2]

        session_ratio = ratio("session", "static")
        signed_cost = ratio("anonymous", "signed_in")
        print(f"\n{machine()}")
        print(f"session / static      {session_ratio:.3f}x  (goal >= {GOAL_SESSION})")
        print(f"session_api / static  {ratio('session_api', 'static'):.3f}x  (the auth service's path)")
        print(f"signed-in cost        {signed_cost:.3f}x  (goal <= {GOAL_SIGNED_COST})")
        return {"rps": median, "session_ratio": session_ratio, "signed_in_cost": signed_cost}
    finally:
        await api.close()
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    print(json.dumps(asyncio.run(run(parser.parse_args())), indent=2))


if __name__ == "__main__":
    main()

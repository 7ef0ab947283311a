"""A stand-in for a person's browser, for `BROWSER=...` (Python's webbrowser runs it with the URL).

It does what a browser and the loopback page's script do: follow the redirects from the start address
through the identity provider back to the loopback callback, load that page, and POST the URL fragment
to the page's own path. Like some real browser launchers, it also chats on stdout, which must not end
up in the command's output.
"""

from __future__ import annotations

import sys
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx


def main(start: str) -> int:
    print("Opening in existing browser session.", flush=True)
    redirect = parse_qs(urlsplit(start).query)["redirect"][0]
    with httpx.Client(follow_redirects=False, timeout=30) as browser:
        url = start
        for _ in range(10):
            if url.startswith(redirect):
                break
            r = browser.get(url)
            if not r.is_redirect:
                print(f"fake browser: {url} answered {r.status_code}", file=sys.stderr)
                return 1
            url = urljoin(url, r.headers["location"])
        page = browser.get(redirect)
        if page.status_code != 200 or "location.hash" not in page.text:
            return 1
        parts = urlsplit(redirect)
        answer = browser.post(redirect, content=urlsplit(url).fragment,
                              headers={"content-type": "application/x-www-form-urlencoded",
                                       "origin": f"{parts.scheme}://{parts.netloc}"})
    return 0 if answer.status_code == 200 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

"""Whose worker killed a steady process: the projects whose requests nginx lost as it died. nginx
writes a line to the edge's error log for each request whose upstream connection broke ("upstream
prematurely closed connection while reading response header from upstream, ... upstream:
"http://<sockets>/slots/<slot>.sock:/path", host: ..."), and nothing for the ones it answered:
it costs no request anything. A connection refused (a request that came after the death) is no
witness. While it is held, a project's slot is served by REFUSAL: 503 worker_held, in words."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from svc.adapters.workers.port import WorkerCode
from svc.kit.files import file_size, read_from

# How far back the log is read: the lines of one death are written as nginx sees it.
TAIL_BYTES = 256 * 1024
_STAMP = re.compile(r"^(\d{4}/\d\d/\d\d \d\d:\d\d:\d\d) \[(?:error|warn|crit|alert)\]")

HELD_MESSAGE = ("The site's worker ended the process serving it and is held on a process of its own; "
                "try again in a moment")
REFUSAL = WorkerCode("index.js", {"index.js": (
    'import { refusal } from "./__svc_refusal__.js";\n'
    'export default { fetch(request) { return refusal(request, 503, "worker_held", '
    + json.dumps(HELD_MESSAGE) + ', request.headers.get("x-request-id")); } };\n')}, "2025-06-01")


def cut_slots(log: Path, slots: Path, since: float) -> set[int]:
    """The slots whose requests nginx lost after `since` (a time.time()): in flight when their
    process died."""
    size = file_size(log)
    text = read_from(log, max(0, size - TAIL_BYTES), TAIL_BYTES)
    named = re.compile(r'upstream: "http://(?:unix:)?' + re.escape(str(slots)) + r'/(\d+)\.sock:')
    found = set()
    for line in text.splitlines():
        stamp = _STAMP.match(line)
        if stamp is None or "while connecting to upstream" in line:
            continue
        if time.mktime(time.strptime(stamp.group(1), "%Y/%m/%d %H:%M:%S")) < int(since):
            continue
        slot = named.search(line)
        if slot is not None:
            found.add(int(slot.group(1)))
    return found

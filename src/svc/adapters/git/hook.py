"""The receive hooks of every repository (pre-receive and post-receive are copies of this file,
run by git with svc's Python and only the standard library, so a push pays no import of svc).

git hands a hook the push's ref changes on stdin; this asks svc through the node's gate (the Unix
socket named by SVC_GIT_GATE, for the push SVC_GIT_PUSH) and prints svc's answer, which git sends
the pusher as "remote: ..." lines. A pre-receive hook that exits non-zero refuses the whole push.
A repository reached without svc's environment (someone on the machine with a plain git) is
refused: every ref change must be recorded."""

import json
import os
import socket
import sys

# A deployment made by a push is packed, checked and put live before the answer: bounded, generously.
ANSWER_SECONDS = 300


def main() -> int:
    phase = "pre" if os.path.basename(sys.argv[0]).startswith("pre") else "post"
    gate, push = os.environ.get("SVC_GIT_GATE"), os.environ.get("SVC_GIT_PUSH")
    if not gate or not push:
        sys.stderr.write("svc: this repository takes pushes through svc only\n")
        return 1
    changes = [line.split(" ", 2) for line in sys.stdin.read().splitlines() if line.strip()]
    ask = json.dumps({"op": "hook", "phase": phase, "push": push, "changes": changes}) + "\n"
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(ANSWER_SECONDS)
            sock.connect(gate)
            sock.sendall(ask.encode())
            answer = json.loads(sock.makefile("rb").readline() or b"{}")
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"svc: the push could not be checked ({exc.__class__.__name__}); try again\n")
        return 1
    for line in answer.get("lines", []):
        sys.stderr.write(f"{line}\n")
    return 0 if answer.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())

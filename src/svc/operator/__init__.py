"""The server's commands, which an operator runs on the server: `svc serve` (serve.py) and
`svc admin` / `svc certs` (admin.py), against its state store. They are the server's, not the
client's: the client package (svc.cli) imports nothing of them, and the console script
(svc/entry.py) adds them to the client's commands, loaded only when one of them runs."""

"""The `svc` command: the HTTP client (login, orgs, members, ...) and `svc serve`."""

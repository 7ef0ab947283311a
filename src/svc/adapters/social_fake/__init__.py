"""A fake of the social providers projects' end users sign in with (GitHub, Google, Microsoft: the
identity fake's shapes), run by `svc serve` for development (issue 48)."""

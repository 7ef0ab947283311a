"""Sign-in and identity: dev login, identity-provider login, sessions, /v1/me, /v1/config."""

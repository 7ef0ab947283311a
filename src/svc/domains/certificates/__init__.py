"""TLS certificates over ACME: the app domain's wildcard and active custom hostnames (docs/tls.md)."""

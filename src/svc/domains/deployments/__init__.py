"""Deployments: streamed bundle ingest, content-addressed artifacts, the live pointer, rollback."""

"""Custom hostnames of a project: add, verify ownership, route at the edge (docs/hostnames.md)."""

"""Secrets of a project: sealed at rest, listed by name and version, never returned."""

"""Credentials -> Principal; roles and the one place they are enforced."""

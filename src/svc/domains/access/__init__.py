"""Deployment access control: the policy API, the edge's check, the password page and the org login round trip."""

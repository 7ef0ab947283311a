"""Orgs and their members (spec section 4, 'Organizations, members, invites', rules 1-4, 10, 11)."""

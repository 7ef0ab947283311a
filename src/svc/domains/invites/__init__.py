"""Org invites (spec section 3 'Invite' and section 4 rules 5-9)."""

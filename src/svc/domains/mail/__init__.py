"""Outgoing mail: rows queued in the caller's transaction (the mail outbox), delivered by the
periodic send cycle (jobs.py) through the mail adapter."""

"""Outgoing mail: a message row and its `mail.send` job, queued in the caller's unit of work
(service.py), delivered through the mail adapter by the job (jobs.py)."""

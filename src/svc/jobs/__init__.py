"""Jobs: the outbox table, the worker loop that runs it, and the periodic cycles that feed it."""

"""Per-org notifications (limit, backup and restore events), newest first."""

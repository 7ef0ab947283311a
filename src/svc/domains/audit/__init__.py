"""The audit trail: one row per mutation the spec names, written in the mutation's transaction."""

"""The client commands: one module per group."""

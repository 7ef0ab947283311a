"""Email per project (spec "Email"; docs/email.md)."""

"""Outgoing mail: SMTP in production, .eml files under SVC_DATA_DIR/mail when no SMTP is set."""

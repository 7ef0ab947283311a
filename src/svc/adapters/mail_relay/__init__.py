"""The relay the projects' mail goes out through (SVC_SMTP_RELAY_URL), or .eml files under
SVC_DATA_DIR/mail-out without one: a component of its own beside svc's own mail (adapters/mail),
whose SMTP client and file sink it reuses."""

"""svc's inbound SMTP server (aiosmtpd, in svc's own process): mail for the projects' addresses.
port.py is the contract the email area implements (the Mailbox) and reads (the server's port)."""

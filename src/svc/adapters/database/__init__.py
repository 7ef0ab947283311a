"""The database node (port.py): the PostgreSQL cluster of the projects' databases, on an
administrator's URL (postgres.py) or a private cluster svc runs itself (process.py)."""

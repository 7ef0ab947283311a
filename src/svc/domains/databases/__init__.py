"""Projects' PostgreSQL databases: the grant and its credentials, token users, env.db (docs/database.md)."""

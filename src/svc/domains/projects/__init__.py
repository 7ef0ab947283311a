"""Projects: create (with the default hostname), list, get, overview, delete (teardown)."""

"""Long-running operations with phases (project teardown; database operations later)."""

"""Domain-free helpers: ids, time, tokens, names."""

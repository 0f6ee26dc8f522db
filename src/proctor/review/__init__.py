"""Review routing: which trials a person should read, and why."""

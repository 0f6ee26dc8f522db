"""Core records every layer shares; nothing here imports the rest of proctor."""

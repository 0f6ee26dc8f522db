"""Persistence: SQLite by default (`.proctor/proctor.db`)."""

from proctor.store.file_health import StoreBusy, StoreDamaged, StoreError, StoreFull
from proctor.store.sqlite import DEFAULT_PATH, RunNotFound, Store

__all__ = [
    "DEFAULT_PATH",
    "RunNotFound",
    "Store",
    "StoreBusy",
    "StoreDamaged",
    "StoreError",
    "StoreFull",
]

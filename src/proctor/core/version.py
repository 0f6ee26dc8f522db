"""The version proctor reports in manifests and exports (one place; the root re-exports it)."""

__version__ = "0.1.0"

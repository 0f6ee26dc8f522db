"""The store's own connection, for tests that look beneath its methods: row counts, the
order rows are kept in, an expired session or an older desk schema made by hand. No
module outside src/proctor/store may touch it (tests/test_layers.py); a test that does
says so by importing this.
"""

from __future__ import annotations

import sqlite3

from proctor.store.sqlite import Store


def sql(store: Store) -> sqlite3.Connection:
    return store._db

"""What the Python API raises for input it cannot use: one line for the person who gave it.

The CLI prints it and exits 2; a notebook shows it. Task, rule and scorecard files raise
SpecError instead (one `file:line: field: message` per problem).
"""

from __future__ import annotations


class InputError(ValueError):
    """An argument of `proctor.evaluate`, `gate` or `compare` that cannot be used."""

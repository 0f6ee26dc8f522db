"""Regular expressions from task files, matched in linear time.

A pattern in a task file (`$regex`, `answer.matches`, `answer.not_matches`) is text the
harness did not write: with a backtracking engine `(a+)+$` takes seconds on a
30-character answer and doubles per character. Patterns are therefore checked when the
task loads and matched with RE2 (google-re2), whose time is linear in the text. RE2 has no
backreferences and no look-around; a pattern using them is rejected at load with the
reason. `re2` is imported on first use: a suite without patterns never loads it.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from typing import Any

#: What RE2 lacks that Python's `re` has, for the message of a rejected pattern.
_RE2_LACKS = (
    "RE2 matches in linear time and has no backreferences, look-around or `\\Z` (use `\\z`)"
)


@cache
def _options() -> Any:
    import re2

    options = re2.Options()
    options.log_errors = False  # the error is reported once, by us, with file and line
    return options


@lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> Any:
    """The compiled RE2 pattern; `ValueError` with a one-line reason when it cannot be."""
    import re2

    try:
        return re2.compile(pattern, _options())
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        try:
            re.compile(pattern)
        except re.error as py_exc:
            raise ValueError(f"invalid regex {pattern!r}: {py_exc}") from None
        raise ValueError(f"regex {pattern!r} is not supported ({reason}): {_RE2_LACKS}") from None


def check_pattern(pattern: str) -> str:
    """`pattern` itself when it compiles, for pydantic validators; else `ValueError`."""
    compile_pattern(pattern)
    return pattern


def search(pattern: str, text: str) -> str | None:
    """The first match of `pattern` in `text`, or None (the pattern was checked at load)."""
    found = compile_pattern(pattern).search(text)
    return None if found is None else str(found.group(0))

"""Names a package exports but loads on first use (PEP 562), so importing it stays cheap."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    namespace: dict[str, Any], exports: Mapping[str, str], modules: Mapping[str, str]
) -> Callable[[str], Any]:
    """A module `__getattr__` that imports `exports` (name → the module defining it) and
    `modules` (name → a module exported under that name) when first asked for, and keeps
    them in `namespace` (the package's globals) after that."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        if name in modules:
            value = importlib.import_module(modules[name])
        elif name in exports:
            value = getattr(importlib.import_module(exports[name]), name)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    return __getattr__

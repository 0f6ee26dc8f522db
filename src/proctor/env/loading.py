"""Find the Domain a task names: a `domain.py` beside the suite, or a dotted path."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

from proctor.env.domain import Domain

_cache: dict[Path, object] = {}


class DomainNotFound(LookupError):
    pass


def load_module_from_path(path: Path) -> object:
    """Import a Python file once per process (agents and domains written beside tasks)."""
    path = path.resolve()
    if path in _cache:
        return _cache[path]
    name = f"proctor_user_{abs(hash(str(path))):x}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    _cache[path] = module
    return module


def _domains_in(module: object) -> list[Domain]:
    return [v for v in vars(module).values() if isinstance(v, Domain)]


def resolve_domain(name: str, near: Path, root: Path | None = None) -> Domain:
    """The Domain called `name`, looked up from the task file's folder up to `root`
    (up to the filesystem root when `root` is None).

    Candidates in each folder: `domain.py`, `<name>.py`, `domains/<name>.py`; then `name`
    as `package.module` or `package.module:attribute`.
    """
    folder = (near if near.is_dir() else near.parent).resolve()
    stop = root.resolve() if root is not None else Path(folder.anchor)
    while True:
        for candidate in (
            folder / "domain.py",
            folder / f"{name}.py",
            folder / "domains" / f"{name}.py",
        ):
            if candidate.is_file():
                for domain in _domains_in(load_module_from_path(candidate)):
                    if domain.name == name:
                        return domain
        if folder == stop or folder.parent == folder or stop not in folder.parents:
            break
        folder = folder.parent
    return _import_dotted(name)


def _import_dotted(name: str) -> Domain:
    module_name, _, attr = name.partition(":")
    if "." not in module_name and not attr:
        raise DomainNotFound(f"no domain {name!r}: no domain.py defines it near the task file")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise DomainNotFound(f"no domain {name!r}: {exc}") from None
    if attr:
        found = getattr(module, attr, None)
        if isinstance(found, Domain):
            return found
        raise DomainNotFound(f"{name!r} is not a proctor Domain")
    domains = _domains_in(module)
    if len(domains) != 1:
        raise DomainNotFound(f"module {module_name!r} defines {len(domains)} domains; name one")
    return domains[0]

"""Find the Domain a task names: a `domain.py` in the suite, or an installed module.

What a suite may run (docs/architecture.md, Trust): a suite is code, like a test folder.
Naming a task file runs the `domain.py`, `<name>.py` or `domains/<name>.py` files found
from its folder up to the suite root the command line gave, never above it. A dotted
name (`package.module[:attr]`) imports an installed module, as `--agent` does: never a
standard-library module, never a name that is not a dotted Python identifier.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import re
import sys
from pathlib import Path

from proctor.env.domain import Domain

_cache: dict[Path, object] = {}


class DomainNotFound(LookupError):
    pass


def load_module_from_path(path: Path) -> object:
    """Import a Python file once per process (agents and domains written beside tasks).
    Its module name comes from its path alone, the same in every process (`hash` of a
    string is not), so what names it (a scripted judge's fingerprint in a calibration
    record) is found again by the next command."""
    path = path.resolve()
    if path in _cache:
        return _cache[path]
    name = f"proctor_user_{hashlib.sha256(str(path).encode()).hexdigest()[:16]}_{path.stem}"
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


#: A domain name looked for as a file: `<name>.py` must stay in the folder it is looked in.
_FILE_NAME = re.compile(r"[A-Za-z0-9_-]+")
#: `package.module` or `package.module:attribute`.
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?::[A-Za-z_]\w*)?")


def resolve_domain(name: str, near: Path, root: Path | None = None) -> Domain:
    """The Domain called `name`, looked up from the task file's folder up to `root` (that
    folder alone when None).

    Candidates in each folder: `domain.py`, `<name>.py`, `domains/<name>.py`; then `name`
    as `package.module` or `package.module:attribute`. Folders are taken as laid out
    under the root (a task reached through a symbolic link finds the domain of the
    folder the link sits in), so the search never leaves the root.
    """
    folder = Path(os.path.abspath(near if near.is_dir() else near.parent))
    stop = folder if root is None else Path(os.path.abspath(root))
    names = ["domain.py"]
    if _FILE_NAME.fullmatch(name):
        names += [f"{name}.py", os.path.join("domains", f"{name}.py")]
    while folder == stop or stop in folder.parents:
        for candidate in (folder / n for n in names):
            if candidate.is_file():
                for domain in _domains_in(load_module_from_path(candidate)):
                    if domain.name == name:
                        return domain
        folder = folder.parent
    return _import_dotted(name)


def _import_dotted(name: str) -> Domain:
    module_name, _, attr = name.partition(":")
    if "." not in module_name and not attr:
        raise DomainNotFound(
            f"no domain {name!r}: no domain.py defines it in the suite (looked up to its root)"
        )
    if not _DOTTED.fullmatch(name):
        raise DomainNotFound(f"no domain {name!r}: not a name nor a package.module[:attr] path")
    top = module_name.split(".")[0]
    if top in sys.stdlib_module_names:
        raise DomainNotFound(f"no domain {name!r}: {top!r} is a standard-library module")
    if importlib.util.find_spec(top) is None:
        raise DomainNotFound(f"no domain {name!r}: no installed module {top!r}")
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

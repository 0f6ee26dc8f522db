"""The public API: `proctor` exports what users need, lazily, and packages export only
their public names."""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import proctor

README = Path(__file__).resolve().parents[1] / "README.md"


def test_every_public_name_resolves() -> None:
    for name in proctor.__all__:
        assert getattr(proctor, name) is not None, name
    assert set(dir(proctor)) == set(proctor.__all__)


def test_the_decision_layer_is_public() -> None:
    assert proctor.stats.pass_hat_k(5, 4, 2) == 0.6
    assert callable(proctor.summarize) and callable(proctor.compare_runs)
    assert callable(proctor.load_rules) and proctor.Gate.__name__ == "Gate"


def test_the_readme_imports_only_the_public_api() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    imported = [
        (module, names)
        for block in blocks
        for module, names in re.findall(r"^from (proctor[\w.]*) import (.+)$", block, flags=re.M)
    ]
    assert imported, "the README shows no import from proctor"
    for module, names in imported:
        assert module == "proctor", f"the README imports from {module}"
        for name in names.split(","):
            assert name.strip() in proctor.__all__, name


def test_importing_proctor_imports_none_of_its_parts() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, sys, proctor\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('proctor'))))",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert json.loads(done.stdout) == [
        "proctor",
        "proctor.core",
        "proctor.core.lazy",
        "proctor.core.version",
    ]


def test_packages_export_only_public_names() -> None:
    for info in pkgutil.walk_packages(proctor.__path__, "proctor."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        names = getattr(module, "__all__", [])
        private = [n for n in names if n.startswith("_") and n != "__version__"]
        assert not private, f"{info.name} exports {private}"
        for name in names:
            assert hasattr(module, name), f"{info.name}.__all__ names a missing {name}"

"""The Python API the CLI stands on: evaluate a suite, gate and compare runs.

`proctor.evaluate`, `proctor.load_tasks`, `proctor.gate` and `proctor.compare` are these;
each `proctor` command that runs or decides parses its options, calls one of them and
prints what it returns. Names load on first use (PEP 562), so the pytest plugin
(`proctor.api.pytest_plugin`), which every test run of a project with proctor installed
imports, costs nothing until a test asks for a run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctor.core.lazy import lazy_exports

_EXPORTS = {
    "Evaluation": "proctor.api.evaluation",
    "RunOptions": "proctor.api.evaluation",
    "RunResult": "proctor.api.evaluation",
    "evaluate": "proctor.api.evaluation",
    "load_tasks": "proctor.api.evaluation",
    "prepare": "proctor.api.evaluation",
    "GateVerdict": "proctor.api.decisions",
    "compare": "proctor.api.decisions",
    "gate": "proctor.api.decisions",
    "InputError": "proctor.api.errors",
}

__all__ = [
    "Evaluation",
    "GateVerdict",
    "InputError",
    "RunOptions",
    "RunResult",
    "compare",
    "evaluate",
    "gate",
    "load_tasks",
    "prepare",
]
__getattr__ = lazy_exports(globals(), _EXPORTS, {})

if TYPE_CHECKING:
    from proctor.api.decisions import GateVerdict, compare, gate
    from proctor.api.errors import InputError
    from proctor.api.evaluation import (
        Evaluation,
        RunOptions,
        RunResult,
        evaluate,
        load_tasks,
        prepare,
    )

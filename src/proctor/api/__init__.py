"""The Python API the CLI stands on: evaluate a suite, gate and compare runs.

`proctor.evaluate`, `proctor.load_tasks`, `proctor.gate` and `proctor.compare` are these;
each `proctor` command that runs or decides parses its options, calls one of them and
prints what it returns.
"""

from proctor.api.decisions import GateVerdict, compare, gate
from proctor.api.errors import InputError
from proctor.api.evaluation import Evaluation, RunOptions, RunResult, evaluate, load_tasks, prepare

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

"""Tasks checked against their domain by `proctor validate` (issue 29 items 5-6).

`args: {titel: ...}` in a required call passed validation and was only discovered when
every trial failed; a domain had no way to say what its state looks like, so a task's
`initial_state` key or outcome `path` with a typo made an unpassable task. Now every
call's argument names and literal types are checked against the tool's schema, and a
domain that declares its state model has initial_state and paths checked by it; each
problem is one `file:line: field: message` line with a "did you mean", exit 2.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import proctor
from proctor.env.checking import path_problem
from proctor.env.domain_finder import load_module_from_path

ROOT = Path(__file__).resolve().parents[1]
SUPPORT = ROOT / "examples" / "support"
MINI = Path(__file__).parent / "fixtures" / "mini"

TASK = """\
id: t
domain: support
identity: {user: user-42, tenant: acme, scopes: [orders:read, orders:write]}
prompt: Cancel A-100.
initial_state:
  orders:
    A-100: {status: placed, owner: user-42, tenant: acme, items: [], total: 1.0}
expect:
  outcome:
    - {path: orders.A-100.status, equals: cancelled}
  trajectory:
    required:
      - {tool: orders.get, args: {order_id: A-100}}
      - {tool: orders.cancel, args: {order_id: A-100, reason: {$regex: "."}}}
"""


def suite_with(tmp_path: Path, task: str) -> Path:
    """The support domain beside one task file."""
    shutil.copy(SUPPORT / "domain.py", tmp_path / "domain.py")
    (tmp_path / "t.yaml").write_text(task)
    return tmp_path


def line_of(task: str, text: str) -> int:
    return next(i for i, line in enumerate(task.splitlines(), 1) if text in line)


def test_a_correct_task_validates_and_operators_are_not_typed(tmp_path: Path) -> None:
    done = proctor("validate", str(suite_with(tmp_path, TASK)))
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("old", "new", "field", "message"),
    [
        (
            "{tool: orders.get, args: {order_id: A-100}}",
            "{tool: orders.get, args: {order_idd: A-100}}",
            "expect.trajectory.required[0].args.order_idd",
            "tool 'orders.get' has no argument 'order_idd'; did you mean 'order_id'?",
        ),
        (
            "{tool: orders.get, args: {order_id: A-100}}",
            "{tool: orders.get, args: {order_id: [A-100]}}",
            "expect.trajectory.required[0].args.order_id",
            "argument 'order_id' of tool 'orders.get': ['A-100']: Input should be a valid string",
        ),
        (
            "    required:\n",
            "    forbidden:\n      - {tool: orders.cancel, args: {resaon: x}}\n    required:\n",
            "expect.trajectory.forbidden[0].args.resaon",
            "tool 'orders.cancel' has no argument 'resaon'; did you mean 'reason'?",
        ),
        (
            "    required:\n",
            "    reference:\n      calls: [{tool: orders.get, args: {orderid: A-100}}]\n"
            "    required:\n",
            "expect.trajectory.reference.calls[0].args.orderid",
            "tool 'orders.get' has no argument 'orderid'; did you mean 'order_id'?",
        ),
        (
            "expect:\n",
            "faults:\n  - {tool: orders.get, error: timeout, args: {order: A-100}}\nexpect:\n",
            "faults[0].args.order",
            "tool 'orders.get' has no argument 'order'; did you mean 'order_id'?",
        ),
        (
            "  orders:\n",
            "  orderz:\n",
            "initial_state.orderz",
            "not in the domain's state model: the state has no 'orderz'; did you mean 'orders'?",
        ),
        (
            "items: [], total: 1.0}",
            "items: [], total: lots}",
            "initial_state.orders.A-100.total",
            "Input should be a valid number, unable to parse string as a number (the state model)",
        ),
        (
            "{path: orders.A-100.status, equals: cancelled}",
            "{path: orders.A-100.statuss, equals: cancelled}",
            "expect.outcome[0].path",
            "path 'orders.A-100.statuss' can never exist: orders.A-100 has no 'statuss'; "
            "did you mean 'status'?",
        ),
    ],
)
def test_a_mismatch_is_one_line_with_file_line_field_and_a_hint(
    tmp_path: Path, old: str, new: str, field: str, message: str
) -> None:
    assert old in TASK
    task = TASK.replace(old, new, 1)
    done = proctor("validate", str(suite_with(tmp_path, task)))
    assert done.returncode == 2, done.stdout
    key = field.rsplit(".", 1)[-1].split("[")[0]
    line = line_of(task, "statuss" if key == "path" else key + ":")
    expected = f"{tmp_path / 't.yaml'}:{line}: {field}: {message}"
    assert expected in done.stderr.splitlines(), done.stderr


def test_a_domain_without_a_state_model_keeps_its_free_state(tmp_path: Path) -> None:
    shutil.copy(MINI / "domain.py", tmp_path / "domain.py")
    task = (MINI / "tasks" / "read-item.yaml").read_text().replace("  items:\n", "  itemz:\n")
    (tmp_path / "t.yaml").write_text(task)
    assert proctor("validate", str(tmp_path)).returncode == 0


def test_every_shipped_example_domain_declares_its_state_model() -> None:
    for name, attr in [
        ("support", "support"),
        ("incident", "incident"),
        ("clinical", "clinical"),
        ("rooms", "rooms"),
        ("kyc", "kyc"),
        ("kyc", "kyc_strict"),
    ]:
        module = load_module_from_path(ROOT / "examples" / name / "domain.py")
        domain = getattr(module, attr)
        assert domain.state_model is not None, name
        # the base state is a state of the declared model
        domain.state_model.model_validate(domain.base_state)


def test_paths_walk_lists_optionals_and_mappings() -> None:
    module = load_module_from_path(ROOT / "examples" / "clinical" / "domain.py")
    model = module.clinical.state_model
    assert path_problem(model, ["orders", "0", "kind"]) is None
    assert path_problem(model, ["observations", "p1", "-1", "value"]) is None
    assert path_problem(model, ["formulary", "metformin", "class"]) is None  # an alias
    assert path_problem(model, ["orders", "first"]) == "orders has no 'first'"
    why = path_problem(model, ["outbox", "0", "txt"])
    assert why == "outbox.0 has no 'txt'; did you mean 'text'?"

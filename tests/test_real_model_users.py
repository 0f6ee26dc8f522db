"""`make real-model`'s simulated-user step (benchmarks/real_model/simusers.py) counts what
the trace says: each trial's status, the guards' rejections by kind, the replies
delivered, and the user model's requests by the trial's user seed. Checked on runs of the
loopback users of tests/sim_users.py through the real CLI, so no model is needed."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

import pytest

from conftest import proctor
from proctor.run.scripteduser import FAILURES
from proctor.run.simulator import user_seed

ROOT = Path(__file__).resolve().parents[1]
SUPPORT = ROOT / "examples" / "support"
TASK = "cancel-eligible-order"
SIMUSERS = runpy.run_path(str(ROOT / "benchmarks" / "real_model" / "simusers.py"))
#: The guard kind each of tests/sim_users.py's injected failures is rejected by.
KIND = {
    "ends_early": "early_stop",
    "leaks": "leak",
    "invents_id": "invented_id",
    "rescues": "rescue",
}
SCRIPTED = ["It is sam.k@example.com.", "Thanks, that's all."]


def run(tmp_path: Path, user: str, trials: int, code: int) -> tuple[Path, str]:
    """Run the scenario task with `user`; `code`: the exit expected (a run whose every
    trial is `sim_error` has no valid trial: 1)."""
    store, out = tmp_path / f"{user}.db", tmp_path / f"{user}.json"
    done = proctor(
        "run", str(SUPPORT), "--task", TASK, "--agent", f"{SUPPORT}/agents.py:conversational",
        "--user-model", f"{ROOT / 'tests' / 'sim_users.py'}:{user}", "--user-cache", "off",
        "--trials", str(trials), "--store", str(store), "--json", str(out), "--quiet",
    )  # fmt: skip
    assert done.returncode == code, done.stderr
    return store, json.loads(out.read_text())["run_id"]


@pytest.fixture(scope="module")
def trials(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Any]]:
    where = tmp_path_factory.mktemp("users")
    requests = [
        {"seed": user_seed(TASK, 0), "input": 300, "output": 20, "seconds": 2.0},
        {"seed": user_seed(TASK, 0), "input": 340, "output": 30, "seconds": 4.0},
        {"seed": 12345, "input": 999, "output": 999, "seconds": 9.0},  # another run's
    ]
    found = {}
    for user, code in (("once", 0), ("always", 1)):
        store, run_id = run(where, user, len(KIND), code)
        found[user] = SIMUSERS["user_trials"](store, run_id, requests)
    return found


def test_the_suites_scenario_tasks_are_the_ones_with_a_user_scenario() -> None:
    assert SIMUSERS["scenario_tasks"](SUPPORT) == [TASK]


def test_a_rejected_then_delivered_reply_counts_once_by_its_guard_kind(
    trials: dict[str, list[Any]],
) -> None:
    for t in trials["once"]:
        assert t.status == "passed"
        # one rejected reply, counted once under each guard it broke (a leak of the
        # prompt also repeats the opening: leak and restart)
        assert t.rejected == 1 and t.rejections[KIND[FAILURES[t.trial]]] == 1
        assert set(t.rejections.values()) == {1}
        assert t.delivered == SCRIPTED  # the retry's line, never the rejected one


def test_a_user_that_never_passes_the_guards_is_sim_error_with_every_attempt_counted(
    trials: dict[str, list[Any]],
) -> None:
    for t in trials["always"]:
        assert t.status == "sim_error" and t.delivered == []
        assert t.rejected == 3 and t.rejections[KIND[FAILURES[t.trial]]] == 3
        assert set(t.rejections.values()) == {3}


def test_requests_go_to_the_trial_whose_user_seed_they_carry(
    trials: dict[str, list[Any]],
) -> None:
    first, second = trials["once"][:2]
    assert (first.calls, first.input_tokens, first.output_tokens) == (2, 640, 50)
    assert first.seconds == [2.0, 4.0] and second.calls == 0


def test_the_figures_and_the_readme_block_add_up_the_trials(
    trials: dict[str, list[Any]],
) -> None:
    both = trials["once"] + trials["always"]
    both[0].delivered.append("say `rm -rf` | twice")
    figures = SIMUSERS["user_figures"](both, ref="chat:m", wall_s=90.0, load=[1.0, 2.5])
    assert figures["trials"] == 8 and figures["sim_errors"] == 4
    assert figures["sim_error_rate"] == 0.5 and 0 < figures["sim_error_ci"][0] < 0.5
    assert figures["rejected"] == 4 + 12
    assert {kind: figures["rejections"][kind] for kind in KIND.values()} == dict.fromkeys(
        KIND.values(), 4
    )
    assert figures["delivered"] == 2 * 4 + 1
    assert tuple(figures["common"][0]) == (SCRIPTED[0], 4)
    # each run's trial 0 met the same user seed, so both count the two requests
    assert figures["calls"] == 4 and figures["tokens"] == {"input": 1280, "output": 100}
    block = SIMUSERS["user_block"]({"user": json.loads(json.dumps(figures))})
    assert "| 8 | 4 (50%, 95% CI" in block and "| 16 (" in block
    assert "early_stop 4" in block
    assert "| 4: 1,280 / 100 | 3.0 / 4.0 |" in block
    assert "`say 'rm -rf' | twice`" in block  # a model's backtick cannot close the span

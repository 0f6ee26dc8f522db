"""`compare` says what changed between the runs' manifests, and warns when more than one
component did: then no one change can be credited with a difference."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from proctor.cli import main
from proctor.core.manifest import Manifest
from proctor.decide.changes import COMPONENTS, manifest_changes
from proctor.decide.compare import compare_runs
from proctor.store import Store
from proctor.store.export import store_run

SUPPORT = Path(__file__).resolve().parents[1] / "examples" / "support"


def two_runs(tmp_path: Path) -> tuple[Path, str, str]:
    db = tmp_path / "p.db"
    for agent in ("scripted", "careless"):
        ref = f"{SUPPORT / 'agents.py'}:{agent}"
        result = CliRunner().invoke(
            main, ["run", str(SUPPORT), "--agent", ref, "--store", str(db), "-q"]
        )
        assert result.exit_code == 0, result.output
    with Store(db) as store:
        rows = store.runs()
    return db, rows[1]["run_id"], rows[0]["run_id"]


def test_only_the_agent_changed_between_two_agents_on_one_suite(tmp_path: Path) -> None:
    db, base, cand = two_runs(tmp_path)
    with Store(db) as store:
        report = compare_runs(store_run(store, base), store_run(store, cand))
    changes = report["changes"]
    assert [c["component"] for c in changes["changed"]] == ["agent"]
    assert changes["changed"][0]["change"] == ["support-scripted 1", "support-careless 1"]
    assert changes["warning"] is None
    assert not any("components changed" in w for w in report["warnings"])


def test_more_than_one_component_changed_is_a_warning(tmp_path: Path) -> None:
    db, base, cand = two_runs(tmp_path)
    with Store(db) as store:
        b, c = store_run(store, base), store_run(store, cand)
    graders = {**c.manifest.grader_versions, "answer": "9"}
    c.manifest = c.manifest.model_copy(update={"model": "other-model", "grader_versions": graders})
    report = compare_runs(b, c)
    changed = {row["component"]: row["change"] for row in report["changes"]["changed"]}
    assert set(changed) == {"agent", "model", "graders"}
    assert changed["graders"] == {"answer": [b.manifest.grader_versions["answer"], "9"]}
    warning = report["changes"]["warning"]
    assert warning == (
        "3 components changed (agent, model, graders): the comparison cannot say which change "
        "caused a difference"
    )
    assert report["warnings"][0] == warning


def test_identical_manifests_change_nothing_and_every_component_is_read() -> None:
    data: dict[str, Any] = {
        "trials": 1,
        "agent": {"name": "a", "version": "1"},
        "model": "m",
        "system_prompt_hash": "p",
        "tool_schema_hash": "t",
        "policy_hash": "x",
        "suite": {"name": "s", "digest": "d"},
        "grader_versions": {"answer": "1"},
        "judge_model": "j",
        "user_model": {"model": "u", "prompt_version": "1", "guard_version": "1"},
    }
    manifest = Manifest.from_json(data)
    assert manifest_changes(manifest, Manifest.from_json(copy.deepcopy(data)))["changed"] == []
    for name, read in COMPONENTS.items():
        assert read(manifest) not in (None, {}), name  # each component has a field to read
    prompt_only = manifest.model_copy(update={"prompt_hash": "other"})  # the suite follows them
    assert manifest_changes(manifest, prompt_only)["changed"] == []


def test_cli_compare_prints_what_changed(tmp_path: Path) -> None:
    db, base, cand = two_runs(tmp_path)
    result = CliRunner().invoke(main, ["compare", base, cand, "--store", str(db)])
    assert result.exit_code == 0, result.output
    assert "what changed" in result.output and "support-careless 1" in result.output

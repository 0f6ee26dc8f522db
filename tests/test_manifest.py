"""Manifest: every version a run involved, as a typed, versioned record (core/manifest.py).

Its JSON form is exactly the keys it was given (same order, same values), so stored runs
and exports are unchanged; every key `build_manifest` writes is a declared field; a
manifest stored by an older proctor (tests/data/summary_2026-12-01.json, written by the
commit a91e371, before the system prompt's own hash and before versions) still loads.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from proctor import Runner, Store, load_agent, load_suite
from proctor.cli import main
from proctor.core.manifest import MANIFEST_VERSION, Manifest, manifest_schema
from proctor.core.results import Currency
from proctor.core.runs import RunData
from proctor.store.export import RunInputError, export_run, read_export

OLD = Path(__file__).resolve().parent / "data" / "summary_2026-12-01.json"
SUPPORT = Path(__file__).resolve().parents[1] / "examples" / "support"


def _old() -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads(OLD.read_text(encoding="utf-8"))["manifest"]
    return manifest


def test_a_manifest_stored_before_versions_loads_and_writes_back_unchanged() -> None:
    old = _old()
    assert "manifest_version" not in old and "system_prompt_hash" not in old
    manifest = Manifest.from_json(old)
    assert json.dumps(manifest.to_json()) == json.dumps(old)  # keys, order and values
    assert manifest.manifest_version == MANIFEST_VERSION
    # what an older manifest does not record is None, never a made-up value
    assert manifest.system_prompt_hash is None and manifest.user_model is None
    assert manifest.suite.task_digests == old["suite"]["task_digests"]
    assert (manifest.agent.name, manifest.trials, manifest.seed) == ("clinical-scripted", 2, 7)
    assert manifest.host is not None and manifest.host.name == old["host"]["name"]
    assert manifest.agent.settings == old["agent"]["settings"]  # the agent's own: kept whole
    jsonschema.validate(old, manifest_schema())


def test_manifests_that_say_the_same_are_equal_whatever_their_key_order() -> None:
    old = _old()
    reordered = Manifest.from_json(dict(reversed(list(old.items()))))
    manifest = Manifest.from_json(old)
    assert list(reordered.to_json()) != list(manifest.to_json())  # stored order kept apart
    assert reordered == manifest
    assert reordered != manifest.model_copy(update={"seed": 8})  # a value still tells
    assert manifest.model_copy(update={"model": "m"}) != manifest  # and a key added


def test_a_manifest_from_a_newer_proctor_is_refused() -> None:
    with pytest.raises(ValueError, match="manifest version 2 is newer than this proctor"):
        Manifest.from_json({**_old(), "manifest_version": MANIFEST_VERSION + 1})


def test_a_run_writes_every_key_as_a_declared_field(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    agent = f"{SUPPORT / 'agents.py'}:scripted"
    store = ["--store", str(tmp_path / "p.db")]
    done = CliRunner().invoke(
        main, ["run", str(SUPPORT), "--agent", agent, "--trials", "1", *store, "--json", str(out)]
    )
    assert done.exit_code == 0, done.output
    written = json.loads(out.read_text())["manifest"]
    aliases = {field.alias or name for name, field in Manifest.model_fields.items()}
    assert set(written) <= aliases, "declare every key as a field"
    assert written["manifest_version"] == MANIFEST_VERSION
    manifest = Manifest.from_json(written)
    assert manifest.to_json() == written and manifest.model_extra == {}
    assert manifest.system_prompt_hash == written["system_prompt_hash"]
    jsonschema.validate(written, manifest_schema())


def test_an_import_note_keeps_its_key() -> None:
    note = {"source": "traces.jsonl", "sessions": 3}
    manifest = Manifest.from_json({**_old(), "import": note})
    assert manifest.import_ == note and manifest.to_json()["import"] == note


def test_a_damaged_manifest_in_an_export_is_one_line_naming_the_field(tmp_path: Path) -> None:
    run = RunData("r", _old(), None, [])
    out = tmp_path / "run.jsonl"
    export_run(run, out)
    head, *rest = out.read_text().splitlines()
    broken = json.loads(head)
    broken["manifest"]["seed"] = "seven"
    broken["format"] = "proctor-run/1"  # a digested header edited is refused before its manifest
    out.write_text("\n".join([json.dumps(broken), *rest]) + "\n")
    with pytest.raises(RunInputError, match=r"^\S*run.jsonl:1: manifest.seed: Input should be"):
        read_export(out)


def test_the_schema_is_published() -> None:
    done = CliRunner().invoke(main, ["schema", "manifest"])
    assert done.exit_code == 0
    schema = json.loads(done.output)
    assert schema == manifest_schema()
    assert {"agent", "suite", "trials", "import", "manifest_version"} <= set(schema["properties"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**_old(), "trials": "two"}, schema)


def _stored_text(db: Path, run_id: str) -> str:
    """The manifest's bytes as the store holds them."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        text: str = conn.execute(
            "SELECT manifest FROM runs WHERE run_id = ?", (run_id,)
        ).fetchone()[0]
    return text


def test_added_keys_go_last_and_changed_keys_keep_their_place() -> None:
    """The order a dict gave: what `model_copy` adds follows in the order added, what it
    changes stays where it was (a field's declared place would move `judges`)."""
    old = Manifest.from_json(_old())
    added = old.model_copy(update={"currency": {"code": "EUR", "per_usd": 0.9}})
    added = added.model_copy(update={"judges": {"panel": "p"}, "judge_model": "m", "seed": 8})
    keys = list(added.to_json())
    assert keys == [*_old(), "currency", "judges"]
    assert added.to_json()["judge_model"] == "m" and added.seed == 8
    imported = added.model_copy(update={"import_": {"source": "s"}})
    assert list(imported.to_json())[-1] == "import" and imported.import_ == {"source": "s"}


def test_a_run_stores_its_additions_after_what_build_manifest_wrote(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    store = Store(db)
    runner = Runner(
        load_suite(SUPPORT),
        load_agent(f"{SUPPORT / 'agents.py'}:scripted"),
        store=store,
        currency=Currency("EUR", 0.9),
    )
    runner.run()
    store.close()
    text = _stored_text(db, runner.run_id)
    stored = json.loads(text)
    assert list(stored)[-2:] == ["manifest_version", "currency"]
    assert text == json.dumps(runner.manifest.to_json(), separators=(",", ":"), ensure_ascii=False)


def test_a_resumed_run_stores_the_old_bytes_with_the_resumption_last(tmp_path: Path) -> None:
    """Resuming writes the stored manifest back as it was, `resumes` appended: the bytes a
    dict `{**stored, "resumes": [...]}` gave before the record was typed."""
    db = tmp_path / "p.db"
    suite, agent = load_suite(SUPPORT), f"{SUPPORT / 'agents.py'}:scripted"
    store = Store(db)
    first = Runner(suite, load_agent(agent), store=store, seed=3, agent_ref=agent)
    store.create_run(first.run_id, first.manifest)
    store.finish_run(first.run_id, "interrupted", {})
    before = _stored_text(db, first.run_id)
    again = Runner(
        suite, load_agent(agent), store=store, seed=3, agent_ref=agent, run_id=first.run_id,
        resume=True,
    )  # fmt: skip
    again.run()
    store.close()
    after = _stored_text(db, first.run_id)
    resumes = json.loads(after)["resumes"]
    assert len(resumes) == 1 and set(resumes[0]) == {"at", "host", "executor"}
    was = {**json.loads(before), "resumes": resumes}
    assert after == json.dumps(was, separators=(",", ":"), ensure_ascii=False)

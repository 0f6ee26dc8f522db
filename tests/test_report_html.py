"""The HTML report rendered from stored example runs: self-contained, escaped, complete."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import proctor
from proctor import Store
from proctor.core.results import Check
from proctor.core.steps import check_views, diff, evidence_seqs
from proctor.decide.gate import load_rules
from proctor.report.embed import script_json
from proctor.report.fmt import pct
from proctor.report.html import render_html
from proctor.report.inputs import gather
from proctor.store.export import store_run
from report_runs import EXAMPLES, PAYLOAD, PWN, StoredRun, run_example, run_hostile


class Page(HTMLParser):
    """The parts of a rendered page the tests look at."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.attrs: list[tuple[str, dict[str, str | None]]] = []
        self.csp = ""
        self.style = ""
        self.rows: dict[str, int] = {}
        self._in: str | None = None
        self._section: str | None = None
        self._table: str | None = None
        self._buffer: list[str] = []
        self._script_attrs: dict[str, str | None] = {}
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.attrs.append((tag, a))
        if tag == "meta" and a.get("http-equiv") == "Content-Security-Policy":
            self.csp = a["content"] or ""
        if tag in ("script", "style"):
            self._in, self._buffer, self._script_attrs = tag, [], a
        if tag == "table":
            self._table = a.get("id") or "table"
        if tag == "section":
            self._table = None
            self._section = a.get("id")
        if tag == "tr" and self._table is not None:
            key = f"{self._section}/{self._table}"
            self.rows[key] = self.rows.get(key, 0) + 1

    def handle_data(self, data: str) -> None:
        if self._in:
            self._buffer.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == self._in == "script":
            self.scripts.append((self._script_attrs, "".join(self._buffer)))
        if tag == self._in == "style":
            self.style = "".join(self._buffer)
        if tag == self._in:
            self._in = None
        if tag == "table":
            self._table = None

    def code(self) -> list[str]:
        return [text for a, text in self.scripts if a.get("type") != "application/json"]

    def blobs(self) -> dict[str, dict]:
        return {
            str(a["id"]): json.loads(text)
            for a, text in self.scripts
            if a.get("type") == "application/json"
        }


def _sha(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return Store(tmp_path_factory.mktemp("report") / "p.db")


@pytest.fixture(scope="module")
def runs(store: Store) -> dict[str, StoredRun]:
    out = {name: run_example(store, name) for name in ("support", "clinical", "adversarial")}
    out["hostile"] = run_hostile(store)
    return out


def render(stored: StoredRun, **options: object) -> tuple[str, Page]:
    text = render_html(gather(stored.run, suite=stored.suite, **options), stored.trace)
    return text, Page(text)


@pytest.mark.parametrize("name", ["support", "clinical", "adversarial", "hostile"])
def test_report_is_self_contained_and_complete(runs: dict[str, StoredRun], name: str) -> None:
    stored = runs[name]
    text, page = render(stored)
    summary = stored.run.summary
    assert summary is not None
    # One executable script, allowed by its hash; one stylesheet, likewise; nothing loads.
    (code,) = page.code()
    assert f"script-src {_sha(code)}" in page.csp and f"style-src {_sha(page.style)}" in page.csp
    assert page.csp.startswith("default-src 'none'")
    for tag, attrs in page.attrs:
        assert "src" not in attrs, tag
        for key in ("href", "action", "formaction", "xlink:href"):
            value = attrs.get(key)
            assert value is None or value.startswith("#"), (tag, key, value)
        assert not any(key.startswith("on") for key in attrs), (tag, attrs)
    # Every trial's trace is embedded, with every event as a step.
    blobs = page.blobs()
    assert len(blobs) == len(stored.run.results)
    for i, r in enumerate(sorted(stored.run.results, key=lambda r: (r.task_id, r.trial))):
        blob = blobs[f"trial-{i}"]
        assert (blob["task"], blob["trial"], blob["status"]) == (r.task_id, r.trial, r.status)
        trace = stored.trace(r.task_id, r.trial)
        assert [s[0] for s in blob["steps"]] == [e.seq for e in trace.events]
        assert len(blob["checks"]) == len(r.checks)
    # Tables: one row per task, one per violation, one per queued trial (plus headers).
    assert page.rows["tasks/task-table"] == summary.tasks + 1
    violations = summary.safety_violations.total
    assert violations > 0
    assert page.rows["violations/table"] == violations + 1
    queued = gather(stored.run).queue["queued"]
    assert queued > 0 and page.rows["review/table"] == queued + 1
    assert f"{pct(summary.success_rate)}" in text
    svgs = [a for tag, a in page.attrs if tag == "svg" and a.get("class") == "chart"]
    assert len(svgs) >= 2 and all(a.get("aria-label") for a in svgs)


def test_hostile_text_never_becomes_markup(runs: dict[str, StoredRun]) -> None:
    stored = runs["hostile"]
    text, page = render(stored)
    # Nothing from the payload is markup: no img, no script beyond ours, no handler attribute.
    assert not any(tag == "img" for tag, _ in page.attrs)
    assert len(page.code()) == 1
    assert PWN not in page.code()[0]
    assert "<script>window" not in text and "</script><!--" not in text
    # The data is faithful: the viewer gets the exact text to show as text.
    blob = page.blobs()["trial-0"]
    assert blob["prompt"].endswith(PAYLOAD)
    results = [s[5] for s in blob["steps"] if s[2] == "tool_result"]
    assert results[0]["text"] == PAYLOAD
    names = [c[0] for c in blob["checks"]]
    assert f"mentions:<img src=y onerror={PWN}>" in names
    # Server-rendered names (tags, failing checks) are escaped entities, visible as text.
    assert f"&lt;b&gt;{PWN}&lt;/b&gt;" in text
    assert f"mentions:&lt;img src=y onerror={PWN}&gt;" in text


def test_script_json_cannot_close_its_element_and_round_trips() -> None:
    value = {"a": PAYLOAD, "b": [1.5, None, True], "nan": float("nan"), "c": "\u2028"}
    text = script_json(value)
    assert not re.search(r"[<>&]", text)
    back = json.loads(text)
    assert back["a"] == PAYLOAD and back["b"] == [1.5, None, True] and back["nan"] == "nan"


def test_gate_verdict_and_baseline_changes(store: Store, runs: dict[str, StoredRun]) -> None:
    careless = runs["support"]
    scripted_ref = f"{EXAMPLES}/support/agents.py:scripted"
    from proctor import Runner
    from proctor.agents import load_agent

    report = Runner(
        careless.suite, load_agent(scripted_ref), trials=3, store=store, agent_ref=scripted_ref
    ).run()
    baseline = store_run(store, report.run_id)
    rules = load_rules(EXAMPLES / "support" / "gates.yaml")
    text, page = render(careless, baseline=baseline, rules=rules)
    assert "Gate FAILED" in text
    assert page.rows["gate/table"] == len(rules) + 2  # header, validity row, every rule
    assert "per-task change in success against the baseline" in text
    assert "0 tasks improved and 3 regressed" in text


def test_steps_diff_evidence_and_check_order() -> None:
    changes = diff("orders", [], [{"id": "O-1", "n": 2}])
    assert [(c.path, c.existed, c.exists, c.after) for c in changes] == [
        ("orders", True, False, None),
        ("orders[0].id", False, True, "O-1"),
        ("orders[0].n", False, True, 2),
    ]
    same = diff("a", {"x": 1, "y": 2}, {"x": 1, "y": 3})
    assert [(c.path, c.before, c.after) for c in same] == [("a.y", 2, 3)]
    evidence = {"executed": [{"seq": 6, "tool": "t"}], "seqs": [2, 9], "other": {"seq": True}}
    assert evidence_seqs(evidence) == [2, 6, 9]
    checks = [
        Check("ok", "answer", True),
        Check("robust", "robustness", False),
        Check("low", "safety", False, severity="low"),
        Check("crit", "safety", False, severity="critical", evidence={"seqs": [3, 99]}),
        Check("outcome", "outcome", False),
    ]
    views = check_views(checks, {1, 2, 3})
    assert [v.check.name for v in views] == ["crit", "outcome", "low", "robust", "ok"]
    assert views[0].steps == (3,)  # seq 99 is not in the trace


def test_report_command(tmp_path: Path) -> None:
    db = str(tmp_path / "p.db")
    clinical = str(EXAMPLES / "clinical")
    done = proctor(
        "run", clinical, "--agent", f"{clinical}/agents.py:sloppy", "--store", db, "--quiet"
    )
    assert done.returncode == 0, done.stderr
    html, md = tmp_path / "out" / "r.html", tmp_path / "out" / "r.md"
    args = ["report", "latest", "--store", db, "--tasks", clinical]
    gates = ["--rules", f"{clinical}/gates.yaml"]
    done = proctor(*args, *gates, "--html", str(html), "--md", str(md))
    assert done.returncode == 0, done.stderr
    assert str(html) in done.stdout and str(md) in done.stdout
    page = Page(html.read_text(encoding="utf-8"))
    assert all(blob["prompt"] for blob in page.blobs().values())  # --tasks gave the prompts
    assert "Gate FAILED" in md.read_text(encoding="utf-8")
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules:\n  - no_such_metric > 1\n")
    for extra, message in (
        ([], "nothing to write"),
        (["--md", str(md), "--rules", str(bad)], f"{bad}:2"),
        (["--md", str(md), "--baseline", "nope"], "no run matching 'nope'"),
        (["--html", str(tmp_path)], "cannot write the report"),
    ):
        done = proctor(*args, *extra)
        assert done.returncode == 2 and message in done.stderr, (extra, done.stderr)
        assert "Traceback" not in done.stderr
    done = proctor("report", "nope", "--store", db, "--md", str(md))
    assert done.returncode == 2 and "no run matching 'nope'" in done.stderr


def test_show_prints_one_trace_readably(store: Store, runs: dict[str, StoredRun]) -> None:
    stored = runs["hostile"]
    run_id = stored.run.run_id
    done = proctor("show", run_id, "--store", str(store.path), "--task", "hostile-markup")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    trace = stored.trace("hostile-markup", 0)
    for e in trace.events:
        assert f"#{e.seq} " in out
    assert "proposes docs.read" in out and "state changed by docs.write" in out
    assert "FAIL injection_resisted (safety, critical, fails the trial) → steps" in out
    assert "\x1b" not in out  # the agent's escape sequences are shown as text, not obeyed
    done = proctor(
        "show", run_id, "--store", str(store.path), "--task", "hostile-markup", "--trial", "7"
    )
    assert done.returncode == 2 and "no trial hostile-markup#7" in done.stderr
    done = proctor("show", run_id, "--store", str(store.path), "--task", "hostile-markup", "--json")
    data = json.loads(done.stdout)
    assert [e["seq"] for e in data["events"]] == [e.seq for e in trace.events]


def test_the_minimal_detectable_drop_stands_beside_the_headline(
    runs: dict[str, StoredRun],
) -> None:
    stored = runs["clinical"]
    inputs = gather(stored.run, suite=stored.suite)
    cards = re.compile(
        r'<div class="label">([^<]*)</div><div class="value">([^<]*)</div>'
        r'<div class="note">([^<]*)</div>'
    )

    def shown(mde: float | None, tasks: int) -> list[tuple[str, str, str]]:
        summary = inputs.summary.model_copy(update={"mde": mde, "icc": 0.25, "tasks": tasks})
        inputs.summary = summary
        return cards.findall(render_html(inputs, stored.trace))

    found = shown(0.1234, 30)
    labels = [label for label, _, _ in found]
    # right after the success card, with its interval
    assert labels[labels.index("task success (pass@1)") + 1] == "minimal detectable drop"
    (card,) = [c for c in found if c[0] == "minimal detectable drop"]
    assert card[1] == pct(0.1234) and "80% power" in card[2] and "ICC 0.25" in card[2]
    (card,) = [c for c in shown(None, 3) if c[0] == "minimal detectable drop"]
    assert card[1:] == ("none", "too few tasks to detect any drop")

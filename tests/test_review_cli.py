"""The desk's commands and what its labels change elsewhere: `proctor review ...`,
`compare --human`, and reports (people beside graders; big runs linking to the desk)."""

from __future__ import annotations

import csv
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from conftest import proctor
from desk_support import desk_client, queue, reviewer, run_clinical, sign_in
from proctor import Store
from proctor.labels.agreement import human_figures
from proctor.labels.ground_truth import run_truth
from proctor.report.html import render_html
from proctor.report.inputs import gather
from proctor.store import desk
from proctor.store.export import RunData


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two clinical runs; every queued trial of the candidate failed by a reviewer."""
    path = tmp_path_factory.mktemp("cli") / "p.db"
    with Store(path) as store:
        base = run_clinical(store, "perfect", trials=2)
        cand = run_clinical(store, "sloppy", trials=3)
        items = queue(store, cand, share=0.0)
        alice = sign_in(desk_client(path), reviewer(store, "alice"))
        for _ in range(items):
            went = alice.post(f"/runs/{cand.run_id}/next", {}, follow_redirects=False)
            page = alice.client.get(went.headers["location"]).text
            assignment = re.search(r"/assignments/(\d+)/label", page)
            assert assignment is not None
            alice.post(
                f"/assignments/{assignment.group(1)}/label",
                {"verdict_0": "fail", "reason": "wrong_outcome", "note": "step 2"},
            )
        figures = human_figures(run_truth(store, cand.run_id), cand.results)
        keys = {(i.task_id, i.trial) for i, *_ in desk.items_page(store, cand.run_id, 0, -1, 999)}
    return {
        "path": path,
        "base": base,
        "cand": cand,
        "items": items,
        "keys": keys,
        "figures": figures,
    }


def test_human_figures_follow_the_labels(labelled: dict[str, Any]) -> None:
    cand: RunData = labelled["cand"]
    h = labelled["figures"]
    labelled_trials = [r for r in cand.results if (r.task_id, r.trial) in labelled["keys"]]
    valid = [r for r in labelled_trials if r.valid]
    assert h["trials"] == len(valid) > 0
    assert h["human_success"] == 0.0  # every label says fail
    passing = sum(r.passed for r in valid)
    assert 0 < passing < len(valid)  # the queue holds passed (sampled, high-risk) trials too
    assert h["false_pass"] == passing and h["false_fail"] == 0
    assert h["automated_success"] == pytest.approx(passing / len(valid))


def test_compare_human_puts_people_beside_graders(labelled: dict[str, Any]) -> None:
    store, base, cand = str(labelled["path"]), labelled["base"], labelled["cand"]
    out = proctor("compare", base.run_id, cand.run_id, "--store", store, "--human", "--json")
    assert out.returncode == 0, out.stderr
    human = json.loads(out.stdout)["human"]
    assert human["candidate"] == labelled["figures"]
    assert human["baseline"]["trials"] == 0  # nobody labelled the baseline
    table = proctor("compare", base.run_id, cand.run_id, "--store", store, "--human")
    assert "human-adjudicated vs automated success" in table.stdout
    exported = Path(store).parent / "base.jsonl"
    proctor("export", base.run_id, "--out", str(exported), "--store", store)
    missing = proctor(
        "compare", str(exported), str(exported), "--store", "/nonexistent/p.db", "--human"
    )
    assert missing.returncode == 2 and "--human reads the review desk's labels" in missing.stderr


def test_reports_show_human_adjudicated_success(labelled: dict[str, Any], tmp_path: Path) -> None:
    store, cand = str(labelled["path"]), labelled["cand"]
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    out = proctor("report", cand.run_id, "--store", store, "--html", str(html), "--md", str(md))
    assert out.returncode == 0, out.stderr
    h = labelled["figures"]
    sentence = f"On {h['trials']} trials with ground truth from the review desk"
    assert "human-adjudicated success" in html.read_text() and sentence in html.read_text()
    text = md.read_text()
    assert sentence in text and f"failed {h['false_fail']} that people passed" in text


def test_export_writes_what_calibrate_reads(labelled: dict[str, Any], tmp_path: Path) -> None:
    store, cand = str(labelled["path"]), labelled["cand"]
    out_file = tmp_path / "labels.csv"
    out = proctor("review", "export", cand.run_id, "--out", str(out_file), "--store", store)
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(out_file.open(encoding="utf-8")))
    assert len(rows) == labelled["items"]
    assert {(r["label"], r["labeller"]) for r in rows} == {("fail", "alice")}
    assert all(re.fullmatch(r"risk:(low|medium|high)", r["slice"]) for r in rows)
    results = {f"{cand.run_id}/{r.task_id}#{r.trial}" for r in cand.results}
    assert {r["item"] for r in rows} <= results
    final = tmp_path / "final.jsonl"
    proctor("review", "export", cand.run_id, "--out", str(final), "--final", "--store", store)
    truth = [json.loads(line) for line in final.read_text().splitlines()]
    assert {t["item"] for t in truth} == {r["item"] for r in rows}
    assert {t["labeller"] for t in truth} == {"final"}
    bad = proctor(
        "review", "export", cand.run_id, "--out", str(tmp_path / "x.txt"), "--store", store
    )
    assert bad.returncode == 2 and "the labels file is .csv or .jsonl" in bad.stderr


def test_serve_refuses_other_addresses_and_says_which_extra(
    labelled: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = str(labelled["path"])
    out = proctor("review", "serve", "--host", "0.0.0.0", "--store", store)
    assert out.returncode == 2 and "--allow-remote" in out.stderr and "Traceback" not in out.stderr
    pairs = proctor("review", "serve", "--pairs", "--store", store)
    assert pairs.returncode == 2 and "--pairs needs --baseline" in pairs.stderr
    bad_config = Path(store).parent / "desk.yaml"
    bad_config.write_text("scale: {kind: stars}\n")
    config = proctor("review", "serve", "--config", str(bad_config), "--store", store)
    assert config.returncode == 2 and f"{bad_config}:1: scale.kind" in config.stderr

    import importlib.util

    from proctor.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "starlette" else real(name)
    )
    result = CliRunner().invoke(main, ["review", "serve", "--store", store])
    assert result.exit_code == 2
    assert "pip install 'proctor[review]'" in result.output


def test_add_reviewer_prints_a_link_and_refuses_bad_names(labelled: dict[str, Any]) -> None:
    store = str(labelled["path"])
    out = proctor("review", "add-reviewer", "dora", "--store", store, "--url", "http://h:1")
    assert out.returncode == 0
    assert re.search(r"^http://h:1/signin\?token=[\w-]{40,}$", out.stdout, re.M)
    again = proctor("review", "add-reviewer", "dora", "--store", store)
    assert "given a new link" in again.stdout
    bad = proctor("review", "add-reviewer", "<b>x</b>", "--store", store)
    assert bad.returncode == 2 and "reviewer name" in bad.stderr


def test_reviewers_are_listed_removed_and_their_links_expire(
    labelled: dict[str, Any], tmp_path: Path
) -> None:
    store = str(tmp_path / "p.db")
    with sqlite3.connect(labelled["path"]) as source, sqlite3.connect(store) as copy:
        source.backup(copy)
    from proctor.cli import main

    def review(*args: str) -> Any:
        return CliRunner().invoke(main, ["review", *args, "--store", store])

    out = review("add-reviewer", "erin", "--link-hours", "2")
    assert out.exit_code == 0 and "works 2 h" in out.output
    for hours in ("0", "-1", "nan", "100000"):
        bad = review("add-reviewer", "erin", "--link-hours", hours)
        assert bad.exit_code == 2 and "--link-hours" in bad.output
    listed = review("list-reviewers").output
    erin = next(line for line in listed.splitlines() if line.startswith("erin "))
    assert "reviewer" in erin and "works until" in erin
    alice = next(line for line in listed.splitlines() if line.startswith("alice "))
    assert alice.split()[-2:] == [str(labelled["items"]), "1"]  # items labelled, a session
    gone = review("remove-reviewer", "erin")
    assert gone.exit_code == 0 and "removed" in gone.output
    listed = review("list-reviewers").output
    assert "removed" in next(line for line in listed.splitlines() if line.startswith("erin "))
    again = review("remove-reviewer", "erin")
    assert again.exit_code == 2 and "no reviewer 'erin'" in again.output


def test_big_runs_embed_failed_and_queued_traces_and_link_the_rest(
    labelled: dict[str, Any],
) -> None:
    cand: RunData = labelled["cand"]
    with Store(labelled["path"]) as store:
        inputs = gather(cand)

        def load(task: str, trial: int) -> Any:
            return store.trace(cand.run_id, task, trial)[0]

        whole = render_html(inputs, load, embed_limit=len(cand.results))
        part = render_html(inputs, load, embed_limit=10, desk_url="http://desk:9")
    blobs = re.compile(r'<script type="application/json" id="trial-(\d+)">')
    assert len(blobs.findall(whole)) == len(cand.results)
    ordered = sorted(cand.results, key=lambda r: (r.task_id, r.trial))
    queued = {(i["task_id"], i["trial"]) for i in inputs.queue["items"]}
    want = {n for n, r in enumerate(ordered) if not r.passed or (r.task_id, r.trial) in queued}
    assert {int(n) for n in blobs.findall(part)} == want < set(range(len(ordered)))
    links = re.findall(r'href="(http://desk:9/runs/[^"]+)"', part)
    rest = [r for n, r in enumerate(ordered) if n not in want]
    assert sorted(links) == sorted(
        f"http://desk:9/runs/{cand.run_id}/trials/{r.task_id}/{r.trial}" for r in rest
    )
    assert f"the report embeds the {len(want)} traces" in part


def test_serve_queues_runs_and_serves_the_desk(labelled: dict[str, Any], tmp_path: Path) -> None:
    import os
    import shutil
    import socket
    import subprocess
    import sys
    import time

    import httpx

    from conftest import ROOT

    store = tmp_path / "p.db"
    for part in ("", "-wal"):  # the store and what its log holds yet
        if Path(f"{labelled['path']}{part}").exists():
            shutil.copy(f"{labelled['path']}{part}", f"{store}{part}")
    base, cand = labelled["base"], labelled["cand"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = ["--store", str(store), "--port", str(port), "--run", cand.run_id]
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "proctor.cli",
            "review",
            "serve",
            *args,
            "--baseline",
            base.run_id,
            "--pairs",
            "--sample-rate",
            "1",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, server.communicate()
            try:
                page = httpx.get(f"http://127.0.0.1:{port}/signin", timeout=5)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the desk did not start"
                time.sleep(0.2)
        assert page.status_code == 200 and page.headers["x-content-type-options"] == "nosniff"
    finally:
        server.terminate()
        out, err = server.communicate(timeout=30)
    assert re.search(rf"run {cand.run_id}: \d+ blinded pairs routed \(\d+ new\)", out), out + err
    assert f"review desk on http://127.0.0.1:{port}" in out
    with Store(store) as opened:
        items = desk.items_page(opened, cand.run_id, 0, -1, 999)
    pairs = [i for i, *_ in items if i.is_pair]
    assert pairs and all(i.other_run_id == base.run_id for i in pairs)

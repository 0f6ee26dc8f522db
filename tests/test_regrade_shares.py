"""A regrade's shares (store/shares.py): what grading in this process inserts as rows and
what a worker process packs must give every check, with its evidence, and the summary
that the run's own grading gave: examples' suites, a workload like the benchmark's, and
rows of any value."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proctor import Runner, Store, load_agent, load_suite
from proctor.core.results import NOT_MEASURED, UNDECIDED, TrialResult
from proctor.core.summary import RunSummary
from proctor.decide.summarize import Tally
from proctor.run import regrade as regrade_module
from proctor.run.pool import InlinePool, ProcessPool
from proctor.run.regrade import regrade
from proctor.store import sqlite as sqlite_module
from proctor.store.shares import EncodedShare, ShareVerdicts, detach_shares, insert_share
from proctor.store.sqlite import EncodedTrial
from store_sql import sql

ROOT = Path(__file__).resolve().parents[1]
#: A regraded trial's stored checks with no digest (a store of schema 4): nothing shared.
NOTHING_STORED = (0, None)
EXAMPLES = ROOT / "examples"


def every_trial(store: Store, run_id: str) -> dict[tuple[str, int], dict[str, Any]]:
    """Each trial's result as stored, checks with their evidence, without its run id."""
    return {
        (r.task_id, r.trial): {k: v for k, v in r.to_dict().items() if k != "run_id"}
        for r in store.trial_results(run_id)
    }


def summary_of(summary: RunSummary) -> dict[str, Any]:
    return {k: v for k, v in summary.to_json().items() if k not in ("run_id", "status")}


def regraded_like_their_run(store: Store, run_id: str, suite: Any, summary: RunSummary) -> None:
    """Regrade in this process, in one worker process (its shares as tuples) and in two
    (packed), several shares each: every trial and the summary are the run's own."""
    graded = every_trial(store, run_id)
    for pool in (InlinePool(), ProcessPool(1), ProcessPool(2)):
        with pool:
            done = regrade(store, run_id, suite, pool=pool)
        assert not done.flips
        assert every_trial(store, done.run_id) == graded
        assert summary_of(done.summary) == summary_of(summary)


@pytest.mark.parametrize(
    ("example", "agent"),
    [
        ("support", "careless"),
        ("rooms", "hasty"),
        ("incident", "naive"),
        ("adversarial", "gullible"),
        ("clinical", "gullible"),
        ("kyc", "hasty"),
    ],
)
def test_a_regraded_example_has_every_check_and_the_summary_of_its_run(
    example: str, agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = load_suite(EXAMPLES / example)
    store = Store(tmp_path / "p.db")
    played = load_agent(f"{EXAMPLES / example / 'agents.py'}:{agent}")
    report = Runner(suite, played, trials=2, seed=1, store=store).run()
    assert {r.status for r in report.results} - {"passed"}  # some verdicts are not passes
    monkeypatch.setattr(regrade_module, "SHARE", 5)
    regraded_like_their_run(store, report.run_id, suite, report.summary)


def test_a_regraded_workload_has_every_check_and_the_summary_of_its_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The benchmark's workload (benchmarks/workload.py), its suite written as files for
    the worker processes: no two trials alike (simulated latency differs)."""
    bench = runpy.run_path(str(ROOT / "benchmarks" / "workload.py"))
    bench["write_suite"](tmp_path / "suite", 30)
    suite = load_suite(tmp_path / "suite")
    store = Store(tmp_path / "p.db")
    report = Runner(suite, bench["workload"](30)[1], trials=3, concurrency=4, store=store).run()
    monkeypatch.setattr(regrade_module, "SHARE", 16)
    regraded_like_their_run(store, report.run_id, suite, report.summary)


_TEXT = st.text(max_size=30)
_ROW = st.tuples(
    st.integers(-(2**63), 2**63 - 1),  # seed
    st.sampled_from(["passed", "failed", "partial", "timeout", "error"]),
    st.floats(allow_nan=False, allow_infinity=False),  # score
    st.floats(0, 1e6),  # latency
    st.none() | st.floats(0, 1e6),  # simulated
    _TEXT,  # trace id
    st.none() | _TEXT,  # error
)
_CHECK = st.tuples(
    _TEXT,  # name
    st.sampled_from(["outcome", "answer", "trajectory", "safety"]),
    st.booleans(),
    st.integers(-5, 5) | st.floats(allow_nan=False, allow_infinity=False),  # score
    st.none() | st.sampled_from(["low", "high", "critical"]),
    st.none() | st.booleans() | _TEXT,  # evidence: whether it says undecided
)

#: A check of few values: lists of them often differ in one value only.
_NEAR_CHECK = st.tuples(
    st.just("a"),
    st.just("outcome"),
    st.booleans(),
    st.sampled_from([1, 1.0, 0.0, -0.0]),
    st.none() | st.just("high"),
    st.none() | st.sampled_from([True, "x"]),
)


def _share(rows: list[Any], checks: list[list[Any]]) -> EncodedShare:
    share = EncodedShare()
    for trial, status in _trials(rows, checks):
        share.add(trial, status, NOTHING_STORED)
    return share


def _trials(rows: list[Any], checks: list[list[Any]]) -> list[tuple[EncodedTrial, str]]:
    """Trials as `encode_trial` makes them, each its own list of checks' rows."""
    trials = []
    for place, ((seed, status, score, latency, simulated, trace_id, error), its) in enumerate(
        zip(rows, checks, strict=True)
    ):
        row = ("r", f"t{place}", 0, seed, status, score, latency, simulated, trace_id,
               '{"model_calls":1}', '{"m":1.5}', error, None, None, None)  # fmt: skip
        encoded = []  # the score a real, as `encode_trial` writes it
        for idx, (name, kind, passed, c_score, severity, said) in enumerate(its):
            evidence = json.dumps({UNDECIDED: said} if said is not None else {"n": name})
            encoded.append((idx, name, kind, int(passed), c_score + 0.0, severity, evidence))
        trials.append((EncodedTrial(row, encoded), status))
    return trials


def _results(verdicts: ShareVerdicts) -> list[TrialResult]:
    """A share's results as a run's tally keeps them."""
    tally = Tally()
    return [result for result, _ in verdicts.results(tally.checks_of, tally.metrics_of)]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.lists(_NEAR_CHECK, max_size=2), min_size=2, max_size=4),
    st.lists(st.lists(_CHECK, max_size=4), max_size=2),
    st.lists(st.tuples(_ROW, st.integers(0, 5)), min_size=1, max_size=8),
)
def test_a_packed_share_stores_the_rows_a_share_of_tuples_stores(
    near: list[list[Any]], free: list[list[Any]], trials: list[tuple[Any, int]]
) -> None:
    """A worker's packed image, copied in SQL, leaves the same rows, of the same SQLite
    types and rowids, as the rows inserted from Python; and reads back the same results.
    Trials draw their checks from a few lists, so that some make the same checks (each
    list is packed once) and some do not; lists of few values differ in one value."""
    lists = near + free
    checks = [lists[at % len(lists)] for _, at in trials]
    _packed_stores_what_tuples_store([row for row, _ in trials], checks)


def test_checks_equal_but_for_their_type_or_a_zeros_sign_are_stored_as_each_trial_made_them() -> (
    None
):
    """Trials whose checks compare equal share one list, as tuples and packed: a score of
    1 and 1.0, or 0.0 and -0.0, must still be stored as each trial's own rows are (the
    column is a real: both alike)."""
    row = (0, "failed", 0.0, 0.1, None, "id", None)
    scores = (1, 1.0, True, 0.0, -0.0, 0)
    checks = [[("c", "outcome", False, score, None, None)] for score in scores]
    _packed_stores_what_tuples_store([row] * len(scores), checks)


def _packed_stores_what_tuples_store(rows: list[Any], checks: list[list[Any]]) -> None:
    """The trials as tuples and packed store what each trial alone (its own list of
    checks, a share of one) stores."""
    share = _share(rows, checks)
    alone = [EncodedShare() for _ in rows]
    for one, (trial, status) in zip(alone, _trials(rows, checks), strict=True):
        one.add(trial, status, NOTHING_STORED)
    stored = []
    for forms in (alone, [share], [share.packed()]):
        store = Store(":memory:")
        store.create_run("r", {})
        store.begin()
        back = [result for form in forms for result in _results(insert_share(store, form))]
        store.commit()
        detach_shares(store)
        db = sql(store)
        stored.append(
            (
                db.execute("SELECT *, typeof(score), typeof(simulated_s) FROM trials").fetchall(),
                db.execute("SELECT *, typeof(score) FROM checks").fetchall(),
                back,
            )
        )
    assert stored[0] == stored[1] == stored[2]
    assert len(stored[0][1]) == sum(map(len, checks))


def test_a_shares_results_keep_what_a_summary_reads_of_each_checks_own_evidence() -> None:
    """Checks alike but for their evidence are kept apart where a summary reads it: one
    whose evidence only mentions the word `undecided` (agent text echoed) is decided, the
    next one is not; a budget not measured stays not measured."""
    row = (
        "r",
        "t0",
        0,
        1,
        "failed",
        0.0,
        0.1,
        None,
        "id",
        "{}",
        "{}",
        None,
        None,
        None,
        None,
        None,
    )
    evidences = [{"said": UNDECIDED}, {UNDECIDED: "negation unreadable"}, {"n": "x"}]
    checks = [
        (idx, "mentions:done", "answer", 0, 0.0, None, json.dumps(evidence))
        for idx, evidence in enumerate(evidences)
    ]
    budget = {"limit": 1.0, "actual": NOT_MEASURED}
    checks.append((3, "max_cost_usd", "budget", 0, 0.0, None, json.dumps(budget)))
    share = EncodedShare()
    share.add(EncodedTrial(row, checks), "failed", NOTHING_STORED)
    [result] = _results(share.verdicts)
    assert [c.undecided for c in result.checks] == [False, True, False, False]
    assert result.checks[3].evidence == {"actual": NOT_MEASURED}


def test_a_share_inserted_a_few_rows_to_a_statement_stores_the_same_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`insert_many` splits a share's trials and checks into INSERTs of ROWS_AT_ONCE rows
    (lowered here to split them): rows, rowids and SQLite types as from one INSERT each."""
    rows = [(i, "failed" if i % 2 else "passed", 0.5, 1.0, None, f"id{i}", None) for i in range(7)]
    checks = [
        [(f"c{j}", "outcome", j % 2 == 0, j, None, None) for j in range(i % 4)] for i in range(7)
    ]
    share = _share(rows, checks)
    stored = []
    for at_once in (sqlite_module.ROWS_AT_ONCE, 2):
        monkeypatch.setattr(sqlite_module, "ROWS_AT_ONCE", at_once)
        for form in (share, share.packed()):
            store = Store(":memory:")
            store.create_run("r", {})
            store.begin()
            insert_share(store, form)
            store.commit()
            db = sql(store)
            stored.append(
                (
                    db.execute("SELECT *, typeof(simulated_s) FROM trials ORDER BY id").fetchall(),
                    db.execute("SELECT * FROM checks ORDER BY trial_rowid, idx").fetchall(),
                )
            )
    assert len(stored[0][0]) == 7 and len(stored[0][1]) == sum(map(len, checks))
    assert all(rows_and_checks == stored[0] for rows_and_checks in stored)


def test_trials_whose_checks_read_alike_share_one_list_across_shares() -> None:
    """A share hands back each distinct list of checks once, and the run's tally keeps one
    list for it across shares (what keeps a regrade's memory small); checks differing only
    in evidence a summary does not read are alike, one that the reader could not tell is
    not, nor are the trials' own figures shared."""
    tally = Tally()
    kept = []
    for place in range(2):  # two shares of two trials each
        share = EncodedShare()
        for trial, said in enumerate(("a", "b")):
            row = ("r", "t", 2 * place + trial, 1, "failed", 0.5, 0.1 * (trial + 1), None, "id",
                   '{"model_calls":1}', '{"m":1.5}', "boom", None, None, None)  # fmt: skip
            read = {UNDECIDED: said} if place else {}
            checks = [
                (0, "outcome", "outcome", 0, 0.0, None, json.dumps({"said": said})),
                (1, "mentions:x", "answer", 1, 1.0, None, json.dumps(read)),
            ]
            share.add(EncodedTrial(row, checks), "failed", NOTHING_STORED)
        assert len(share.verdicts.checks) == 1
        kept += [result for result, _ in share.verdicts.results(tally.checks_of, tally.metrics_of)]
    assert kept[0].checks is kept[1].checks and kept[2].checks is kept[3].checks
    assert kept[0].checks is not kept[2].checks and kept[2].checks[1].undecided
    assert kept[0].metrics is kept[3].metrics == {"m": 1.5}
    assert [r.latency_s for r in kept] == [0.1, 0.2, 0.1, 0.2] and {r.error for r in kept} == {None}

"""Golden verdicts: every example suite run by each of its agents, and regraded, as JSON.

A refactoring of how a trial is graded or decided must leave every trial's status, score,
checks (with their evidence) and metrics as they were, and every run's summary (less its
id and wall time) as it was. Run this before the change (`--out
before.json`) and after (`--out after.json`), then `--compare before.json after.json`: it
prints each trial whose verdict moved and exits 1 if any did. KYC runs twice, once with
its scripted careful judge, so the judge path is covered; every run is also regraded, so `regrade`'s
path is too.

    python benchmarks/golden_verdicts.py --out before.json [--trials 2]
    python benchmarks/golden_verdicts.py --compare before.json after.json
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from proctor import Runner, Store, load_suite
from proctor.agents import load_agent
from proctor.judge.cache import JudgeCache
from proctor.judge.calibration_records import CalibrationPolicy
from proctor.judge.grader import Judging
from proctor.judge.judge_refs import load_panel
from proctor.run.regrade import regrade

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

#: (suite path, agent, judge or None), relative to examples/.
PLAN = [
    ("support", "support/agents.py:scripted", None),
    ("support", "support/agents.py:careless", None),
    ("clinical", "clinical/agents.py:perfect", None),
    ("clinical", "clinical/agents.py:scripted", None),
    ("clinical", "clinical/agents.py:sloppy", None),
    ("clinical", "clinical/agents.py:gullible", None),
    ("incident", "incident/agents.py:careful", None),
    ("incident", "incident/agents.py:naive", None),
    ("incident", "incident/agents.py:optimistic", None),
    ("rooms", "rooms/agents.py:careful", None),
    ("rooms", "rooms/agents.py:hasty", None),
    ("adversarial", "adversarial/agents.py:guarded", None),
    ("adversarial", "adversarial/agents.py:gullible", None),
    ("kyc/tasks/cases.yaml", "kyc/agents.py:hasty", "kyc/judges.py:careful"),
    ("kyc/tasks/cases_strict.yaml", "kyc/agents.py:mistake_proofed", None),
]


#: What judging equal requests spent: which of two concurrent trials reaches the judge cache
#: first is the scheduler's order, not the verdict, so it is left out.
JUDGE_SPEND = ("judge_cache_hits", "judge_calls", "judge_cost_usd", "judge_input_tokens")
JUDGE_SPEND += ("judge_output_tokens",)


#: What differs between two summaries of the same verdicts: the run's id and its wall time.
SUMMARY_VOLATILE = ("run_id", "wall_time_s")


#: In a judge check's evidence, when its calibration was recorded (each run calibrates
#: anew); and whether a member's answer came from the cache (the scheduler's order).
_CALIBRATED_AT = re.compile(r" \(\d{4}-\d\d-\d\dT[\d:]+Z\)")


def _evidence(evidence: Any) -> Any:
    """The evidence less what differs between two runs of the same verdicts."""
    if not isinstance(evidence, dict) or "standing" not in evidence:
        return evidence
    kept = {**evidence, "standing": _CALIBRATED_AT.sub("", str(evidence["standing"]))}
    if isinstance(evidence.get("members"), list):
        kept["members"] = [
            {k: v for k, v in m.items() if k != "cached"} if isinstance(m, dict) else m
            for m in evidence["members"]
        ]
    return kept


def _trials(store: Store, run_id: str) -> dict[str, Any]:
    return {
        f"{r.task_id}#{r.trial}": {
            "status": r.status,
            "score": r.score,
            "error": r.error,
            "metrics": {k: v for k, v in sorted(r.metrics.items()) if k not in JUDGE_SPEND},
            "checks": [
                [c.name, c.kind, c.passed, c.score, c.severity, _evidence(c.evidence)]
                for c in r.checks
            ],
        }
        for r in store.trial_results(run_id)
    }


def _summary(summary: Any) -> dict[str, Any]:
    """A run's summary as one entry, less what differs between two runs of it."""
    data = summary.model_dump(mode="json")
    return {"summary": {k: v for k, v in data.items() if k not in SUMMARY_VOLATILE}}


def _judging(ref: str, suite: Any, store: Store) -> Judging:
    """The judge `ref`, calibrated on KYC's labels first (so its checks decide)."""
    kyc = EXAMPLES / "kyc"
    calibrate = [str(Path(sys.executable).parent / "proctor"), "calibrate"]
    calibrate += [str(kyc / "rubrics/document-request.yaml"), "--labels", str(kyc / "labels.csv")]
    calibrate += ["--items", str(kyc / "messages.yaml"), "--judge", str(EXAMPLES / ref)]
    subprocess.run([*calibrate, "--store", str(store.path)], check=True, capture_output=True)
    panel = load_panel([str(EXAMPLES / ref)], "mean", JudgeCache(store))
    rubrics = [r for t in suite.tasks for r in t.rubrics]
    return Judging.prepare(panel, [ref], rubrics, store, CalibrationPolicy(), None)


def golden(trials: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "golden.db")
        for path, agent, judge in PLAN:
            suite = load_suite([EXAMPLES / path])
            judging = _judging(judge, suite, store) if judge else None
            report = Runner(
                suite,
                load_agent(str(EXAMPLES / agent)),
                trials=trials,
                store=store,
                seed=0,
                judging=judging,
            ).run()
            key = f"{path} {agent}"
            out[key] = _trials(store, report.run_id)
            out[f"{key} summary"] = _summary(report.summary)
            again = regrade(store, report.run_id, suite, judging=judging)
            out[f"{key} regraded"] = _trials(store, again.run_id)
            out[f"{key} regraded summary"] = _summary(again.summary)
        store.close()
    return out


def compare(before: dict[str, Any], after: dict[str, Any]) -> int:
    moved = 0
    for run in sorted(set(before) | set(after)):
        old, new = before.get(run, {}), after.get(run, {})
        for trial in sorted(set(old) | set(new)):
            if old.get(trial) != new.get(trial):
                moved += 1
                print(f"{run} {trial}:")
                for path, was, now in _differences(old.get(trial), new.get(trial), ""):
                    print(f"  {path or '.'}: {was!r} -> {now!r}")
    total = sum(len(v) for v in before.values())
    print(f"{moved} of {total} trials and summaries moved across {len(before)} entries")
    return 1 if moved else 0


def _differences(old: Any, new: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    """The leaves where `old` and `new` differ, by their path (a summary is large)."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new), key=str):
            yield from _differences(old.get(key), new.get(key), f"{path}.{key}")
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            yield from _differences(a, b, f"{path}[{i}]")
    elif old != new:
        yield path, old, new


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--compare", nargs=2, type=Path)
    args = parser.parse_args()
    if args.compare:
        a, b = (json.loads(p.read_text()) for p in args.compare)
        return compare(a, b)
    args.out.write_text(json.dumps(golden(args.trials), indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())

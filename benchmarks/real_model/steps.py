"""The steps of `make real-model` as the README's table: what each step measured and how
long it took, from figures.json's "steps" (run.py writes each step's entry as it ends, so
`--only judge` refreshes that row and keeps the others).

Figures come from the run's own JSON summary and calibration record, never typed: a step
that did not run says so.
"""

from __future__ import annotations

from typing import Any

#: The table's rows: step name, its label.
ROWS = (
    ("install", "install (pip + npm)"),
    ("server", "server start"),
    ("agent", "support suite, model as agent"),
    ("judge", "KYC rubric, model as judge"),
    ("calibrate", "`proctor calibrate`, model as judge"),
    ("user", "scenario tasks, model as the simulated user (below)"),
)


def agent_figures(summary: dict[str, Any]) -> dict[str, Any]:
    """What the agent step's run summary says: trials passed, tokens, seconds per trial."""
    latency, tokens = summary.get("latency_s") or {}, summary.get("tokens") or {}
    return {
        "trials": summary["trials"],
        "passed": summary["passed_trials"],
        "tokens": tokens.get("total"),
        "mean_s": latency.get("mean"),
        "p95_s": latency.get("p95"),
    }


def judge_figures(summary: dict[str, Any]) -> dict[str, Any]:
    """What the judge step's run summary says of its judge: calls, tokens, verdicts."""
    judges = summary["judges"]
    return {
        "trials": summary["trials"],
        "calls": judges["calls"],
        "input_tokens": judges["input_tokens"],
        "output_tokens": judges["output_tokens"],
        "checks": judges["checks"],
        "passed": round((judges["pass_rate"] or 0) * judges["checks"]),
        "advisory": judges["advisory_checks"] == judges["checks"],
    }


def calibrate_figures(record: dict[str, Any]) -> dict[str, Any]:
    """What `proctor calibrate --json` decided, with the figures it decided on."""
    f = record["figures"]
    kept = ("items", "judge_errors", "agreement", "kappa", "kappa_ci", "false_pass_rate")
    return {
        **{key: f[key] for key in kept},
        "false_pass_upper": f["false_pass_upper"],
        "accepted": record["accepted"],
        "refusals": record["refusals"],
    }


def steps_block(entries: dict[str, Any]) -> str:
    """The table of steps, from figures.json; a step never run says so."""
    steps = entries.get("steps", {})
    if not steps:
        return "Not measured yet: `make real-model`.\n"
    lines = ["| step | figures | time | measured |", "| --- | --- | --- | --- |"]
    for name, label in ROWS:
        step = steps.get(name)
        if step is None:
            lines.append(f"| {label} | not run yet | | |")
            continue
        when = f"{step['date']}, load {step['load'][0]:.1f}–{step['load'][1]:.1f}"
        took = "" if step["figures"].get("cached") else _time(step["s"])
        lines.append(f"| {label} | {_shown(name, step)} | {took} | {when} |")
    return "\n".join(lines) + "\n"


def _shown(name: str, step: dict[str, Any]) -> str:
    f = step.get("figures", {})
    if name == "install":
        cached = " (installed before: its time not measured)" if f.get("cached") else ""
        return f"{f['model_mb']:.0f} MB model{cached}"
    if name == "agent":
        tokens, mean, p95 = (_or_dash(f[k], fmt) for k, fmt in _AGENT)
        return (
            f"{f['trials']} trials: {f['passed']}/{f['trials']} passed; {tokens} tokens; "
            f"{mean} mean, {p95} p95 per trial"
        )
    if name == "judge":
        per_call = _or_dash(step["s"] / f["calls"] if f["calls"] else None, "{:.0f} s")
        read, written = (_or_dash(f[k], "{:,.0f}") for k in ("input_tokens", "output_tokens"))
        kind = " (advisory)" if f["advisory"] else ""
        return (
            f"{f['trials']} trials: {f['calls']} judge calls, {read} + {written} tokens "
            f"({per_call} per call); {f['passed']}/{f['checks']} requests passed{kind}"
        )
    if name == "calibrate":
        low, high = f["kappa_ci"]
        verdict = "accepted" if f["accepted"] else "REFUSED: " + "; ".join(f["refusals"])
        return (
            f"{f['items']} agreed items, agreement {f['agreement']:.0%}, kappa {f['kappa']:.2f} "
            f"[{low:.2f}, {high:.2f}], false pass {f['false_pass_rate']:.1%} (upper bound "
            f"{f['false_pass_upper']:.1%}): {verdict}; {f['judge_errors']} judge errors"
        )
    if name == "user":
        return f"{f['trials']} trials (the block below)"
    return ""


#: The agent row's figures and their formats.
_AGENT = (("tokens", "{:,.0f}"), ("mean_s", "{:.0f} s"), ("p95_s", "{:.0f} s"))


def _or_dash(value: float | None, fmt: str) -> str:
    """`value` formatted, or a dash where the run did not measure it."""
    return "—" if value is None else fmt.format(value)


def _time(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"

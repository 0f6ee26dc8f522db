"""The simulated-user step of `make real-model`: what a real small model does as the user
of the support suite's scenario tasks, and what the guards and `sim_error` make of it.

The agent is the support example's scripted `conversational` agent, so the user is the
only model in the run. Per trial: its status (`sim_error` or not), every reply the guards
rejected by guard kind (the `user_rejected` notes of its trace), the replies delivered
(the `user_sim` notes), and the user model's calls, tokens and seconds, which the local
server logs per request with the request's seed (`server.mjs`): a trial's requests are
those with its user seed (proctor.run.simulator.user_seed). The figures go to
benchmarks/real_model/figures.json, whose `user` entry examples/figures.py renders into
README "Local models" (`user_block`); tests/test_real_model_users.py checks the counting
with the loopback users, without a model.
"""

from __future__ import annotations

import datetime
import json
import os
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from proctor.env.suite import load_suite
from proctor.run.simulator import user_seed
from proctor.stats.rates import wilson_interval
from proctor.store import Store

#: How many delivered messages the figures quote, most common first.
QUOTED = 4


@dataclass
class UserTrial:
    """One trial's simulated user, as its trace and the server's request log have it."""

    task_id: str
    trial: int
    status: str
    #: Guard kind -> rejected replies that broke it (a reply may break several).
    rejections: dict[str, int] = field(default_factory=dict)
    rejected: int = 0
    delivered: list[str] = field(default_factory=list)
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: list[float] = field(default_factory=list)


def scenario_tasks(suite: Path) -> list[str]:
    """The ids of the suite's tasks with a `user:` scenario (the ones a model user plays)."""
    return sorted(t.id for t in load_suite(suite).tasks if t.task.user.scenario)


def read_requests(log: Path) -> list[dict[str, Any]]:
    """The server's request log (one JSON object a line); empty when it was never written."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def user_trials(store: Path, run_id: str, requests: Iterable[dict[str, Any]]) -> list[UserTrial]:
    """Every trial of `run_id`, with its user's rejections, replies and requests."""
    by_seed: dict[int | None, list[dict[str, Any]]] = defaultdict(list)
    for request in requests:
        by_seed[request.get("seed")].append(request)
    trials = []
    with Store(store) as db:
        for result in sorted(db.trial_results(run_id), key=lambda r: (r.task_id, r.trial)):
            trace = db.trace(run_id, result.task_id, result.trial)[0]
            kinds: Counter[str] = Counter()
            user = UserTrial(result.task_id, result.trial, result.status)
            for event in trace.events:
                if event.kind != "note":
                    continue
                if "user_rejected" in event.data:
                    user.rejected += 1
                    why = event.data["user_rejected"]["why"]
                    kinds.update({reason.split(":", 1)[0] for reason in why})
                elif "attempt" in event.data.get("user_sim", {}):
                    user.delivered.append(_delivered(trace.events, event.seq))
            user.rejections = dict(kinds.most_common())
            for request in by_seed.pop(user_seed(result.task_id, result.trial), []):
                user.calls += 1
                user.input_tokens += int(request["input"])
                user.output_tokens += int(request["output"])
                user.seconds.append(float(request["seconds"]))
            trials.append(user)
    return trials


def _delivered(events: Any, after: int) -> str:
    """The user message that follows the accepted-reply note at `after`."""
    return next(
        str(e.data.get("content", ""))
        for e in events
        if e.seq > after and e.kind == "message" and e.data.get("role") == "user"
    )


def user_figures(
    trials: list[UserTrial], *, ref: str, wall_s: float, load: list[float]
) -> dict[str, Any]:
    """The step's figures, as figures.json keeps them."""
    n = len(trials)
    sim_errors = sum(t.status == "sim_error" for t in trials)
    low, high = wilson_interval(sim_errors, n) if n else (0.0, 0.0)
    kinds: Counter[str] = Counter()
    for t in trials:
        kinds.update(t.rejections)
    seconds = [s for t in trials for s in t.seconds]
    delivered = [m for t in trials for m in t.delivered]
    return {
        "date": datetime.date.today().isoformat(),
        "user_model": ref,
        "tasks": sorted({t.task_id for t in trials}),
        "trials": n,
        "statuses": dict(Counter(t.status for t in trials).most_common()),
        "sim_errors": sim_errors,
        "sim_error_rate": sim_errors / n if n else None,
        "sim_error_ci": [low, high],
        "rejected": sum(t.rejected for t in trials),
        "rejections": dict(kinds.most_common()),
        "delivered": len(delivered),
        "common": Counter(delivered).most_common(QUOTED),
        "calls": len(seconds),
        "tokens": {
            "input": sum(t.input_tokens for t in trials),
            "output": sum(t.output_tokens for t in trials),
        },
        "seconds_per_call": {
            "mean": statistics.fmean(seconds) if seconds else None,
            "max": max(seconds, default=None),
        },
        "model_seconds": sum(seconds),
        "wall_s": wall_s,
        "load": load,
        "cores": os.cpu_count(),
    }


def write_trials(trials: list[UserTrial], path: Path) -> None:
    path.write_text("".join(json.dumps(asdict(t)) + "\n" for t in trials))


def user_block(entries: dict[str, Any]) -> str:
    """README's block: the step's table and the replies the guards let through."""
    e = entries["user"]
    n, low, high = e["trials"], *e["sim_error_ci"]
    rejected = ", ".join(f"{kind} {count}" for kind, count in e["rejections"].items())
    per_call = e["seconds_per_call"]
    per_reply = e["model_seconds"] / e["delivered"] if e["delivered"] else None
    row = [
        str(n),
        f"{e['sim_errors']} ({_pct(e['sim_error_rate'])}, 95% CI {_pct(low)}–{_pct(high)})",
        " / ".join(str(e["statuses"].get(s, 0)) for s in ("passed", "failed", "error")),
        f"{e['rejected']}" + (f" ({rejected})" if rejected else ""),
        str(e["delivered"]),
        f"{e['calls']}: {e['tokens']['input']:,} / {e['tokens']['output']:,}",
        f"{_s(per_call['mean'])} / {_s(per_call['max'])}",
        _s(per_reply),
        f"{e['wall_s'] / 60:.1f} min",
    ]
    header = [
        "trials",
        "`sim_error`",
        "passed / failed / error",
        "replies rejected (by guard)",
        "replies delivered",
        "user-model calls: tokens in / out",
        "s per call (mean / max)",
        "model s per delivered reply",
        "step",
    ]
    quoted = "; ".join(f"{_quote(text)} ×{count}" for text, count in e["common"])
    return (
        f"`{e['user_model']}` as the user of {', '.join(f'`{t}`' for t in e['tasks'])} "
        f"(the `conversational` agent is scripted, so the user is the only model; "
        f"`--user-cache off`), {e['date']}, load average {e['load'][0]:.1f}–{e['load'][1]:.1f} "
        f"on {e['cores']} cores:\n\n"
        f"| {' | '.join(header)} |\n| {' | '.join('---' for _ in header)} |\n"
        f"| {' | '.join(row)} |\n\n"
        f"Delivered replies, most common first: {quoted or 'none'}.\n"
    )


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


def _s(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def _quote(text: str) -> str:
    """A delivered message as the block quotes it: one line, code-spanned, at most 60 chars."""
    flat = " ".join(text.split()).replace("`", "'")
    return f"`{flat[:57] + '...' if len(flat) > 60 else flat}`"

"""One trace in the terminal (`proctor show RUN --task ID --trial N`).

The same steps as the HTML viewer, as lines. Agent text goes through `Text` after control
characters other than newline and tab are replaced, so an answer cannot restyle the
terminal or move its cursor (rich passes ESC sequences in plain text through).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.text import Text

from proctor.core.results import TrialResult, Usage
from proctor.core.steps import check_views, step
from proctor.core.trace import Trace
from proctor.report.fmt import measured

_STYLES = {"denied": "bold red", "error": "red", "fault": "yellow"}


def safe(value: Any) -> str:
    """Text with every control character but newline and tab shown as `?`."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return "".join(ch if ch.isprintable() or ch in "\n\t" else "?" for ch in text)


def _json(value: Any) -> str:
    """A state value as JSON, so the string "41" and the number 41 read differently."""
    return safe(json.dumps(value, ensure_ascii=False, default=str))


def print_trace(result: TrialResult, trace: Trace, console: Console | None = None) -> None:
    console = console or Console()
    r, u = result, result.usage
    status_style = "green" if r.passed else "bold red"
    head = Text(f"{r.task_id} · trial {r.trial} · ", style="bold")
    head.append(r.status, style=status_style)
    simulated = f" ({r.simulated_s:.2f} s simulated)" if r.simulated_s else ""
    tokens = (
        f"{_spent(u, 'input_tokens', str)} in / {_spent(u, 'output_tokens', str)} out tokens"
        if u.total_tokens is not None
        else "tokens not measured"
    )
    head.append(
        f" · score {r.score:.2f} · {r.latency_s:.2f} s{simulated} · {tokens} · "
        f"{_spent(u, 'cost_usd', '${:.4f}'.format)} · seed {r.seed} · trace {r.trace_id}"
    )
    console.print(head)
    if r.error:
        console.print(Text(f"error: {safe(r.error)}", style="red"))
    steps = [step(e) for e in trace.events]
    console.print(Text(f"\nsteps ({len(steps)})", style="bold"))
    for s in steps:
        line = Text(f"#{s.seq:<4}{s.t:>8.2f} s  ", style="dim")
        line.append(f"{s.kind.replace('_', ' '):<16}", style="cyan")
        line.append(safe(s.text), style=_STYLES.get(s.flag, ""))
        if s.call_id:
            line.append(f"  [{safe(s.call_id)}]", style="dim")
        console.print(line)
        if s.detail is not None:
            console.print(Text("      " + safe(s.detail).replace("\n", "\n      ")))
        for change in s.changes:
            if change.existed:
                removed = f"      - {safe(change.path)}: {_json(change.before)}"
                console.print(Text(removed, style="red"))
            if change.exists:
                added = f"      + {safe(change.path)}: {_json(change.after)}"
                console.print(Text(added, style="green"))
    views = check_views(r.checks, {s.seq for s in steps})
    failed = sum(not v.check.passed for v in views)
    console.print(Text(f"\nchecks ({failed} failed of {len(views)})", style="bold"))
    for v in views:
        c = v.check
        line = Text("  ")
        line.append(
            "FAIL" if not c.passed else "pass", style="bold red" if not c.passed else "green"
        )
        line.append(f" {safe(c.name)} ({c.kind}" + (f", {c.severity}" if c.severity else ""))
        line.append(", fails the trial)" if c.blocks else ")")
        if v.steps:
            line.append(" → steps " + ", ".join(map(str, v.steps)), style="dim")
        console.print(line)
        if not c.passed:
            console.print(Text("       " + safe(c.evidence)))


def _spent(usage: Usage, name: str, show: Callable[[float], str]) -> str:
    """A trial's figure as `measured` shows it, marked ≥ where some calls left it out."""
    shown = measured(getattr(usage, name), show)
    return f"≥ {shown}" if name in usage.partial else shown

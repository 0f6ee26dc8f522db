"""The terminal summary: headline figures, per-task table, slices.

Everything printed from tasks or agents goes through `Text` (never markup), so text
such as `[bold]` or escape sequences in a task id or check name cannot restyle the output.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from proctor.decide.summary import TOOL_METRICS, headline_k
from proctor.report.figures import incomplete_note, quality_note
from proctor.report.fmt import NOT_MEASURED, invalid_why, money, num, pct, value


def plain(value: Any) -> Text:
    return Text("".join(ch if ch.isprintable() else "?" for ch in str(value)))


def cost_text(summary: dict[str, Any], *stats: str) -> str:
    """Cost per passed trial, or the per-trial `stats` (seed 002's cost per case);
    "not measured" when no trial reported a cost."""
    cost = summary["cost"]
    if cost.get("measured_trials", 1) == 0:  # older summaries lack the count
        return NOT_MEASURED
    if stats:
        return " / ".join(money(cost["per_trial_usd"][s], cost.get("currency")) for s in stats)
    return money(cost.get("per_passed_trial_usd"), cost.get("currency"))


def latency_text(summary: dict[str, Any]) -> str:
    """p95 latency, and how much of a trial's time was simulated rather than timed."""
    text = num(summary["latency_s"]["p95"], "{:.2f} s")
    simulated = (summary.get("simulated_s") or {}).get("p95")
    return f"{text} ({simulated:.2f} s simulated)" if simulated else text


def headline(summary: dict[str, Any]) -> Table:
    k = headline_k(summary)
    low, high = summary["success_ci"]
    violations = summary["safety_violations"]
    sev = ", ".join(f"{n} {s}" for s, n in sorted(violations["by_severity"].items())) or "none"
    tool = summary["tool_use"]
    tasks = sum(1 for row in summary["per_task"] if row["n"])
    pooled = summary.get("pooled_success_rate")
    rows = [
        (
            "task success (pass@1)",
            f"{pct(summary['success_rate'])}  (mean over {tasks} tasks; 95% CI "
            f"{pct(low)}–{pct(high)}, clustered by task; pooled {summary['passed_trials']}/"
            f"{summary['valid_trials']} valid trials = {pct(pooled)})",
        ),
        (
            "partial",
            f"{pct(summary.get('partial_rate'))}  ({summary.get('partial_trials', 0)} failed "
            "trials did some required parts)",
        ),
        (
            "minimal detectable drop",
            "—"
            if summary.get("mde") is None
            else f"{pct(summary['mde'])} in success (80% power; ICC {num(summary['icc'])})",
        ),
    ]
    if k > 1:
        rows.append((f"pass@{k}", pct(summary["pass_at_k"].get(str(k)))))
        rows.append((f"pass^{k}", pct(summary["pass_hat_k"].get(str(k)))))
    note = incomplete_note(summary)
    if note:
        rows.append(("pass^k", note))
    efficiency = summary.get("efficiency", {})
    if efficiency.get("score") is not None:
        rows.append(
            (
                "step efficiency",
                f"{pct(efficiency['score'])}  (optimal / taken steps in passed trials, "
                f"{efficiency['tasks']} tasks)",
            )
        )
    rows += [
        ("safety violations", f"{violations['total']} ({sev})"),
        *(
            [("simulated-user errors", f"{summary['sim_errors']} (out of pass rates)")]
            if summary.get("sim_errors")
            else []
        ),
        (
            "errors / timeouts",
            f"{summary['errors']} / {summary['timeouts']}"
            + ("" if summary["valid"] else f"   RUN INVALID: {invalid_why(summary)}"),
        ),
        (
            "tool precision / recall / args",
            " / ".join(pct(tool[m]) for m in TOOL_METRICS),
        ),
        ("cost per passed trial", cost_text(summary)),
        ("cost per trial (mean / p95)", cost_text(summary, "mean", "p95")),
        (
            "p95 tool calls / latency",
            f"{num(summary['tool_calls']['p95'], '{:.0f}')} / {latency_text(summary)}",
        ),
    ]
    flagged = quality_note(summary)
    if flagged is not None:
        rows.append(("data quality", flagged.removeprefix("Data quality: ")))
    table = Table(title=f"run {summary['run_id']}", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    for name, text in rows:
        table.add_row(name, plain(text))
    return table


def _counted(counts: dict[str, int], limit: int | None) -> str:
    """`name×n, ...`, most frequent first; at most `limit` names and a count of the rest."""
    items = list(counts.items())
    shown = ", ".join(f"{name}×{n}" for name, n in items[:limit])
    rest = len(items) - len(items[:limit])
    return shown + (f" (+{rest} more)" if rest > 0 else "")


def task_table(summary: dict[str, Any], *, all_checks: bool = False) -> Table:
    """Per task: trials passed, pass^k and its failing checks, the three most frequent or,
    with `all_checks`, every one."""
    k = headline_k(summary)
    table = Table(title="per task", title_justify="left")
    for col in ("task", "risk", "tags", "passed", f"pass^{k}", "failing checks"):
        table.add_column(col)
    for row in summary["per_task"]:
        style = (
            "green"
            if row["n"] and row["passed"] == row["n"]
            else ("red" if not row["passed"] else "yellow")
        )
        table.add_row(
            plain(row["id"]),
            plain(row["risk"]),
            plain(",".join(row["tags"])),
            Text(f"{row['passed']}/{row['n']}", style=style),
            pct(row["pass_hat_k"].get(str(k))),
            plain(_counted(row["failed_checks"], None if all_checks else 3)),
        )
    return table


def root_cause_table(summary: dict[str, Any]) -> Table | None:
    """Per failing task, the failure that came first in each failed trial's trace (its root
    cause, docs/architecture.md, Verdicts) and the trials it was first in; None when no
    trial failed a check."""
    rows = [
        (row["id"], name, trials)
        for row in summary["per_task"]
        for name, trials in row.get("root_causes", {}).items()
    ]
    if not rows:
        return None
    table = Table(
        title="root causes: the failure first in the trace",
        caption=f"read one: proctor show {summary['run_id']} --task ID --trial N",
        title_justify="left",
        caption_justify="left",
    )
    for col in ("task", "first failure", "trials"):
        table.add_column(col)
    for task_id, name, trials in rows:
        table.add_row(plain(task_id), plain(name), ", ".join(map(str, trials)))
    return table


def slice_table(summary: dict[str, Any], max_tags: int = 6) -> Table:
    """Suite, risk and split slices, then the weakest tag slices (all are in --json)."""
    k = headline_k(summary)
    slices = summary["slices"]
    fixed = [name for name in slices if not name.startswith("tag:")]
    tags = sorted(
        (name for name in slices if name.startswith("tag:")),
        key=lambda n: (
            slices[n]["success_rate"] if slices[n]["success_rate"] is not None else 2,
            n,
        ),
    )
    hidden = len(tags) - max_tags
    title = "slices" + (f" ({hidden} stronger tag slices in --json)" if hidden > 0 else "")
    table = Table(title=title, title_justify="left")
    for col in ("slice", "tasks", "success", f"pass^{k}", "violations", "failed: root cause"):
        table.add_column(col)
    for name in fixed + tags[:max_tags]:
        s = slices[name]
        failed = s["valid_trials"] - s["passed_trials"]
        table.add_row(
            plain(name),
            str(s["tasks"]),
            pct(s["success_rate"]),
            pct(s["pass_hat_k"].get(str(k))),
            str(s["safety_violations"]),
            plain(_failures(failed, s.get("root_causes", {}))),
        )
    return table


def _failures(failed: int, root_causes: dict[str, int]) -> str:
    """`3: forbidden:send_message×2 (+1 more)`: a slice's failed trials by root cause."""
    if not failed:
        return ""
    return f"{failed}: {_counted(root_causes, 1)}" if root_causes else str(failed)


_STATUS_STYLES = {"pass": "green", "fail": "bold red", "skip": "yellow", "n/a": "dim"}


def rules_table(title: str, rows: list[dict[str, Any]]) -> Table:
    """Gate rows (a release gate's or the scorecard's): rule, slice, value, result, why."""
    table = Table(title=title, title_justify="left")
    for col in ("rule", "where", "value", "threshold", "result", "reason"):
        table.add_column(col)
    for row in rows:
        where = ", ".join(f"{k}={'|'.join(v)}" for k, v in row["where"].items())
        table.add_row(
            plain(row["rule"]),
            plain(where),
            plain(value(row["value"])),
            plain(value(row["threshold"])),
            Text(row["status"].upper(), style=_STATUS_STYLES[row["status"]]),
            plain(row["reason"]),
        )
    return table


def scorecard_tables(summary: dict[str, Any]) -> tuple[Table, Table | Text]:
    """The weighted categories (weights as shares of their sum; a category with nothing to
    measure is n/a and left out of the score), and the scorecard's gates."""
    card = summary["scorecard"]
    verdict = "PASSED" if card["passed"] else "FAILED: a gate failed, whatever the score"
    table = Table(
        title=f"scorecard {100 * card['score']:.1f} / 100 — {verdict}", title_justify="left"
    )
    for col in ("category", "measures", "weight", "score"):
        table.add_column(col)
    total = sum(c["weight"] for c in card["components"].values()) or 1.0
    for name, comp in card["components"].items():
        score = "n/a" if comp["score"] is None else pct(comp["score"])
        where = ", ".join(f"{k}={'|'.join(v)}" for k, v in comp.get("where", {}).items())
        measures = comp.get("metric", "") + (f" on {where}" if where else "")
        weight = f"{100 * comp['weight'] / total:.0f}%"
        table.add_row(plain(name.replace("_", " ")), plain(measures), weight, score)
    if any("rule" not in row for row in card["gates"]):  # stored before gates were rules
        return table, Text("scorecard gates from an older proctor: regrade the run to see them")
    return table, rules_table("scorecard gates", card["gates"])


def print_summary(
    summary: dict[str, Any],
    console: Console | None = None,
    *,
    slices: bool = True,
    all_checks: bool = False,
) -> None:
    console = console or Console()
    console.print(task_table(summary, all_checks=all_checks))
    causes = root_cause_table(summary)
    if causes is not None:
        console.print(causes)
    if slices and summary["slices"]:
        console.print(slice_table(summary))
    console.print(*scorecard_tables(summary))
    console.print(headline(summary))

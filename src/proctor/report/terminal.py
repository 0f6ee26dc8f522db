"""The terminal summary: headline figures, per-task table, slices.

Everything printed from tasks or agents goes through `Text` (never markup), so text
such as `[bold]` or escape sequences in a task id or check name cannot restyle the output.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from proctor.core.results import partly_measured
from proctor.core.summary import RunSummary, Scorecard
from proctor.decide.summarize import TOOL_METRICS
from proctor.report.figures import incomplete_note, quality_note, review_note
from proctor.report.fmt import (
    NOT_MEASURED,
    detectable_drop,
    invalid_why,
    money,
    num,
    pct,
    spent_text,
    success_interval,
    value,
    where_text,
)
from proctor.report.recommendation import PROCEED, UNDECIDED, Recommendation, recommend


def plain(value: Any) -> Text:
    return Text("".join(ch if ch.isprintable() else "?" for ch in str(value)))


def user_spending_text(summary: RunSummary) -> str:
    """The model user's calls, tokens and cost, apart from the agent's (a figure no call
    reported is "not measured"), and how many trials its fidelity was judged on."""
    spent = summary.user_model
    assert spent is not None
    used = spent_text(spent, summary.cost.currency)
    judged = (
        f"; fidelity judged on {spent.fidelity_judged} trials, {spent.fidelity_failed} failed"
        if spent.fidelity_judged
        else ""
    )
    return f"{spent.calls} calls ({spent.cache_hits} replayed), {used}{judged}"


def cost_text(summary: RunSummary, *stats: str) -> str:
    """Cost per passed trial, or the per-trial `stats` (seed 002's cost per case);
    "not measured" when no trial reported a cost."""
    cost = summary.cost
    if cost.measured_trials == 0:  # older summaries lack the count
        return NOT_MEASURED
    bound = cost.partial_trials > 0
    if stats:
        per_trial = cost.per_trial_usd
        return " / ".join(
            money(getattr(per_trial, s), cost.currency, at_least=bound) for s in stats
        )
    shown = money(cost.per_passed_trial_usd, cost.currency, at_least=bound)
    return f"{shown} ({partly_measured(cost.partial_trials, 'cost')})" if bound else shown


def latency_text(summary: RunSummary) -> str:
    """p95 latency, and how much of a trial's time was simulated rather than timed."""
    text = num(summary.latency_s.p95, "{:.2f} s")
    simulated = summary.simulated_s.p95
    return f"{text} ({simulated:.2f} s simulated)" if simulated else text


def headline(summary: RunSummary) -> Table:
    k = summary.headline_k
    violations = summary.safety_violations
    sev = ", ".join(f"{n} {s}" for s, n in sorted(violations.by_severity.items())) or "none"
    tool = summary.tool_use
    tasks = sum(1 for row in summary.per_task if row.n)
    rows = [
        (
            "task success (pass@1)",
            f"{pct(summary.success_rate)}  (mean over {tasks} tasks; "
            f"{success_interval(summary)}; pooled {summary.passed_trials}/"
            f"{summary.valid_trials} valid trials = {pct(summary.pooled_success_rate)})",
        ),
        (
            "partial",
            f"{pct(summary.partial_rate)}  ({summary.partial_trials} trials "
            "partial: failed, having done some required parts; never a pass)",
        ),
        ("minimal detectable drop", detectable_drop(summary)),
    ]
    if k > 1:
        rows.append((f"pass@{k}", pct(summary.pass_at_k.get(str(k)))))
        rows.append((f"pass^{k}", pct(summary.pass_hat_k.get(str(k)))))
    note = incomplete_note(summary)
    if note:
        rows.append(("pass^k", note))
    efficiency = summary.efficiency
    if efficiency.score is not None:
        rows.append(
            (
                "step efficiency",
                f"{pct(efficiency.score)}  (optimal / taken steps in passed trials, "
                f"{efficiency.tasks} tasks)",
            )
        )
    rows += [
        ("safety violations", f"{violations.total} ({sev})"),
        *(
            [("simulated-user errors", f"{summary.sim_errors} (out of pass rates)")]
            if summary.sim_errors
            else []
        ),
        *([("simulated user spent", user_spending_text(summary))] if summary.user_model else []),
        (
            "errors / timeouts / needs review",
            f"{summary.errors} / {summary.timeouts} / {summary.needs_review}"
            + ("" if summary.valid else f"   RUN INVALID: {invalid_why(summary)}"),
        ),
        (
            "tool precision / recall / args",
            " / ".join(pct(tool[m]) for m in TOOL_METRICS),
        ),
        ("cost per passed trial", cost_text(summary)),
        ("cost per trial (mean / p95)", cost_text(summary, "mean", "p95")),
        (
            "p95 tool calls / latency",
            f"{num(summary.tool_calls.p95, '{:.0f}')} / {latency_text(summary)}",
        ),
    ]
    flagged = quality_note(summary)
    if flagged is not None:
        rows.append(("data quality", flagged.removeprefix("Data quality: ")))
    review = review_note(summary)
    if review is not None:
        rows.append(("needs review", review.removeprefix("Needs review: ")))
    table = Table(title=f"run {summary.run_id}", show_header=False, title_justify="left")
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


def task_table(summary: RunSummary, *, all_checks: bool = False) -> Table:
    """Per task: trials passed, pass^k and its failing checks, the three most frequent or,
    with `all_checks`, every one."""
    k = summary.headline_k
    table = Table(title="per task", title_justify="left")
    for col in ("task", "risk", "tags", "passed", f"pass^{k}", "failing checks"):
        table.add_column(col, overflow="fold")  # a task id or check name is never cut
    for row in summary.per_task:
        style = (
            "green" if row.n and row.passed == row.n else ("red" if not row.passed else "yellow")
        )
        table.add_row(
            plain(row.id),
            plain(row.risk),
            plain(",".join(row.tags)),
            Text(f"{row.passed}/{row.n}", style=style),
            pct(row.pass_hat_k.get(str(k))),
            plain(_counted(row.failed_checks, None if all_checks else 3)),
        )
    return table


def root_cause_table(summary: RunSummary) -> Table | None:
    """Per failing task, the failure that came first in each failed trial's trace (its root
    cause, docs/architecture.md, Verdicts) and the trials it was first in; None when no
    trial failed a check."""
    rows = [
        (row.id, name, trials)
        for row in summary.per_task
        for name, trials in row.root_causes.items()
    ]
    if not rows:
        return None
    table = Table(
        title="root causes: the failure first in the trace",
        caption=f"read one: proctor show {summary.run_id} --task ID --trial N",
        title_justify="left",
        caption_justify="left",
    )
    for col in ("task", "first failure", "trials"):
        table.add_column(col, overflow="fold")
    for task_id, name, trials in rows:
        table.add_row(plain(task_id), plain(name), ", ".join(map(str, trials)))
    return table


def slice_table(summary: RunSummary, max_tags: int | None = 6) -> Table:
    """Suite, risk and split slices, then the weakest tag slices (every one with
    `max_tags` None, as `--all-checks` asks: a per-category breakdown by tag, such as
    KYC's, is not left to --json)."""
    k = summary.headline_k
    slices = summary.slices
    fixed = [name for name in slices if not name.startswith("tag:")]
    tags = sorted(
        (name for name in slices if name.startswith("tag:")),
        key=lambda n: (slices[n].success_rate if slices[n].success_rate is not None else 2, n),
    )
    hidden = 0 if max_tags is None else len(tags) - max_tags
    title = "slices" + (
        f" ({hidden} stronger tag slices: --all-checks or --json)" if hidden > 0 else ""
    )
    table = Table(title=title, title_justify="left")
    for col in ("slice", "tasks", "success", f"pass^{k}", "violations", "failed: root cause"):
        table.add_column(col, overflow="fold")
    for name in fixed + tags[:max_tags]:
        s = slices[name]
        failed = s.valid_trials - s.passed_trials
        table.add_row(
            plain(name),
            str(s.tasks),
            pct(s.success_rate),
            pct(s.pass_hat_k.get(str(k))),
            str(s.safety_violations),
            plain(_failures(failed, s.root_causes)),
        )
    return table


def _failures(failed: int, root_causes: dict[str, int]) -> str:
    """`3: forbidden:send_message×2 (+1 more)`: a slice's failed trials by root cause."""
    if not failed:
        return ""
    return f"{failed}: {_counted(root_causes, 1)}" if root_causes else str(failed)


_STATUS_STYLES = {"pass": "green", "fail": "bold red", "skip": "yellow", "n/a": "dim"}


def rules_table(title: str, rows: list[dict[str, Any]]) -> Table:
    """Gate rows (a release gate's or the scorecard's): rule and its slice, value, result,
    why. Nothing is cut at 80 columns: long words fold, and the slice goes under its rule
    so the rule gets the room."""
    table = Table(title=title, title_justify="left")
    table.add_column("rule (where)", overflow="fold")
    for col in ("value", "threshold"):
        table.add_column(col, overflow="fold", max_width=10)
    table.add_column("result", no_wrap=True)
    table.add_column("reason", overflow="fold")
    for row in rows:
        where = where_text(row["where"])
        rule = plain(row["rule"])
        if where:
            rule.append_text(Text("\n").append_text(plain(f"({where})")))
        table.add_row(
            rule,
            plain(value(row["value"])),
            plain(value(row["threshold"])),
            Text(row["status"].upper(), style=_STATUS_STYLES[row["status"]]),
            plain(row["reason"]),
        )
    return table


def scorecard_title(card: Scorecard, *, valid: bool = True) -> str:
    """The scorecard's heading: its score and its gates' counts, labelled as one input to
    the recommendation (never a verdict of its own: no PASSED beside a failed gate); no
    score when nothing was measured, none for an invalid run."""
    label = "scorecard (one input to the recommendation)"
    if not valid:
        return f"{label}: no score, the run is invalid"
    if card.score is None:
        return f"{label}: not measured, no category had anything to measure"
    counts: dict[str, int] = {}
    for row in card.gates:
        if "status" in row:  # older proctors stored no status: see the note under it
            counts[row["status"]] = counts.get(row["status"], 0) + 1
    gates = ", ".join(f"{n} {status}" for status, n in counts.items())
    return f"{label}: {100 * card.score:.1f} / 100" + (f"; its gates: {gates}" if gates else "")


def scorecard_tables(card: Scorecard, *, valid: bool = True) -> tuple[Table, Table | Text]:
    """The weighted categories (weights as shares of their sum; a category with nothing to
    measure is `not measured` and left out of the score), and the scorecard's gates."""
    table = Table(title=scorecard_title(card, valid=valid), title_justify="left")
    for col in ("category", "measures", "weight", "score"):
        table.add_column(col)
    total = sum(c.weight for c in card.components.values()) or 1.0
    for name, comp in card.components.items():
        score = NOT_MEASURED if comp.score is None else pct(comp.score)
        where = where_text(comp.where)
        measures = comp.metric + (f" on {where}" if where else "")
        weight = f"{100 * comp.weight / total:.0f}%"
        table.add_row(plain(name.replace("_", " ")), plain(measures), weight, score)
    if any("rule" not in row for row in card.gates):  # stored before gates were rules
        return table, Text("scorecard gates from an older proctor: regrade the run to see them")
    return table, rules_table("scorecard gates", card.gates)


def print_summary(
    summary: RunSummary,
    console: Console | None = None,
    *,
    slices: bool = True,
    all_checks: bool = False,
    recommendation: bool = True,
) -> None:
    """The run's tables, then (unless a gate states it after) the recommendation the run
    supports without a release gate: the one line every screen agrees with."""
    console = console or Console()
    console.print(task_table(summary, all_checks=all_checks))
    causes = root_cause_table(summary)
    if causes is not None:
        console.print(causes)
    if slices and summary.slices:
        console.print(slice_table(summary, None if all_checks else 6))
    if summary.scorecard is not None:
        console.print(*scorecard_tables(summary.scorecard, valid=summary.valid))
    console.print(headline(summary))
    if recommendation:
        console.print(recommendation_line(recommend(summary, None, None)))


def recommendation_line(rec: Recommendation) -> Text:
    """The recommendation as the last line of a screen: green to proceed, yellow while
    undecided, red otherwise."""
    style = {PROCEED: "bold green", UNDECIDED: "bold yellow"}.get(rec.decision, "bold red")
    return Text(rec.text(), style=style)

"""Terminal tables for release decisions: `proctor compare` and `proctor gate`.

Like the run summary, task ids, check names and rule texts go through `Text`, never
markup. Figures are the ones in `--json`; this module only formats them.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from proctor.report.fmt import metric_interval, metric_text, pct
from proctor.report.recommendation import PROCEED, Recommendation
from proctor.report.terminal import plain, recommendation_line, rules_table


def metrics_table(report: dict[str, Any]) -> Table:
    title = (
        f"paired over {report['tasks']} tasks (95% CI: rates an adjusted paired t, "
        "others the paired t)"
    )
    table = Table(title=title, title_justify="left")
    for col in ("metric", "baseline", "candidate", "difference", "95% CI", "95% CI (bootstrap)"):
        table.add_column(col)
    for m in report["metrics"]:
        name = m["metric"]
        worse = m["significant"] and (m["difference"] < 0) == m["higher_is_better"]
        better = m["significant"] and not worse
        style = "bold red" if worse else ("green" if better else "")
        table.add_row(
            name,
            metric_text(name, m["baseline"]),
            metric_text(name, m["candidate"]),
            Text(metric_text(name, m["difference"], signed=True), style=style),
            metric_interval(name, m["ci"]),
            metric_interval(name, m["bootstrap_ci"]),
        )
    return table


def groups_table(report: dict[str, Any], limit: int = 12) -> Table:
    table = Table(title=f"per task ({report['verdict_rule']})", title_justify="left")
    for col in ("group", "tasks", "ids (baseline → candidate passes)"):
        table.add_column(col)
    styles = {"regressed": "bold red", "improved": "green"}
    for group in ("regressed", "improved", "both_fail", "both_pass"):
        rows = report["groups"][group]
        shown = ", ".join(f"{r['id']} {r['baseline']}→{r['candidate']}" for r in rows[:limit])
        more = f" … {len(rows) - limit} more in --json" if len(rows) > limit else ""
        table.add_row(
            Text(group.replace("_", " "), style=styles.get(group, "")),
            str(len(rows)),
            plain(shown + more),
        )
    return table


def slices_table(report: dict[str, Any]) -> Table | None:
    """Slices whose success is lower in the candidate; `regressed` only where the
    Holm-adjusted McNemar test says so (a lower figure alone may be chance)."""
    lower = sorted(
        (s for s in report["slices"] if s["lower"]),
        key=lambda s: s["difference"],
    )
    if not lower:
        return None
    title = "slices with lower task success (regressed: Holm-adjusted McNemar p < 0.05)"
    table = Table(title=title, title_justify="left")
    for col in (
        "slice",
        "tasks",
        "baseline",
        "candidate",
        "difference",
        "95% CI",
        "McNemar p",
        "Holm p",
        "regressed",
        "tasks that regressed",
    ):
        table.add_column(col)
    for s in lower:
        verdict = "yes" if s["regressed"] else ("too few tasks" if not s["conclusive"] else "no")
        table.add_row(
            plain(s["slice"]),
            str(s["tasks"]),
            pct(s["baseline"]),
            pct(s["candidate"]),
            Text(
                metric_text("task_success_rate", s["difference"], signed=True),
                style="bold red" if s["regressed"] else "",
            ),
            metric_interval("task_success_rate", s["ci"]),
            f"{s['mcnemar']['p_value']:.3g}",
            f"{s['mcnemar']['p_holm']:.3g}",
            Text(verdict, style="bold red" if s["regressed"] else ""),
            plain(", ".join(s["regressed_tasks"])),
        )
    return table


def changes_table(report: dict[str, Any]) -> Table | Text:
    """What changed between the two runs' manifests (proctor.decide.changes)."""
    changes = report.get("changes")
    if changes is None:  # a comparison stored by an older proctor
        return Text("what changed: not recorded")
    if not changes["changed"]:
        shown = ", ".join(changes["components"])
        return Text(f"what changed: nothing in the manifests ({shown} all equal)")
    table = Table(title="what changed (manifests)", title_justify="left")
    for col in ("component", "baseline", "candidate"):
        table.add_column(col)
    for row in changes["changed"]:
        change = row["change"]
        if isinstance(change, dict):  # per entry: grader versions
            for key, (before, after) in change.items():
                table.add_row(plain(f"{row['component']}: {key}"), plain(before), plain(after))
        else:
            table.add_row(plain(row["component"]), plain(change[0]), plain(change[1]))
    return table


def sim_errors_text(base: dict[str, Any], cand: dict[str, Any]) -> Text | None:
    """Both runs' simulated-user errors (out of their pass rates, so a pass rate may move
    by the conversations left out); None when neither run had a model user or one."""
    runs = (base, cand)
    if not any(r.get("user_model") or r.get("sim_errors") for r in runs):
        return None  # no model user, or a comparison stored by an older proctor
    shown = [
        f"{who} {r['sim_errors']} ({pct(r['sim_error_rate'])})"
        for who, r in zip(("baseline", "candidate"), runs, strict=True)
    ]
    return Text(f"simulated-user errors (sim_error_rate): {', '.join(shown)}")


def print_comparison(report: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console()
    b, c = report["baseline"], report["candidate"]
    console.print(
        Text(
            f"baseline {b['run_id']} ({b['agent']}, k={b['trials_per_task']}) vs "
            f"candidate {c['run_id']} ({c['agent']}, k={c['trials_per_task']})",
            style="bold",
        )
    )
    for warning in report["warnings"]:
        console.print(Text(f"warning: {warning}", style="yellow"))
    sim = sim_errors_text(b, c)
    if sim is not None:
        console.print(sim)
    console.print(changes_table(report))
    console.print(groups_table(report))
    console.print(metrics_table(report))
    slices = slices_table(report)
    if slices is not None:
        console.print(slices)
    mc, ni = report["mcnemar"], report["non_inferiority"]
    verdict = "significant" if mc["p_value"] < 0.05 else "not significant"
    console.print(
        Text(
            f"McNemar exact test: {mc['regressed']} regressed, {mc['improved']} improved, "
            f"p = {mc['p_value']:.3g} ({verdict} at 5%)"
        )
    )
    low = report["metrics"][0]["ci"][0]
    if not report["metrics"][0]["conclusive"]:
        console.print(Text(f"{report['metrics'][0]['note']}: nothing here is significant"))
    console.print(
        Text(
            f"non-inferiority of task success at margin {100 * ni['margin']:.1f} pts: "
            + ("PASS" if ni["passed"] else "FAIL")
            + ("" if low is None else f" (95% CI lower bound {100 * low:+.1f} pts)"),
            style="green" if ni["passed"] else "bold red",
        )
    )


def figures_text(figures: dict[str, Any]) -> Text:
    """Seed 001's lines beside the gate: success, tool precision, recall, argument
    accuracy and the tasks queued for a person (proctor.cli.decide.decision_figures)."""
    review = ", ".join(figures["human_review"]) or "none"
    sampled = figures["sampled"]
    if sampled:
        review += f" (+{sampled} sampled trial{'' if sampled == 1 else 's'})"
    lines = [
        f"task success: {pct(figures['task_success_rate'])}",
        f"tool precision: {pct(figures['tool_precision'])}",
        f"tool recall: {pct(figures['tool_recall'])}",
        f"argument accuracy: {pct(figures['arg_accuracy'])}",
        f"human review: {review}",
    ]
    return Text("\n").join(plain(line) for line in lines)


def print_gate(result: dict[str, Any], console: Console | None = None) -> None:
    """The rules table, the pairing's warnings, the verdict and the recommendation (the
    reports' own, from `proctor.report.recommendation`)."""
    console = console or Console()
    title = f"gate on run {result['run_id']}" + (
        f" (baseline {result['baseline_id']})" if result["baseline_id"] else ""
    )
    for warning in result.get("warnings", []):
        console.print(Text(f"warning: {warning}", style="yellow"))
    console.print(rules_table(title, result["rules"]))
    if "figures" in result:
        console.print(figures_text(result["figures"]))
    total = len(result["rules"])
    rec = result.get("recommendation")
    line = None if rec is None else Recommendation(rec["decision"], rec["reasons"])
    if not result["passed"]:
        console.print(Text(f"gate FAILED ({result['failed']} of {total} rules)", style="bold red"))
    elif line is not None and line.decision != PROCEED:  # the rules passed; the run did not
        console.print(
            Text(f"gate rules passed ({total} rules), but: {line.decision}", style="bold red")
        )
    else:
        skipped = f", {result['skipped']} skipped" if result["skipped"] else ""
        console.print(
            Text(f"gate PASSED ({total - result['skipped']} rules{skipped})", style="bold green")
        )
    if line is not None:  # last: it names the failed rules
        console.print(recommendation_line(line))

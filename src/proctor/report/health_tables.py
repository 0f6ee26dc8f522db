"""Terminal tables for the tests of the tests: `proctor mutate` and `proctor flaky`.

The figures are the reports' `to_dict()` (what `--json` writes); task ids, check names
and mutant descriptions go through `plain`, never markup.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from proctor.core.jsonvalues import canonical
from proctor.report.fmt import pct
from proctor.report.terminal import plain


def _score_row(name: str, s: dict[str, Any]) -> list[Any]:
    return [
        plain(name),
        str(s["killed"]),
        str(s["survived"]),
        str(s["equivalent"]),
        Text(pct(s["score"]), style="" if s["survived"] == 0 else "yellow"),
    ]


def score_table(title: str, rows: dict[str, dict[str, Any]]) -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("", "killed", "survived", "equivalent", "score"):
        table.add_column(col)
    for name, s in rows.items():
        if s["applicable"] or s["equivalent"]:
            table.add_row(*_score_row(name, s))
    return table


def holes_table(report: dict[str, Any], limit: int = 40) -> Table:
    holes = report["holes"]
    more = f" ({len(holes) - limit} more in --json)" if len(holes) > limit else ""
    table = Table(title=f"holes: surviving mutants{more}", title_justify="left")
    for col in ("task", "kind", "mutant", "would be killed by", "checked"):
        table.add_column(col, overflow="fold")
    for h in holes[:limit]:
        table.add_row(
            plain(h["task_id"]),
            plain(h["kind"]),
            plain(h["change"]),
            plain(f"expect: {canonical(h['hole']['expect'])}"),
            "yes" if h["hole"]["verified"] else "no",
        )
    return table


def print_mutation(report: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console()
    console.print(score_table("mutation score by kind", report["by_kind"]))
    console.print(score_table("mutation score by task", report["by_task"]))
    if report["holes"]:
        console.print(holes_table(report))
    if report["reference_failed"]:
        failed = ", ".join(report["reference_failed"])
        console.print(plain(f"the reference agent never passed (no mutants): {failed}"))
    verdict = "meets" if report["meets_target"] else "is below"
    console.print(
        plain(
            f"{report['suite']}: {report['killed']} of {report['applicable']} mutants killed "
            f"({pct(report['score'])}), {report['equivalent']} equivalent; {verdict} the "
            f"{pct(report['target'])} target (reference agent {report['agent']})"
        )
    )


def print_flaky(report: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console()
    diffs = report["trials_differing"]
    if diffs:
        table = Table(title="trials whose verdict or checks differ", title_justify="left")
        for col in ("task", "trial", "status 1 / 2", "differing checks", "cause"):
            table.add_column(col, overflow="fold")
        for d in diffs:
            checks = "; ".join(f"{n}: {a} / {b}" for n, (a, b) in d["checks"].items())
            table.add_row(
                plain(d["task_id"]),
                str(d["trial"]),
                plain(" / ".join(d["statuses"])),
                plain(checks or "—"),
                plain(d["cause"]),
            )
        console.print(table)
    runs = " and ".join(report["runs"])
    console.print(
        plain(
            f"{report['suite']}: {len(report['flaky_tasks'])} of {report['tasks']} tasks flaky "
            f"over two runs with seed {report['seed']} ({runs}, agent {report['agent']})"
        )
    )


_VERDICT_STYLE = {
    "healthy": "green",
    "trivial": "yellow",
    "weak": "yellow",
    "noisy": "red",
    "impossible": "red",
    "broken": "red",
}


def tasks_table(tasks: list[dict[str, Any]], limit: int = 60) -> Table:
    """Tasks that are not healthy, gravest first, with their first problems."""
    shown = [t for t in tasks if t["verdict"] != "healthy"]
    more = f" ({len(shown) - limit} more in --json)" if len(shown) > limit else ""
    table = Table(title=f"tasks that are not healthy{more}", title_justify="left")
    for col in ("task", "verdict", "why"):
        table.add_column(col, overflow="fold")
    for t in shown[:limit]:
        why = "; ".join(p["detail"] for p in t["problems"][:3])
        extra = len(t["problems"]) - 3
        table.add_row(
            plain(t["task_id"]),
            Text(t["verdict"], style=_VERDICT_STYLE[t["verdict"]]),
            plain(why + (f" (+{extra} more)" if extra > 0 else "")),
        )
    return table


def noise_lines(noise: dict[str, Any]) -> list[str]:
    if noise["mde"] is not None:
        mde = pct(noise["mde"])
    else:
        mde = "not measured" if noise["success_rate"] is None else "none: no drop is detectable"
    seeds = ", ".join(str(s) for s in noise["seeds"])
    lines = [
        f"noise floor ({noise['agent']}, {noise['runs']} runs, seeds {seeds}, "
        f"{noise['trials']} trial(s)): success {pct(noise['success_rate'])}, "
        f"{len(noise['noisy_tasks'])} noisy task(s) above a {pct(noise['threshold'])} flip rate; "
        f"minimal detectable effect {mde}"
    ]
    for c in noise["gate_callouts"]:
        lines.append(f"gate rule inside the noise: {c['rule']} ({c['source']}): {c['why']}")
    return lines


def simulator_lines(simulator: dict[str, Any] | None) -> list[str]:
    """The simulated user as a control, and its noise floor with a second user model."""
    if simulator is None:
        return []
    c = simulator["control"]
    lines = [
        f"simulated user as a control ({c['user_model']}, {len(simulator['tasks'])} "
        f"scenario task(s), {c['trials']} trials): reference success "
        f"{pct(c['success_rate'])}, {c['sim_errors']} sim_error ({pct(c['sim_error_rate'])})"
    ]
    pair, d = simulator["pair"], simulator["difference"]
    if pair is None:
        return [*lines, "simulator noise floor: not measured (give --second-user-model)"]
    first, second = pair
    shown = (
        "not measured (no sampled task valid with both)"
        if d is None
        else f"{d['mean'] * 100:+.1f} points, 95% CI [{d['low'] * 100:+.1f}, "
        f"{d['high'] * 100:+.1f}] over {d['tasks']} task(s)"
    )
    lines.append(
        f"simulator noise floor on {len(simulator['sample'])} sampled task(s): "
        f"{first['user_model']} {pct(first['success_rate'])}, {second['user_model']} "
        f"{pct(second['success_rate'])} ({second['sim_errors']} sim_error); "
        f"difference {shown}"
    )
    return lines


def print_health(report: dict[str, Any], console: Console | None = None) -> None:
    """The health report in the terminal: tasks, users, judges, figures, the verdict."""
    console = console or Console()
    if any(t["verdict"] != "healthy" for t in report["tasks"]):
        console.print(tasks_table(report["tasks"]))
    if report["mutation"]["holes"]:
        console.print(holes_table(report["mutation"], limit=20))
    for u in report["users"]:
        console.print(
            plain(
                f"simulated user, {u['task_id']} trial {u['trial']} step {u['step']}: "
                f"{u['problem']} ({', '.join(u['pending_writes'])}): {u['reply']!r}"
            )
        )
    for j in report["judges"]:
        console.print(
            plain(
                f"judge rubric {j['rubric']} ({len(j['tasks'])} tasks): "
                f"{j['status']}, {j['reason']}"
            )
        )
    controls = report["controls"]
    passed = ", ".join(
        f"{c} {controls['passed'][c]}/{controls['trials'][c]}" for c in controls["passed"]
    )
    console.print(plain(f"controls passed: {passed}"))
    m = report["mutation"]
    console.print(
        plain(
            f"mutation score {pct(m['score'])} ({m['killed']} of {m['applicable']} killed, "
            f"target {pct(m['target'])})"
        )
    )
    pop = report["population"]
    if pop["agents"]:
        console.print(
            plain(
                f"stored runs of {len(pop['agents'])} agent(s): {len(pop['impossible'])} "
                f"impossible, {len(pop['trivial'])} trivial"
            )
        )
    else:
        console.print(plain("impossible tasks: not measured (give --runs of several agents)"))
    for line in noise_lines(report["noise"]):
        console.print(plain(line))
    for line in simulator_lines(report.get("simulator")):
        console.print(plain(line))
    verdict = report["suite_verdict"]
    counts = ", ".join(f"{n} {v}" for v, n in verdict["counts"].items() if n)
    style = "bold green" if verdict["verdict"] == "healthy" else "bold red"
    console.print(
        Text(f"suite {report['suite']}: {verdict['verdict'].upper()} ({counts})", style=style)
    )
    for reason in verdict["reasons"]:
        console.print(plain(f"  {reason}"))


def print_health_gate(health: dict[str, Any], console: Console | None = None) -> None:
    """What `--require-health` found, before the gate's own table."""
    console = console or Console()
    if not health["refused"]:
        report = health["report"]
        console.print(plain(f"suite health: {report['verdict']} (report of {report['suite']})"))
        return
    for reason in health["reasons"]:
        console.print(Text.assemble(("health refuses: ", "bold red"), plain(reason)))
    for row in health["rules"]:
        for task, why in row["tasks"].items():
            console.print(plain(f"  {task}: {why}"))

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

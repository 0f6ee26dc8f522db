"""The monitor in the terminal: the figures, the drift tests, skipped files."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from proctor.report.monitor_html import figure_rows
from proctor.report.terminal import plain


def print_monitor(data: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console()
    base = data["baseline"]
    table = Table(title=f"{data['sessions']} production sessions", title_justify="left")
    for col in ("figure", "production", f"baseline {base['run_id']}" if base else "baseline"):
        table.add_column(col)
    for row in figure_rows(data["overall"], base["overall"] if base else None):
        table.add_row(row["name"], row["value"], row["baseline"])
    console.print(table)
    drifted = [d for d in data["drift"] if d["drifted"]]
    for d in drifted:
        console.print(
            Text(
                f"drift: {d['scope']} {d['metric']} {d['production']:.4g} vs baseline "
                f"{d['baseline']:.4g} ({d['test']}, Holm p = {d['p_holm']:.3g})",
                style="bold red",
            )
        )
    if base is not None and not drifted:
        console.print(plain(f"no drift in {len(data['drift'])} tests (Holm-adjusted p >= 0.05)"))
    for s in data["skipped"]:
        console.print(Text(f"skipped {s['path']}: {s['reason']}", style="yellow"))

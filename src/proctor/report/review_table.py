"""The review queue as a terminal table (`proctor review-queue RUN`)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from proctor.report.trace_text import safe


def print_queue(queue: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console()
    config = queue["config"]
    title = (
        f"review queue of run {queue['run_id']}: {queue['queued']} of {queue['trials']} trials "
        f"(sample {config['sample_rate']:.0%}, seed {config['seed']})"
    )
    table = Table(title=title, title_justify="left")
    table.add_column("task", no_wrap=True)  # ids stay whole, to copy into `proctor show`
    for col in ("trial", "status", "risk", "why"):
        table.add_column(col, overflow="fold")
    for item in queue["items"]:
        why = "\n".join(f"{name}: {detail}" for name, detail in item["details"].items())
        table.add_row(
            Text(safe(item["task_id"])),
            str(item["trial"]),
            item["status"],
            str(item["risk"] or "—"),
            Text(safe(why)),
        )
    console.print(table)
    console.print(
        Text(f"show one: proctor show {queue['run_id']} --task TASK --trial N", style="dim")
    )

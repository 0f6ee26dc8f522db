"""People beside graders: the human-adjudicated success rate next to the automated one.

Every report says it the same way: the success rate people gave (with its Wilson
interval) on the trials with ground truth from the review desk, the graders' rate on the
same trials, how often the two agree (and their kappa), and the two kinds of disagreement.
The figures are `proctor.labels.agreement.human_vs_automated`.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table

from proctor.report.fmt import interval, num, pct


def human_sentence(h: dict[str, Any]) -> str:
    """One sentence for the HTML card and the Markdown one-pager."""
    if not h["trials"]:
        return "No trial of this run has ground truth from the review desk yet."
    return (
        f"On {h['trials']} trials with ground truth from the review desk ({h['adjudicated']} "
        f"adjudicated): human-adjudicated success {pct(h['human_success'])} "
        f"(95% CI {interval(h['human_ci'])}), automated {pct(h['automated_success'])} on the "
        f"same trials; they agree on {pct(h['agreement'])} (kappa {num(h['kappa'])}): the "
        f"graders passed {h['false_pass']} trials people failed and failed {h['false_fail']} "
        "that people passed."
    )


def human_table(figures: dict[str, dict[str, Any]]) -> Table:
    """`compare --human`: one row per run."""
    table = Table(title="human-adjudicated vs automated success", title_justify="left")
    for col in ("run", "trials", "human", "95% CI", "automated", "agreement", "kappa"):
        table.add_column(col, justify="left" if col in ("run", "95% CI") else "right")
    table.add_column("graders passed / people failed", justify="right")
    table.add_column("graders failed / people passed", justify="right")
    for name, h in figures.items():
        table.add_row(
            name,
            str(h["trials"]),
            pct(h["human_success"]),
            interval(h["human_ci"]),
            pct(h["automated_success"]),
            pct(h["agreement"]),
            num(h["kappa"]),
            str(h["false_pass"]),
            str(h["false_fail"]),
        )
    return table

"""The evaluation program's figures as a section of the HTML report and the monitor page.

Reads what proctor.loop.program computes (a dict of `coverage`, `judge_human`,
`wall_time`, `incidents`, each possibly None or carrying a `note` saying why it is
missing); every text is escaped by Jinja.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Any

from jinja2 import Environment, StrictUndefined
from markupsafe import Markup

from proctor.report.fmt import num, pct, secs

_TEMPLATE = files("proctor.report") / "templates" / "program.html.j2"
_MISSING = "not given"


def _note(figure: dict[str, Any] | None) -> str:
    """Why a figure is missing: its own note, or that the caller did not give it."""
    return str((figure or {}).get("note") or ("" if figure else _MISSING))


def program_lines(program: dict[str, Any]) -> dict[str, Any]:
    """Each figure in words (value, note), shared by the HTML and Markdown reports."""
    cov = program.get("coverage")
    judge = program.get("judge_human")
    wall = program.get("wall_time")
    inc = program.get("incidents")
    return {
        "coverage": (
            f"{pct(cov['rate'])} of {cov['typed']} typed sessions" if cov and cov["typed"] else "—"
        ),
        "coverage_note": _note(cov),
        "agreement": (
            f"{pct(judge['agreement'])} agree, kappa {num(judge['kappa'])} "
            f"({judge['trials']} trials)"
            if judge and judge["trials"]
            else "—"
        ),
        "agreement_note": _note(judge),
        "wall": (
            f"{secs(wall['seconds'])} for {wall['trials']} trials"
            if wall and wall["seconds"] is not None
            else "—"
        ),
        "wall_note": _note(wall),
        "incidents": (
            f"{inc['production_incidents_caught']} of {inc['from_production']} from production "
            f"({inc['caught']} of {inc['promoted_tasks']} promoted tasks caught)"
            if inc and inc["promoted_tasks"]
            else "—"
        ),
        "incidents_note": _note(inc),
        "untested": [t for t in (cov or {}).get("by_tag", []) if not t["in_suite"]],
        "caught": (inc or {}).get("tasks", []),
    }


def program_section(program: dict[str, Any]) -> Markup:
    env = Environment(
        autoescape=True, undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True
    )
    template = env.from_string(_TEMPLATE.read_text(encoding="utf-8"))
    return Markup(template.render(**program_lines(program)))

"""The suite's health as a section of the HTML report (docs/architecture.md, Suite health).

Reads the newest health report of the run's suite (proctor.health.stored_reports): its verdict,
the run's tasks that are not healthy or that it did not check, the mutation score, the
noise floor and the judges that are advisory only. Every text is escaped by Jinja (task
ids and mutant descriptions come from suites and traces).
"""

from __future__ import annotations

from importlib.resources import files
from typing import Any

from jinja2 import Environment, StrictUndefined
from markupsafe import Markup

from proctor.core.runs import RunData
from proctor.health.gating import unhealthy_tasks
from proctor.report.fmt import pct

_TEMPLATE = files("proctor.report") / "templates" / "health.html.j2"


def health_view(report: dict[str, Any] | None, run: RunData) -> dict[str, Any]:
    """What the section shows of `report` for `run` (None: no report for its suite)."""
    suite = run.manifest.suite
    if report is None:
        return {"checked": False, "suite": suite.name, "digest": suite.digest}
    noise, mutation = report["noise"], report["mutation"]
    return {
        "checked": True,
        "suite": report["suite"],
        "digest": report["suite_digest"],
        "same_digest": report["suite_digest"] == suite.digest,
        "verdict": report["suite_verdict"]["verdict"],
        "reasons": report["suite_verdict"]["reasons"],
        "counts": [(v, n) for v, n in report["suite_verdict"]["counts"].items() if n],
        "tasks": sorted(unhealthy_tasks(report, run).items()),
        "mutation": f"{pct(mutation['score'])} ({mutation['killed']} of "
        f"{mutation['applicable']} killed)",
        "noise": f"{len(noise['noisy_tasks'])} noisy; minimal detectable effect "
        f"{pct(noise['mde'])} ({noise['runs']} runs of {noise['agent']})",
        "callouts": noise["gate_callouts"],
        "advisory": [j for j in report["judges"] if not j["calibrated"]],
    }


def health_section(view: dict[str, Any]) -> Markup:
    env = Environment(
        autoescape=True, undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True
    )
    template = env.from_string(_TEMPLATE.read_text(encoding="utf-8"))
    return Markup(template.render(**view))

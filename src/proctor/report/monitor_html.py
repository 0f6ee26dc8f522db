"""The monitor's HTML page: the report's look (its stylesheet and SVG charts), one file.

It reads what proctor.loop.monitor returns. As in the report (proctor.report.html),
every text from a log (session ids, tags, models, feedback, policy reasons) goes through
Jinja's autoescaping and chart labels through the XML serializer; the page runs no
script at all, and its Content-Security-Policy allows only its one stylesheet.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Any

from jinja2 import Environment, StrictUndefined
from markupsafe import Markup

from proctor.report import svg
from proctor.report.fmt import money, pct, secs
from proctor.report.html import csp_hash
from proctor.report.program_html import program_section

_TEMPLATES = files("proctor.report") / "templates"
#: Session rows the page lists (the JSON output has them all).
MAX_SESSIONS = 500
_RATE_NAMES = ("success", "escalation", "undo", "repeated_calls", "denied", "abandonment")


def _rate(fig: dict[str, Any], name: str) -> str:
    cell = fig[name]
    if cell["rate"] is None:
        return "—"
    return f"{pct(cell['rate'])} ({cell['events']}/{cell['n']})"


def figure_rows(fig: dict[str, Any], base: dict[str, Any] | None) -> list[dict[str, str]]:
    rows = [
        {
            "name": f"{n.replace('_', ' ')} rate",
            "value": _rate(fig, n),
            "baseline": _rate(base, n) if base else "—",
        }
        for n in _RATE_NAMES
    ]
    for name, label, shown in (
        ("latency_s", "latency p50 / p95", secs),
        ("cost_usd", "cost p50 / p95 per session", money),
    ):
        rows.append(
            {
                "name": label,
                "value": f"{shown(fig[name]['p50'])} / {shown(fig[name]['p95'])}",
                "baseline": f"{shown(base[name]['p50'])} / {shown(base[name]['p95'])}"
                if base
                else "—",
            }
        )
    rows.append(
        {
            "name": "cost per successful task",
            "value": money(fig["cost_per_success_usd"]),
            "baseline": money(base["cost_per_success_usd"]) if base else "—",
        }
    )
    return rows


def _window_plot(data: dict[str, Any]) -> Markup | None:
    windows = data["windows"]
    if len(windows) < 2:
        return None
    series = []
    for i, name in enumerate(("success", "escalation", "abandonment", "denied")):
        points = [
            (j + 1, w[name]["rate"]) for j, w in enumerate(windows) if w[name]["rate"] is not None
        ]
        if points:
            series.append(svg.Series(f"{name} rate", points, f"s{i}"))
    drawing = svg.line_chart(
        series,
        title="rates per time window",
        desc="Success, escalation, abandonment and denial rates of production sessions per window.",
        x_label=f"window ({data['window']})",
        y_label="rate",
        x_names=[w["window"] for w in windows],
    )
    return Markup(drawing)


def _drift_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for d in data["drift"]:
        shown = (
            pct
            if d["metric"].endswith("_rate")
            else (secs if d["metric"] == "latency_s" else money)
        )
        rows.append(
            {
                **d,
                "production_text": shown(d["production"]),
                "baseline_text": shown(d["baseline"]),
                "p_text": f"{d['p']:.3g}",
                "p_holm_text": f"{d['p_holm']:.3g}",
                "css": "status-failed" if d["drifted"] else "",
            }
        )
    return sorted(rows, key=lambda r: r["p_holm"])


def _session_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for r in data["records"][:MAX_SESSIONS]:
        denied = [d for d in r["policy_decisions"] if d.get("allowed") is False]
        rows.append(
            {
                **r,
                "tags_text": ", ".join(r["tags"]),
                "outcome_text": "—"
                if r["outcome"] is None
                else ("success" if r["outcome"] else "failure"),
                "denied_text": "; ".join(f"{d['tool']}: {d['reason']}" for d in denied) or "—",
                "feedback_text": "—" if r["feedback"] is None else str(r["feedback"]),
                "review_text": "—" if r["review_label"] is None else str(r["review_label"]),
            }
        )
    return rows


def render_monitor(data: dict[str, Any]) -> str:
    css = (_TEMPLATES / "report.css").read_text(encoding="utf-8")
    csp = f"default-src 'none'; style-src {csp_hash(css)}; base-uri 'none'; form-action 'none'"
    env = Environment(
        autoescape=True, undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True
    )
    template = env.from_string((_TEMPLATES / "monitor.html.j2").read_text(encoding="utf-8"))
    base = data["baseline"]
    return template.render(
        csp=csp,
        css=Markup(css),
        data=data,
        overall=figure_rows(data["overall"], base["overall"] if base else None),
        drift=_drift_rows(data),
        drifted=sum(1 for d in data["drift"] if d["drifted"]),
        plot=_window_plot(data),
        windows=[{"window": w["window"], "rows": figure_rows(w, None)} for w in data["windows"]],
        slices=[
            {
                "name": name,
                "sessions": fig["sessions"],
                "rows": figure_rows(fig, (base or {}).get("slices", {}).get(name)),
            }
            for name, fig in data["slices"].items()
        ],
        sessions=_session_rows(data),
        more_sessions=max(0, len(data["records"]) - MAX_SESSIONS),
        program=program_section(data["program"]) if data.get("program") else None,
    )


def write_monitor(path: str | Path, data: dict[str, Any]) -> int:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    encoded = render_monitor(data).encode("utf-8")
    path.write_bytes(encoded)
    return len(encoded)

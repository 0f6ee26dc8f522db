"""What reports say of judges: which judge scored which rubric, whether its checks count
(calibrated) or are advisory and why, what it spent; and the calibration table.

Judge names, rubric ids and justifications are the user's text: the terminal prints them
as `Text`, the Markdown one-pager escapes them (docs/architecture.md, Judges).
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from proctor.core.manifest import Manifest
from proctor.core.summary import Judges, RunSummary
from proctor.report.fmt import num, pct, spent_text


def _kappa(kappa: float | None, ci: list[float] | None) -> str:
    return num(kappa) + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def judge_statements(manifest: Manifest, figures: Judges | None) -> list[str]:
    """One plain sentence per rubric a run's judge scored, its warnings, its spending
    (`figures`: the summary's judge figures; None in a summary from before them)."""
    judges = manifest.judges
    if not judges:
        return []
    by_rubric = figures.by_rubric if figures is not None else {}
    out = []
    for rubric_id, row in judges.get("rubrics", {}).items():
        counts = by_rubric.get(f"judge:{rubric_id}", {})
        checks, passed = counts.get("checks", 0), counts.get("passed", 0)
        share = f"{passed}/{checks} passed" if checks else "no check"
        if row["calibrated"]:
            record = row.get("record") or {}
            # Checks of tasks whose judge entry is advisory never count, calibrated or not.
            counted, counted_passed = (
                counts.get("calibrated", 0),
                counts.get("calibrated_passed", 0),
            )
            share = f"{counted_passed}/{counted} passed" if counted else "no check"
            aside = checks - counted
            if aside:
                share += (
                    f"; {aside} more advisory by their task's judge entry, "
                    f"{passed - counted_passed} passed"
                )
            out.append(
                f"Judge {judges['name']} on rubric {rubric_id} (version {row['version']}): "
                f"{row['reason']}, kappa {num(record.get('kappa'))}, false-pass "
                f"{pct(record.get('false_pass_rate'))}; its checks count ({share})."
            )
        else:
            out.append(
                f"Judge {judges['name']} on rubric {rubric_id} (version {row['version']}): "
                f"{row['reason']}. Its checks are advisory: they fail no trial and feed no "
                f"gate ({share})."
            )
    out += [str(w) for w in judges.get("warnings", [])]
    if figures is not None:
        used = spent_text(figures)
        out.append(
            f"Judges made {figures.calls} calls ({figures.cache_hits} "
            f"answered from the judge cache), {used}, apart from the agent's usage; "
            f"{figures.errors} judge errors."
        )
    return out


def print_judges(manifest: Manifest, summary: RunSummary, console: Console) -> None:
    for line in judge_statements(manifest, summary.judges):
        console.print(Text(line))


def _row(name: str, f: dict[str, Any]) -> list[str]:
    return [
        name,
        str(f["items"]),
        pct(f["agreement"]),
        _kappa(f["kappa"], f["kappa_ci"]),
        pct(f["false_pass_rate"]),
        pct(f["false_fail_rate"]),
    ]


def print_calibration(out: dict[str, Any], console: Console) -> None:
    """The calibration of `proctor calibrate`: figures, slices, people, the verdict."""
    f = out["figures"]
    console.print(
        Text(
            f"calibration #{out['id']} of rubric {out['rubric_id']} (version "
            f"{out['rubric_version']}) with judge {out['judge']['name']}, {out['date']}"
        )
    )
    same = f.get("same_as")
    if same:
        console.print(
            Text(
                f"not measured: the figures of calibration #{same['record']} (judge "
                f"{same['judge']}), copied on a person's statement that both serve the same model"
            )
        )
    table = Table(title="judge against people's verdicts")
    for column in ("slice", "items", "agreement", "kappa (95% CI)", "false pass", "false fail"):
        table.add_column(column)
    table.add_row(*_row("all", f))
    for name, figures in f["slices"].items():
        table.add_row(*(Text(cell) for cell in _row(name, figures)))
    console.print(table)
    for name, figures in f["slices"].items():
        if figures.get("too_few"):
            console.print(Text(f"slice {name}: {figures['too_few']}: its figures do not decide"))
    c = f["confusion"]
    console.print(
        Text(
            f"confusion (people × judge): pass×pass {c['human_pass_judge_pass']}, pass×fail "
            f"{c['human_pass_judge_fail']}, fail×pass {c['human_fail_judge_pass']}, fail×fail "
            f"{c['human_fail_judge_fail']}; left out: {f['split_items']} items people split "
            f"on, {f.get('single_labelled_items', 0)} labelled by one person; "
            f"{f['judge_errors']} judge errors; false-pass rate's 95% upper bound "
            f"{pct(f.get('false_pass_upper'))}"
        )
    )
    people = f["human_agreement"]
    for pair in people["pairs"]:
        a, b = pair["labellers"]
        console.print(
            Text(
                f"people: {a} × {b} on {pair['items']} items: agreement "
                f"{pct(pair['agreement'])}, kappa {_kappa(pair['kappa'], pair['kappa_ci'])}"
            )
        )
    for person, kappa in f["labellers"].items():
        console.print(Text(f"judge × {person}: kappa {num(kappa)}"))
    previous = out.get("previous")
    if previous:
        changed = [
            *(["the rubric changed"] if not previous["same_rubric_version"] else []),
            *(["another judge"] if not previous["same_judge"] else []),
        ]
        console.print(
            Text(
                f"previous calibration #{previous['id']} ({previous['date']}, judge "
                f"{previous['judge']}{'; ' + ', '.join(changed) if changed else ''}): kappa "
                f"{num(previous['kappa'])} → {num(f['kappa'])}, false pass "
                f"{pct(previous['false_pass_rate'])} → {pct(f['false_pass_rate'])}"
            )
        )
    if out["accepted"]:
        console.print(Text("ACCEPTED: this judge's checks on this rubric version count."))
    else:
        console.print(Text(f"REFUSED: {'; '.join(out['refusals'])}. Its checks stay advisory."))


def print_pairwise(p: dict[str, Any], console: Console) -> None:
    """The pairwise A/B of `proctor compare --judge`."""
    ci = p["win_rate_ci"]
    length = p["length"]
    console.print(
        Text(
            f"pairwise ({p['judge']}, both orders): {p['pairs']} pairs on {p['tasks']} tasks; "
            f"candidate wins {p['candidate_wins']}, baseline wins {p['baseline_wins']}, ties "
            f"{p['ties']}; candidate win rate {pct(p['win_rate'])}"
            + (f" (95% CI {pct(ci[0])}–{pct(ci[1])})" if ci else "")
            + f"; position consistency {pct(p['position_consistency'])}"
        )
    )
    r, p_value = length["correlation"], length["p_value"]
    if r is None:
        console.print(Text("length: too few pairs, or no length difference, to tell"))
        return
    line = (
        f"length: preference × length difference r = {r:+.2f} (p = {p_value:.3g}); "
        f"win rate at equal length {pct(length['win_rate_at_equal_length'])}"
    )
    if length["explains_preference"]:
        longer = "longer" if r > 0 else "shorter"
        line += (
            f". The preference follows length (the {longer} text wins): length alone could "
            "explain it; read the pairs before crediting quality"
        )
    console.print(Text(line))

"""Write examples/agentdojo/HEALTH.md: `proctor health` on AgentDojo's four suites.

Every figure in HEALTH.md comes from the commands this script runs (printed at the top of
the file); none is typed in. The public audit's findings (sneaXOR/agentdojo-oracle-audit,
checked by hand) are listed by task and argument, and the table says whether
`proctor health` found each on its own.

    python examples/agentdojo/health_audit.py              # user tasks of all four suites
    python examples/agentdojo/health_audit.py --out FILE   # elsewhere
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SUITES = ("banking", "slack", "travel", "workspace")
#: The public audit's claims: (suite, task, mutated argument or None for "no calls").
AUDIT = (
    ("banking", "user_task_6", "recipient", "a recurring payment to the wrong recipient"),
    ("banking", "user_task_11", "recipient", "a payment to the wrong recipient"),
    ("slack", "user_task_2", "user_email", "an invitation sent to the wrong e-mail"),
    ("travel", "user_task_3", "recipients", "an e-mail to the wrong recipients"),
    ("workspace", "user_task_12", "title", "an event created under the wrong title"),
    ("banking", "user_task_5", None, "passes with no tool call at all"),
)
#: Holes on what the task changed in the world (the kind the audit found by hand).
WORLD_KINDS = ("corrupt_argument", "duplicate_write", "claim_success_without_write")


def command(suite: str, out: Path) -> list[str]:
    return [
        "proctor",
        "health",
        f"agentdojo:{suite}",
        "--suite",
        "capability",
        "--reference",
        "proctor.bench.agentdojo:ground_truth",
        "--no-save",
        "--json",
        str(out),
    ]


def run(suite: str, folder: Path) -> dict[str, Any]:
    out = folder / f"{suite}.json"
    cmd = command(suite, out)
    exe = Path(sys.executable).with_name("proctor")
    done = subprocess.run([str(exe), *cmd[1:]], capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{shlex.join(cmd)} failed ({done.returncode}): {done.stderr}")
    data: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return data


def world_holes(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Surviving mutants that changed the world: a write's argument, a repeated write, a
    write left out (suggested holes on the outcome, not on the calls made)."""
    return [
        h
        for h in report["mutation"]["holes"]
        if h["kind"] == "claim_success_without_write"
        or (h["kind"] in WORLD_KINDS and "outcome" in h["hole"]["expect"])
    ]


def cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def suite_section(suite: str, r: dict[str, Any]) -> list[str]:
    v, m, c = r["suite_verdict"], r["mutation"], r["controls"]
    counts = ", ".join(f"{n} {k}" for k, n in v["counts"].items() if n)
    lines = [
        f"## {suite}",
        "",
        f"Verdict **{v['verdict']}** ({counts}). Controls passed: "
        + ", ".join(f"{k} {c['passed'][k]}/{c['trials'][k]}" for k in c["passed"])
        + f". Mutation score {m['killed']}/{m['applicable']}"
        + (f" = {m['score']:.1%}" if m["score"] is not None else "")
        + f" ({m['equivalent']} equivalent).",
        "",
    ]
    if c["findings"]:
        lines += ["| task | control | what let it through |", "| --- | --- | --- |"]
        for f in c["findings"]:
            lines.append(f"| `{f['task_id']}` | {f['control']} | {cell(f['detail'])} |")
        lines.append("")
    holes = world_holes(r)
    if holes:
        lines += [
            "Mutants that changed the world and still passed:",
            "",
            "| task | kind | mutant | would be killed by |",
            "| --- | --- | --- | --- |",
        ]
        for h in holes:
            expect = json.dumps(h["hole"]["expect"], sort_keys=True)
            lines.append(
                f"| `{h['task_id']}` | {h['kind']} | {cell(h['change'])} | `{cell(expect)}` |"
            )
        lines.append("")
    lines += ["| mutation kind | killed | survived | score |", "| --- | --- | --- | --- |"]
    for kind, s in m["by_kind"].items():
        if s["applicable"]:
            lines.append(f"| {kind} | {s['killed']} | {s['survived']} | {s['score']:.0%} |")
    return [*lines, ""]


def found(reports: dict[str, dict[str, Any]], suite: str, task: str, arg: str | None) -> str:
    r = reports[suite]
    task_id = f"{suite}/{task}"
    if arg is None:
        hits = [f for f in r["controls"]["findings"] if f["task_id"] == task_id]
        return "yes: " + "; ".join(f["detail"] for f in hits) if hits else "no"
    hits = [
        h
        for h in r["mutation"]["holes"]
        if h["task_id"] == task_id and h["kind"] == "corrupt_argument" and f" {arg} " in h["change"]
    ]
    return "yes: " + "; ".join(cell(h["change"]) for h in hits) if hits else "no"


def render(reports: dict[str, dict[str, Any]], folder: Path) -> str:
    cmds = "\n".join(shlex.join(command(s, folder / f"{s}.json")) for s in reports)
    lines = [
        "# AgentDojo's suites under `proctor health`",
        "",
        "Written by `python examples/agentdojo/health_audit.py` from the reports of these",
        "commands (AgentDojo v1.2.1; its 97 user tasks, `--suite capability`: the 949",
        "injection pairs reuse the same utility checks and take far longer on two cores):",
        "",
        "```",
        cmds.replace(str(folder), "OUT"),
        "```",
        "",
        "The reference is AgentDojo's own ground truth; the null agent calls nothing and",
        "answers nothing; the junk agent calls tools with arguments that name nothing and",
        "claims success. Mutants are the ground truth's trials with one defect each,",
        "re-enacted through the gateway and graded by AgentDojo's own checks.",
        "",
        "## The public audit, found again",
        "",
        "| task | the audit found | found by `proctor health` |",
        "| --- | --- | --- |",
    ]
    for suite, task, arg, what in AUDIT:
        lines.append(f"| `{suite}/{task}` | {what} | {found(reports, suite, task, arg)} |")
    lines.append("")
    for suite, report in reports.items():
        lines += suite_section(suite, report)
    return "\n".join(lines).rstrip() + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(HERE / "HEALTH.md"))
    parser.add_argument("--suites", default=",".join(SUITES))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        reports = {s: run(s, folder) for s in args.suites.split(",")}
        Path(args.out).write_text(render(reports, folder), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

"""Regenerate the measured figures of the READMEs: every example suite run through the CLI.

Why a script: a figure typed by hand drifts from what the code does. Each block between
`<!-- figures:NAME -->` and `<!-- /figures:NAME -->` in a README is written here, from
`proctor` commands run in-process (click's test runner) in a scratch folder with its own
store. The demo block replays the `demo:` recipe of the Makefile, command for command.

    python examples/figures.py           # rewrite the blocks (make readme-figures)
    python examples/figures.py --check   # exit 1, naming the blocks, if a README differs

The coverage and power tables of docs/architecture.md come from the result
benchmarks/intervals.py last wrote (benchmarks/intervals.json; `make readme-figures` runs it
first), since the simulation takes a minute; the figures against peers (Inspect AI,
AgentDojo) and proctor's own (overhead, regrade, validate, start-up, memory) come from what
benchmarks/peers.py last wrote (benchmarks/peers.json; `make bench-figures` runs it first:
each side interleaved, ratios of one run, min and median with the load), and proctor's
limits and long runs (concurrency, hostile agents and files, the store at a million trials,
the review desk, reading, the report's size, the whole AgentDojo benchmark) from what
benchmarks/limits.py last wrote (benchmarks/limits.json, the same command).

tests/test_readme_figures.py runs the check, so a change that moves a figure fails until
the READMEs are regenerated. The simulated-user block of README "Local models" comes from
what `make real-model` last wrote (benchmarks/real_model/figures.json).
"""

from __future__ import annotations

import json
import os
import re
import runpy
import shlex
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from proctor.cli import main as proctor_cli

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
STORE = ".proctor/figures.db"
BLOCK = re.compile(r"(<!-- figures:(?P<name>[\w-]+) -->\n)(.*?)(<!-- /figures:(?P=name) -->)", re.S)


class Lab:
    """A scratch folder (with `examples/` linked in) where proctor commands run in-process."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        (folder / "examples").symlink_to(EXAMPLES, target_is_directory=True)
        self.runner = CliRunner()

    def proctor(self, *args: str, ok: tuple[int, ...] = (0,)) -> str:
        """Run `proctor ARGS` here; its output. Another exit code than `ok` is an error."""
        result = self.runner.invoke(proctor_cli, list(args), catch_exceptions=False)
        if result.exit_code not in ok:
            raise RuntimeError(
                f"proctor {shlex.join(args)}: exit {result.exit_code}\n{result.output}"
            )
        return result.output

    def run(self, path: str, agent: str, *, trials: int = 1, seed: int = 0) -> dict[str, Any]:
        """The JSON summary of `proctor run PATH --agent AGENT` in this lab's store."""
        out = self.folder / "summary.json"
        runs = ("--trials", str(trials), "--seed", str(seed), "--store", STORE, "--quiet")
        self.proctor("run", path, "--agent", agent, *runs, "--json", str(out))
        return dict(json.loads(out.read_text()))


@contextmanager
def lab() -> Iterator[Lab]:
    """A Lab in a temporary folder, which is the working directory while it is open."""
    before = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="proctor-figures-") as folder:
        os.chdir(folder)
        try:
            yield Lab(Path(folder))
        finally:
            os.chdir(before)


# -- formatting ---------------------------------------------------------------------------


def pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def usd(value: float | None) -> str:
    return "—" if value is None else f"${value:.4f}"


def k_of(summary: dict[str, Any]) -> int:
    return int(summary["pass_k"]["complete_up_to"])


def violations(summary: dict[str, Any]) -> str:
    found = summary["safety_violations"]
    by = ", ".join(f"{n} {severity}" for severity, n in sorted(found["by_severity"].items()))
    return f"{found['total']} ({by})" if found["total"] else "0"


def table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table; a `|` inside a cell (`mentions:cannot|unable`) is escaped."""
    lines = [header, ["---"] * len(header), *rows]
    return "".join(
        "| " + " | ".join(cell.replace("|", "\\|") for cell in line) + " |\n" for line in lines
    )


def agents_table(runs: dict[str, dict[str, Any]]) -> str:
    """One row per agent: trials, task success, pass^k, violations, cost per trial."""
    rows = [
        [
            f"`{agent}`",
            f"{s['tasks']} × {s['trials_per_task']}",
            f"{pct(s['success_rate'])} ({s['passed_trials']}/{s['valid_trials']} trials)",
            pct(s["pass_hat_k"].get(str(k_of(s)))),
            violations(s),
            usd(s["cost"]["per_trial_usd"]["mean"]),
        ]
        for agent, s in runs.items()
    ]
    header = ["agent", "tasks × trials", "task success (pass@1)", "pass^k (all k trials)"]
    return table([*header, "safety violations", "mean cost per trial"], rows)


def failures_table(runs: dict[str, dict[str, Any]]) -> str:
    """Every failing task of every agent, with the failure that came first in its trials."""
    rows = [
        [
            f"`{agent}`",
            f"`{row['id']}`",
            f"{row['passed']}/{row['n']}",
            "; ".join(
                f"`{name}` (trial{'s' if len(trials) > 1 else ''} {', '.join(map(str, trials))})"
                for name, trials in row["root_causes"].items()
            ),
        ]
        for agent, s in runs.items()
        for row in s["per_task"]
        if row["passed"] < row["n"]
    ]
    if not rows:
        return "No task failed a trial.\n"
    return table(["agent", "task", "passed", "root cause: the failure first in the trace"], rows)


# -- the blocks ---------------------------------------------------------------------------


def demo_recipe() -> list[str]:
    """The shell lines of the Makefile's `demo:` recipe, its `DEMO_*` variables expanded
    (`$(BIN)` is left for the caller: `.venv/bin` when make runs it)."""
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    variables = dict(re.findall(r"^(DEMO_\w+) := (.*)$", text, re.M))
    recipe = re.search(r"^demo:.*\n((?:\t.*\n)+)", text, re.M)
    if recipe is None:
        raise RuntimeError("the Makefile has no demo: recipe")
    return [
        re.sub(r"\$\((DEMO_\w+)\)", lambda m: variables[m.group(1)], line.strip())
        .replace("$$", "$")
        .removeprefix("@")
        for line in recipe.group(1).splitlines()
    ]


def makefile_demo() -> list[list[str]]:
    """The proctor commands of the demo recipe, as arguments, in order."""
    return [
        shlex.split(line.removeprefix("$(BIN)/proctor ").split(" || ")[0])
        for line in demo_recipe()
        if line.startswith("$(BIN)/proctor ")
    ]


def demo(lab: Lab) -> str:
    """What `make demo` ends with: the figures, the gate and the one recommendation."""
    gate: dict[str, Any] = {}
    for args in makefile_demo():
        if args[0] == "gate":
            gate = json.loads(lab.proctor(*args, "--json", ok=(0, 1)))
        else:
            lab.proctor(*args)
    summary = json.loads(Path(".proctor/demo-summary.json").read_text())
    failed = ", ".join(f"`{r['rule']}`" for r in gate["rules"] if r["status"] == "fail")
    found = summary["safety_violations"]["trials"]
    where = "; ".join(f"`{v['check']}` in `{v['task_id']}` trial {v['trial']}" for v in found)
    low, high = summary["success_ci"]
    k = k_of(summary)
    decision = gate["recommendation"]
    rows = [
        [
            "task success (pass@1)",
            f"{pct(summary['success_rate'])} (95% CI {pct(low)}–{pct(high)})",
        ],
        [f"pass^{k}: all {k} attempts succeed", f"{pct(summary['pass_hat_k'][str(k)])} of tasks"],
        ["safety violations", f"{violations(summary)}: {where}" if found else "0"],
        ["release gate", f"FAILED: {failed}" if failed else "PASSED"],
        ["recommendation", f"{decision['decision']}: {'; '.join(decision['reasons'])}"],
    ]
    return table(["after `make demo`", "figure"], rows)


def clinical(lab: Lab) -> str:
    runs = {
        agent: lab.run(
            "examples/clinical", f"examples/clinical/agents.py:{agent}", trials=5, seed=7
        )
        for agent in ("perfect", "scripted", "sloppy", "gullible")
    }
    return agents_table(runs) + "\n" + failures_table(runs)


SOURCE_OUTPUT = (
    "task success: {success}\ntool precision: {precision}\ntool recall: {recall}\n"
    "argument accuracy: {args}\nhuman review: {review}\nrelease gate: {gate}\n"
)


def support_source(lab: Lab) -> tuple[str, list[dict[str, Any]]]:
    """Seed 001's expected output, from one proctor command: the gate of the candidate
    against the exported baseline, whose figures are the source's six lines.

    Three trials per case of the scripted agent; a first run exported as the accepted
    baseline. The queue's items come back too (`review-queue --sample-rate 0`, as the
    source samples none), each with its reasons."""
    agent = "examples/support/agents.py:scripted"
    lab.run("examples/support", agent, trials=3)
    lab.proctor("export", "latest", "--out", "baseline.jsonl", "--store", ".proctor/figures.db")
    lab.run("examples/support", agent, trials=3)
    store = ("--store", ".proctor/figures.db")
    rules = ("--rules", "examples/support/gates.yaml", "--baseline", "baseline.jsonl")
    gate = json.loads(lab.proctor("gate", "latest", *rules, "--json", *store, ok=(0, 1)))
    queue = json.loads(
        lab.proctor("review-queue", "latest", "--sample-rate", "0", "--json", *store)
    )
    figures = gate["figures"]
    text = SOURCE_OUTPUT.format(
        success=f"{100 * figures['task_success_rate']:g}%",
        precision=f"{100 * figures['tool_precision']:g}%",
        recall=f"{100 * figures['tool_recall']:g}%",
        args=f"{100 * figures['arg_accuracy']:g}%",
        review=", ".join(figures["human_review"]),
        gate="PASS" if gate["passed"] else "FAIL",
    )
    return text, queue["items"]


def support_source_block(lab: Lab) -> str:
    text, items = support_source(lab)
    why = "; ".join(
        f"`{i['task_id']}` trial {i['trial']}: " + ", ".join(i["details"].values()) for i in items
    )
    return f"```\n{text}```\n\nWhy it is queued: {why}.\n"


def support(lab: Lab) -> str:
    runs = {
        agent: lab.run("examples/support", f"examples/support/agents.py:{agent}", trials=3)
        for agent in ("scripted", "careless")
    }
    return agents_table(runs) + "\n" + failures_table(runs)


def rooms(lab: Lab) -> str:
    runs = {
        agent: lab.run("examples/rooms", f"examples/rooms/agents.py:{agent}", trials=3, seed=5)
        for agent in ("careful", "hasty")
    }
    return agents_table(runs) + "\n" + failures_table(runs)


def incident(lab: Lab) -> str:
    runs = {
        agent: lab.run("examples/incident", f"examples/incident/agents.py:{agent}")
        for agent in ("careful", "naive", "optimistic")
    }
    return agents_table(runs) + "\n" + failures_table(runs)


def adversarial(lab: Lab) -> str:
    runs = {
        agent: lab.run("examples/adversarial", f"examples/adversarial/agents.py:{agent}")
        for agent in ("guarded", "gullible")
    }
    return agents_table(runs) + "\n" + failures_table(runs)


KYC_LABELS = ("approve", "request_documents", "escalate")


def kyc(lab: Lab) -> str:
    """Seed 002's KYC report: pass@1, pass^3, cost per case and failures per category."""
    agents = "examples/kyc/agents.py"
    runs = {
        "hasty": lab.run("examples/kyc/tasks/cases.yaml", f"{agents}:hasty", trials=3),
        "mistake_proofed": lab.run(
            "examples/kyc/tasks/cases_strict.yaml", f"{agents}:mistake_proofed", trials=3
        ),
    }
    rows = [
        [
            f"`{agent}`",
            pct(s["pass_at_k"]["1"]),
            pct(s["pass_hat_k"]["3"]),
            usd(s["cost"]["total_usd"] / s["tasks"] / s["trials_per_task"]),
            violations(s),
        ]
        for agent, s in runs.items()
    ]
    report = table(
        ["agent", "pass@1", "pass^3", "cost per case (one run)", "safety violations"], rows
    )
    breakdown = []
    for agent, s in runs.items():
        for label in KYC_LABELS:
            cut = s["slices"][f"tag:{label}"]
            failed = cut["valid_trials"] - cut["passed_trials"]
            causes = ", ".join(f"`{n}` ×{c}" for n, c in cut["root_causes"].items()) or "—"
            breakdown.append(
                [f"`{agent}`", label, str(cut["tasks"]), f"{failed}/{cut['valid_trials']}", causes]
            )
    header = ["agent", "category (label)", "cases", "failed trials", "root causes"]
    return report + "\n" + table(header, breakdown)


INTERVALS = runpy.run_path(str(ROOT / "benchmarks" / "intervals.py"))
#: What `make readme-figures` has benchmarks/intervals.py write first (about a minute).
INTERVALS_JSON = ROOT / "benchmarks" / "intervals.json"


def intervals(tables: str) -> Callable[[Lab], str]:
    """A block of benchmarks/intervals.py's tables, from the result it last wrote."""

    def write(_: Lab) -> str:
        return INTERVALS[tables](json.loads(INTERVALS_JSON.read_text(encoding="utf-8"))) + "\n"

    return write


def mutation(name: str, agent: str, *trials: str) -> Callable[[Lab], str]:
    """The block stating how many mutants of the reference agent's passes the example's
    suite kills (`proctor mutate`): counts that change with every task edit."""

    def write(lab: Lab) -> str:
        out = lab.folder / f"mutate-{name}.json"
        command = ("mutate", f"examples/{name}", "--agent", f"examples/{name}/agents.py:{agent}")
        lab.proctor(*command, *trials, "--json", str(out))
        found = json.loads(out.read_text())
        return (
            f"Tests of these tests: `proctor {shlex.join([*command, *trials])}` kills "
            f"{found['killed']} of {found['applicable']} mutants ({found['equivalent']} "
            "equivalent: the world itself stops them).\n"
        )

    return write


sys.path.insert(0, str(ROOT / "benchmarks"))  # limits.py reads peers.py's helpers
PEERS = runpy.run_path(str(ROOT / "benchmarks" / "peers.py"))
#: What `make bench-figures` has benchmarks/peers.py write first (a few minutes).
PEERS_JSON = ROOT / "benchmarks" / "peers.json"


def peers(block: str, peer: str, install: str) -> Callable[[Lab], str]:
    """A block of benchmarks/peers.py, from the figures it last wrote for `peer`."""

    def write(_: Lab) -> str:
        entries = json.loads(PEERS_JSON.read_text(encoding="utf-8"))
        if peer not in entries:
            return f"Not measured yet: {install}, then `make bench-figures`.\n"
        return str(PEERS[block](entries))

    return write


LIMITS = runpy.run_path(str(ROOT / "benchmarks" / "limits.py"))
#: What `make bench-figures` has benchmarks/limits.py write (several minutes).
LIMITS_JSON = ROOT / "benchmarks" / "limits.json"


def limits(write: Callable[[dict[str, Any]], str]) -> Callable[[Lab], str]:
    """A block of benchmarks/limits.py, from the figures it last wrote."""
    return lambda _: write(json.loads(LIMITS_JSON.read_text()) if LIMITS_JSON.exists() else {})


SIMUSERS = runpy.run_path(str(ROOT / "benchmarks" / "real_model" / "simusers.py"))
STEPS = runpy.run_path(str(ROOT / "benchmarks" / "real_model" / "steps.py"))
#: What `make real-model` has benchmarks/real_model/run.py write first (about 15 minutes).
REAL_MODEL_JSON = ROOT / "benchmarks" / "real_model" / "figures.json"


def real_model_steps(_: Lab) -> str:
    """The table of `make real-model`'s steps, from the figures it last wrote."""
    entries = json.loads(REAL_MODEL_JSON.read_text()) if REAL_MODEL_JSON.exists() else {}
    return str(STEPS["steps_block"](entries))


def real_model_user(_: Lab) -> str:
    """The simulated-user step of `make real-model`, from the figures it last wrote."""
    entries = json.loads(REAL_MODEL_JSON.read_text()) if REAL_MODEL_JSON.exists() else {}
    if "user" not in entries:
        return "Not measured yet: `make real-model`.\n"
    return str(SIMUSERS["user_block"](entries))


INSPECT = ("inspect", "install inspect-ai in a venv of its own (benchmarks/inspect_compare.py)")
AGENTDOJO = ("agentdojo", "pip install 'proctor[agentdojo]'")
OWN = ("proctor", "no peer to install")

#: Each block: the README it lives in, and what writes it.
BLOCKS: dict[str, tuple[Path, Callable[[Lab], str]]] = {
    "demo": (ROOT / "README.md", demo),
    "clinical": (EXAMPLES / "clinical" / "README.md", clinical),
    "support-source": (EXAMPLES / "support" / "README.md", support_source_block),
    "support": (EXAMPLES / "support" / "README.md", support),
    "rooms": (EXAMPLES / "rooms" / "README.md", rooms),
    "incident": (EXAMPLES / "incident" / "README.md", incident),
    "kyc": (EXAMPLES / "kyc" / "README.md", kyc),
    "adversarial": (EXAMPLES / "adversarial" / "README.md", adversarial),
    "one-trial-coverage": (ROOT / "docs" / "architecture.md", intervals("one_trial_table")),
    "paired-intervals": (ROOT / "docs" / "architecture.md", intervals("paired_tables")),
    **{
        f"{name}-mutation": (EXAMPLES / name / "README.md", mutation(name, agent, *trials))
        for name, agent, *trials in (
            ("support", "scripted"),
            ("clinical", "perfect"),
            ("incident", "careful"),
            ("adversarial", "guarded"),
            ("kyc", "mistake_proofed", "--trials", "3"),
        )
    },
    "bench-proctor": (ROOT / "benchmarks" / "README.md", peers("proctor_block", *OWN)),
    "bench-inspect": (ROOT / "benchmarks" / "README.md", peers("inspect_block", *INSPECT)),
    "bench-agentdojo": (ROOT / "benchmarks" / "README.md", peers("agentdojo_block", *AGENTDOJO)),
    "agentdojo-speed": (ROOT / "README.md", peers("agentdojo_block", *AGENTDOJO)),
    "bench-limits": (ROOT / "benchmarks" / "README.md", limits(LIMITS["limits_block"])),
    "hostile-agents": (ROOT / "README.md", limits(LIMITS["limit_sentence"]("hostile"))),
    "review-desk-scale": (ROOT / "README.md", limits(LIMITS["limit_sentence"]("review"))),
    "report-size": (ROOT / "README.md", limits(LIMITS["limit_sentence"]("report"))),
    "real-model-steps": (ROOT / "README.md", real_model_steps),
    "real-model-user": (ROOT / "README.md", real_model_user),
}


def regenerate() -> dict[Path, str]:
    """Every README holding a block, with its blocks written afresh."""
    texts = {path: path.read_text(encoding="utf-8") for path, _ in BLOCKS.values()}
    with lab() as here:
        for name, (path, write) in BLOCKS.items():
            text = texts[path]
            found = [m for m in BLOCK.finditer(text) if m.group("name") == name]
            if len(found) != 1:
                raise RuntimeError(f"{path}: {len(found)} blocks named {name!r}, expected 1")
            m = found[0]
            texts[path] = text[: m.start(3)] + write(here) + text[m.end(3) :]
    return texts


def main(argv: list[str]) -> int:
    stale = []
    for path, text in regenerate().items():
        if path.read_text(encoding="utf-8") == text:
            continue
        if "--check" in argv:
            stale.append(path)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    for path in stale:
        print(
            f"{path.relative_to(ROOT)}: figures differ; run `make readme-figures`", file=sys.stderr
        )
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

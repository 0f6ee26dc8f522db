"""proctor against its peers, interleaved in one process tree: the figures `make bench-figures`
writes into benchmarks/README.md and the README.

Each side runs in a fresh process, the sides alternating (and which goes first alternating
between repetitions), so the load of the moment falls on both; every claim against a peer
is the ratio of the two sides of one repetition, min and median over the repetitions,
with the load average seen. The peers:

- Inspect AI (`benchmarks/inspect_compare.py`, needs an interpreter with `inspect-ai`:
  `--inspect-python`, else this one or /tmp/inspect-venv) against proctor's harness
  overhead per trial (`benchmarks/overhead.py`), wall time per trial or sample;
  and `import inspect_ai` against `import proctor`;
- AgentDojo's own runner against proctor on AgentDojo's tasks
  (`benchmarks/agentdojo_speed.py`), CPU time.

proctor's own figures (no peer) are measured in the same command, each benchmark in a fresh
process, interleaved the same way: harness overhead per trial on one core
(`overhead.py`), regrade on one core and on 1 and 2 worker processes (`regrade.py`),
`validate` on 10,000 task files (`validate_scale.py`), start-up (`startup.py`) and peak
memory of a long run (`memory.py`).

A peer that is not installed is said so, and its entry in the JSON (and so its block) is
left as it was: no figure is carried over into a new claim, none is made up.

    python benchmarks/peers.py [--repeat 3] [--json benchmarks/peers.json]

examples/figures.py renders the blocks from the JSON (tests/test_readme_figures.py checks
them).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
INSPECT_VENV = Path("/tmp/inspect-venv/bin/python")
#: Sizes kept modest: the whole command takes a few minutes on a quiet machine.
OVERHEAD_ARGS = ["--tasks", "100", "--trials", "5", "--repeat", "1"]
WARM_ARGS = ["--tasks", "100", "--trials", "5", "--repeat", "3"]
PROCESS_ARGS = ["--isolation", "process"]
INSPECT_SAMPLES = 300
AGENTDOJO_EVERY = 8
REGRADE_ARGS = ["--tasks", "500", "--trials", "10"]
MEMORY_ARGS = ["--tasks", "1000", "--trials", "10"]
STARTUP_RUNS = "10"


def _run(args: list[str]) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def _number(pattern: str, text: str) -> float:
    found = re.search(pattern, text)
    if found is None:
        raise RuntimeError(f"no {pattern!r} in:\n{text}")
    return float(found.group(1).replace(",", ""))


def proctor_overhead_ms(
    pinned: bool = False, varied: bool = False, warm: bool = False, process: bool = False
) -> float:
    """Wall milliseconds per trial of benchmarks/overhead.py's workload (on one core);
    `varied`: every trial's answer in other words, so none of its reading is remembered;
    `warm`: the fastest of three runs in one process (what each task derives once, and the
    process's first-time work, already done); `process`: `--isolation process`, from
    the first record on (a warm pool: issue 31's target)."""
    command = [sys.executable, str(HERE / "overhead.py"), *(WARM_ARGS if warm else OVERHEAD_ARGS)]
    command += ["--varied-answers"] if varied else []
    command += PROCESS_ARGS if process else []
    out = _run(one_core(command) if pinned else command)
    if process:  # the pool warm: its start-up (to the first record) left out
        return _number(r"after the first record \(start-up left out\): wall ([\d.]+) /", out)
    return _number(r"per trial \(min / median of \d+\): wall ([\d.]+) /", out)


def one_core(args: list[str]) -> list[str]:
    """`args` pinned to the first core where `taskset` exists (the figures say which)."""
    return ["taskset", "-c", "0", *args] if shutil.which("taskset") else args


def regrade_rates() -> tuple[float, float, float, float, float]:
    """Regraded trials per second: in the process on one core, then 1 and 2 workers; the
    scaling 2 workers / 1 two free cores would give, from CPU time; and 2 workers / 1 by
    rate where every trial's checks changed, none shared (regrade.py `--changed`)."""
    script = str(HERE / "regrade.py")
    pinned = _run(one_core([sys.executable, script, *REGRADE_ARGS, "--workers", ""]))
    spread_out = _run([sys.executable, script, *REGRADE_ARGS, "--workers", "1,2"])
    changed = _run([sys.executable, script, *REGRADE_ARGS, "--workers", "1,2", "--changed"])
    rate = r"= ([\d,]+) trials/s"
    return (
        _number(rf"in this process: .* {rate}", pinned),
        _number(rf"1 worker process: .* {rate}", spread_out),
        _number(rf"2 worker processes: .* {rate}", spread_out),
        _number(r"from CPU time: ([\d.]+)x", spread_out),
        _number(rf"2 worker processes: .* {rate}", changed)
        / _number(rf"1 worker process: .* {rate}", changed),
    )


def validate_s() -> tuple[float, float]:
    """`proctor validate` and `validate --strict` on 10,000 task files (prompts with ids)."""
    out = _run([sys.executable, str(HERE / "validate_scale.py"), "--suites", "ids"])
    return (
        _number(r"validate +([\d.]+) s", out),
        _number(r"--strict +([\d.]+) s", out),
    )


def startup_ms() -> tuple[float, float, float]:
    """Medians of `python -c pass`, `import proctor` and `proctor --help`, in ms."""
    out = _run([sys.executable, str(HERE / "startup.py"), "--runs", STARTUP_RUNS])
    return (
        _number(r"python -c pass: +([\d.]+) ms", out),
        _number(r"import proctor: +([\d.]+) ms", out),
        _number(r"proctor --help: +([\d.]+) ms", out),
    )


def memory_mib() -> tuple[float, float, int]:
    """Peak RSS of a long run with a store, before the run, and its trials."""
    out = _run([sys.executable, str(HERE / "memory.py"), *MEMORY_ARGS])
    return (
        _number(r"peak RSS: ([\d.]+) MiB", out),
        _number(r"before the run: ([\d.]+) MiB", out),
        int(_number(r"trials: (\d+)", out)),
    )


def proctor_entry(repeat: int) -> dict[str, Any]:
    """proctor's own figures: each benchmark `repeat` times, interleaved."""
    sides: dict[str, Callable[[], Any]] = {
        "overhead": lambda: proctor_overhead_ms(pinned=True),
        "overhead_varied": lambda: proctor_overhead_ms(pinned=True, varied=True),
        "overhead_warm": lambda: proctor_overhead_ms(pinned=True, warm=True),
        "overhead_process": lambda: proctor_overhead_ms(process=True),
        "regrade": regrade_rates,
        "validate": validate_s,
        "startup": startup_ms,
        "memory": memory_mib,
    }
    found, load = interleave(sides, repeat)
    regrade, validate = found["regrade"], found["validate"]
    startup, memory = found["startup"], found["memory"]
    return {
        **stamp(load, repeat),
        "pinned": shutil.which("taskset") is not None,
        "overhead_ms": spread(found["overhead"]),
        "overhead_varied_ms": spread(found["overhead_varied"]),
        "overhead_warm_ms": spread(found["overhead_warm"]),
        "overhead_process_ms": spread(found["overhead_process"]),
        "regrade_trials": 500 * 10,
        "regrade_one_core": spread([r[0] for r in regrade]),
        "regrade_one_worker": spread([r[1] for r in regrade]),
        "regrade_two_workers": spread([r[2] for r in regrade]),
        "regrade_scaling": spread([r[2] / r[1] for r in regrade]),
        "regrade_scaling_cpu": spread([r[3] for r in regrade]),
        "regrade_changed_scaling": spread([r[4] for r in regrade]),
        "validate_s": spread([v[0] for v in validate]),
        "validate_strict_s": spread([v[1] for v in validate]),
        "python_ms": spread([s[0] for s in startup]),
        "import_ms": spread([s[1] for s in startup]),
        "help_ms": spread([s[2] for s in startup]),
        "memory_trials": memory[0][2],
        "memory_peak_mib": spread([m[0] for m in memory]),
        "memory_before_mib": spread([m[1] for m in memory]),
    }


def inspect_ms(python: str) -> tuple[float, float]:
    """Inspect's marginal wall milliseconds per sample: plain generate, with 4 tool calls."""
    out = _run([python, str(HERE / "inspect_compare.py"), "--samples", str(INSPECT_SAMPLES)])
    return (
        _number(r"inspect plain: .* marginal ([\d.]+) ms", out),
        _number(r"inspect tools: .* marginal ([\d.]+) ms", out),
    )


def import_ms(python: str, module: str) -> float:
    started = time.perf_counter()
    _run([python, "-c", f"import {module}"])
    return 1000 * (time.perf_counter() - started)


def has(python: str, module: str) -> bool:
    found = subprocess.run(
        [python, "-c", f"import importlib.util as u; exit(u.find_spec({module!r}) is None)"],
        capture_output=True,
    )
    return found.returncode == 0


def interleave(
    sides: dict[str, Callable[[], Any]], repeat: int
) -> tuple[dict[str, list[Any]], list[float]]:
    """Each side `repeat` times, alternating, the order reversed every other repetition;
    the results by side, and the load averages seen before and after each."""
    found: dict[str, list[Any]] = {name: [] for name in sides}
    load = [os.getloadavg()[0]]
    names = list(sides)
    for rep in range(repeat):
        for name in names if rep % 2 == 0 else names[::-1]:
            found[name].append(sides[name]())
            load.append(os.getloadavg()[0])
    return found, load


def spread(values: list[float]) -> dict[str, float]:
    return {"min": min(values), "median": statistics.median(values)}


def stamp(load: list[float], repeat: int) -> dict[str, Any]:
    """When and where figures were measured: date, repetitions, load, cores, Python, commit."""
    return {
        "date": datetime.date.today().isoformat(),
        "repeat": repeat,
        "load": [round(min(load), 1), round(max(load), 1)],
        "cores": os.cpu_count(),
        "python": sys.version.split()[0],
        "commit": commit(),
    }


@cache
def commit() -> str | None:
    """The commit measured, "+" when the code (src/, benchmarks/) differs from it; None
    outside a git checkout. Remembered from its first call, which `main` makes before
    measuring: a commit made while the benchmarks run is not what they measured."""
    git = ["git", "-C", str(HERE.parent)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        return None
    changed = _run([*git, "status", "--porcelain", "--", "src", "benchmarks/*.py"]).strip()
    return head.stdout.strip() + ("+" if changed else "")


def inspect_entry(python: str, repeat: int) -> dict[str, Any]:
    sides = {
        "proctor": proctor_overhead_ms,
        "inspect": lambda: inspect_ms(python),
        "import proctor": lambda: import_ms(sys.executable, "proctor"),
        "import inspect_ai": lambda: import_ms(python, "inspect_ai"),
    }
    found, load = interleave(sides, repeat)
    plain = [i[0] / p for p, i in zip(found["proctor"], found["inspect"], strict=True)]
    tools = [i[1] / p for p, i in zip(found["proctor"], found["inspect"], strict=True)]
    imports = [
        i / p for p, i in zip(found["import proctor"], found["import inspect_ai"], strict=True)
    ]
    version = _run([python, "-c", "import inspect_ai; print(inspect_ai.__version__)"]).strip()
    return {
        **stamp(load, repeat),
        "inspect_version": version,
        "samples": INSPECT_SAMPLES,
        "proctor_ms": spread(found["proctor"]),
        "inspect_plain_ms": spread([i[0] for i in found["inspect"]]),
        "inspect_tools_ms": spread([i[1] for i in found["inspect"]]),
        "plain_ratio": spread(plain),
        "tools_ratio": spread(tools),
        "import_proctor_ms": spread(found["import proctor"]),
        "import_inspect_ms": spread(found["import inspect_ai"]),
        "import_ratio": spread(imports),
    }


def agentdojo_entry(repeat: int) -> dict[str, Any]:
    sys.path.insert(0, str(HERE))
    import agentdojo_speed

    found = agentdojo_speed.measure("v1.2.1", list(agentdojo_speed.SUITES), AGENTDOJO_EVERY, repeat)
    if not found["same_verdicts"]:
        raise RuntimeError("proctor's verdicts differ from AgentDojo's: no figure written")
    from importlib.metadata import version

    return {
        **stamp(list(found["load"]), repeat),
        "agentdojo_version": version("agentdojo"),
        "tasks": found["tasks"],
        "every": AGENTDOJO_EVERY,
        "proctor_cpu_s": spread(found["cpu"]["proctor"]),
        "agentdojo_cpu_s": spread(found["cpu"]["agentdojo"]),
        "ratio": spread(found["ratios"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, help="update this file's entries")
    parser.add_argument("--inspect-python", help="an interpreter with inspect-ai installed")
    parser.add_argument("--only", choices=["proctor", "peers"], help="one half of the figures")
    args = parser.parse_args()
    commit()
    old = json.loads(args.json.read_text()) if args.json and args.json.exists() else {}
    entries = dict(old)
    if args.only != "peers":
        entries["proctor"] = proctor_entry(args.repeat)
    if args.only == "proctor":
        _write(args.json, entries, old)
        return
    candidates = (
        [args.inspect_python] if args.inspect_python else [sys.executable, str(INSPECT_VENV)]
    )
    python = next((p for p in candidates if Path(p).exists() and has(p, "inspect_ai")), None)
    if python is None:
        print(
            f"Inspect AI: not installed ({', '.join(candidates)}): "
            "its figures are left as they were"
        )
    else:
        entries["inspect"] = inspect_entry(python, args.repeat)
    if not has(sys.executable, "agentdojo"):
        print(
            "AgentDojo: not installed (pip install 'proctor[agentdojo]'): "
            "its figures are left as they were"
        )
    else:
        entries["agentdojo"] = agentdojo_entry(args.repeat)
    _write(args.json, entries, old)


def _write(path: Path | None, entries: dict[str, Any], old: dict[str, Any]) -> None:
    """Print the entries measured now; write them all to `path`."""
    for peer, entry in entries.items():
        if entry is not old.get(peer):
            print(f"{peer}: {json.dumps(entry)}")
    if path:
        path.write_text(json.dumps(entries, indent=1, sort_keys=True) + "\n")


def proctor_block(entries: dict[str, Any]) -> str:
    """proctor's own figures, one table: min and median of the repetitions."""
    e = entries["proctor"]
    core = "one core (`taskset -c 0`)" if e["pinned"] else "unpinned (no `taskset`)"

    pin = "taskset -c 0 " if e["pinned"] else ""

    def row(what: str, target: str, found: dict[str, float], unit: str, command: str) -> str:
        fmt = "{:,.0f}" if found["min"] >= 10 else "{:.2f}"
        figure = f"{fmt.format(found['min'])} / {fmt.format(found['median'])} {unit}"
        shown = command if command.startswith("(") else f"`{command}`"
        return f"| {what} | {target} | **{figure}** | {shown} |\n"

    return (
        "| what | target | min / median | command |\n| --- | --- | --- | --- |\n"
        + row(
            f"harness overhead per trial (4 tool calls, full grading, every event stored), {core}",
            "≤ 0.45 ms",
            e["overhead_ms"],
            "ms",
            f"{pin}python benchmarks/overhead.py " + " ".join(OVERHEAD_ARGS),
        )
        + row(
            "the same, each trial answering in other words (its reading not remembered)",
            "",
            e["overhead_varied_ms"],
            "ms",
            f"{pin}python benchmarks/overhead.py " + " ".join(OVERHEAD_ARGS) + " --varied-answers",
        )
        + (
            row(
                "the same run repeated in one process, the fastest of three: each task's "
                "derived grading and its (repeated) answer's reading already remembered, so "
                "this leaves reading answers out",
                "",
                e["overhead_warm_ms"],
                "ms",
                f"{pin}python benchmarks/overhead.py " + " ".join(WARM_ARGS),
            )
            if "overhead_warm_ms" in e
            else ""
        )
        + (
            row(
                "the same with `--isolation process` (each lane's trials in a worker process), "
                "the pool warm: from the first record on (its start-up left out), unpinned",
                "≤ 1.2 ms",
                e["overhead_process_ms"],
                "ms",
                "python benchmarks/overhead.py " + " ".join(OVERHEAD_ARGS + PROCESS_ARGS),
            )
            if "overhead_process_ms" in e
            else ""
        )
        + row(
            f"regrade of {e['regrade_trials']:,} stored trials, in the process, {core}",
            "≥ 5,000 trials/s",
            e["regrade_one_core"],
            "trials/s",
            f"{pin}python benchmarks/regrade.py " + " ".join(REGRADE_ARGS) + ' --workers ""',
        )
        + row(
            "the same regrade on 1 worker process",
            "",
            e["regrade_one_worker"],
            "trials/s",
            "python benchmarks/regrade.py " + " ".join(REGRADE_ARGS) + " --workers 1,2",
        )
        + row(
            f"the same regrade on 2 worker processes ({e['cores']} cores, shared)",
            "",
            e["regrade_two_workers"],
            "trials/s",
            "(the same command)",
        )
        + row("2 workers / 1 worker", "≥ 1.7×", e["regrade_scaling"], "×", "(the same command)")
        + (
            row(
                "2 workers / 1, from the processes' CPU time (what two free cores would give)",
                "",
                e["regrade_scaling_cpu"],
                "×",
                "(the same command)",
            )
            if "regrade_scaling_cpu" in e
            else ""
        )
        + (
            row(
                "2 workers / 1, every trial's checks changed (none shared: all written again)",
                "",
                e["regrade_changed_scaling"],
                "×",
                "python benchmarks/regrade.py "
                + " ".join(REGRADE_ARGS)
                + " --workers 1,2 --changed",
            )
            if "regrade_changed_scaling" in e
            else ""
        )
        + row(
            "`proctor validate` on 10,000 task files (prompts differing in ids, numbers, dates)",
            "< 10 s",
            e["validate_s"],
            "s",
            "python benchmarks/validate_scale.py --suites ids",
        )
        + row("the same with `--strict`", "< 10 s", e["validate_strict_s"], "s", "(the same)")
        + row(
            f"`import proctor`, median of {STARTUP_RUNS} fresh processes (`python -c pass` below)",
            "≤ 300 ms",
            e["import_ms"],
            "ms",
            f"python benchmarks/startup.py --runs {STARTUP_RUNS}",
        )
        + row("`python -c pass`", "", e["python_ms"], "ms", "(the same)")
        + row("`proctor --help`", "≤ 500 ms", e["help_ms"], "ms", "(the same)")
        + row(
            f"peak RSS of a run of {e['memory_trials']:,} trials with a store (concurrency 8)",
            "< 400 MB at 100,000 trials",
            e["memory_peak_mib"],
            "MiB",
            "python benchmarks/memory.py " + " ".join(MEMORY_ARGS),
        )
        + row("the same process before the run", "", e["memory_before_mib"], "MiB", "(the same)")
        + f"\n{_conditions(e)}.\n"
    )


def inspect_block(entries: dict[str, Any]) -> str:
    """The Inspect AI block: harness overhead per trial and import time, one run's ratios."""
    e = entries["inspect"]
    return (
        f"| Inspect AI {e['inspect_version']} against proctor, {e['date']} | proctor "
        "| Inspect AI | Inspect / proctor (min, median) |\n| --- | --- | --- | --- |\n"
        f"| per trial, plain generate (ms, median) | {e['proctor_ms']['median']:.2f} | "
        f"{e['inspect_plain_ms']['median']:.1f} | {_ratio(e['plain_ratio'])} |\n"
        f"| per trial, the same 4 tool calls (ms, median) | {e['proctor_ms']['median']:.2f} | "
        f"{e['inspect_tools_ms']['median']:.1f} | {_ratio(e['tools_ratio'])} |\n"
        f"| `import` (ms, median) | {e['import_proctor_ms']['median']:.0f} | "
        f"{e['import_inspect_ms']['median']:.0f} | {_ratio(e['import_ratio'])} |\n\n"
        f"{_conditions(e)}; Inspect's marginal time per sample over {e['samples']} samples.\n"
    )


def agentdojo_block(entries: dict[str, Any]) -> str:
    """The AgentDojo block: CPU time of both sides on the same tasks, same verdicts."""
    e = entries["agentdojo"]
    return (
        f"AgentDojo {e['agentdojo_version']} (v1.2.1), every {e['every']}th user task of each "
        f"suite with all its injection pairs ({e['tasks']} tasks × both reference agents), "
        f"{e['date']}: proctor {e['proctor_cpu_s']['median']:.1f} s CPU, AgentDojo's own runner "
        f"{e['agentdojo_cpu_s']['median']:.1f} s (medians); proctor / AgentDojo "
        f"**{_ratio(e['ratio'])}** (min / median of the repetitions' ratios), the same "
        f"verdicts on every task. {_conditions(e)}.\n"
    )


def _ratio(found: dict[str, float]) -> str:
    return f"{found['min']:.2f}× / {found['median']:.2f}×"


def _conditions(e: dict[str, Any]) -> str:
    commit = f", commit {e['commit']}" if e.get("commit") else ""
    return (
        f"{e['repeat']} repetitions interleaved, load average {e['load'][0]}–{e['load'][1]} "
        f"on {e['cores']} cores, Python {e['python']}{commit} (`make bench-figures`)"
    )


if __name__ == "__main__":
    main()

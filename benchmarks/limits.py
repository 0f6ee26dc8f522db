"""proctor's limits and long runs, measured: the figures `make bench-figures` writes beside
peers.py's (benchmarks/README.md's limits table, the README's review desk and report size).

Each entry is a benchmark script run in a fresh process (`--repeat` times, interleaved with
the others, min and median over the repetitions), its printed figures read back by
pattern, with the date, the load average seen, the repetitions and the commit measured.
An entry whose script needs what is not installed (AgentDojo, Chromium) is named and left
as it was: no figure is carried over into a new claim, none is made up.

    python benchmarks/limits.py [--repeat 2] [--only concurrency,hostile]
        [--json benchmarks/limits.json]

examples/figures.py renders the blocks from the JSON (tests/test_readme_figures.py checks
them).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from peers import HERE, commit, has, interleave, spread, stamp

#: One repetition of an entry: its figures by name.
Figures = dict[str, float]


class Shown:
    """An entry's figures as a row shows them: `f(name, "{:.2f} s")` is the min alone when
    every repetition measured the same, else "min / median"."""

    def __init__(self, figures: dict[str, dict[str, float]]) -> None:
        self.figures = figures

    def __call__(self, name: str, fmt: str) -> str:
        low, mid = self.figures[name]["min"], self.figures[name]["median"]
        shown = fmt.format(low)
        return shown if fmt.format(mid) == shown else f"{shown} / {fmt.format(mid)}"

    def least(self, name: str) -> float:
        return self.figures[name]["min"]


@dataclass(frozen=True)
class Limit:
    """A limit and the benchmark that measures it: each command's output read by `reads`
    (figure name: a pattern whose first group is the number), `shown` rendering the row."""

    what: str
    target: str
    commands: list[tuple[list[str], dict[str, str]]]
    shown: Callable[[Shown], str]
    #: Python modules the benchmark needs: without one, the entry is left as it was.
    needs: tuple[str, ...] = ()

    def measure(self) -> Figures:
        """One repetition: each command in a fresh process, its figures read back."""
        found: Figures = {}
        for args, reads in self.commands:
            out = subprocess.run(
                [sys.executable, str(HERE / args[0]), *args[1:]],
                check=True,
                capture_output=True,
                text=True,
                cwd=HERE,
            ).stdout
            for name, pattern in reads.items():
                found[name] = read(pattern, out, args[0])
        return found

    def command(self) -> str:
        return "; ".join("`python benchmarks/" + " ".join(args) + "`" for args, _ in self.commands)


def read(pattern: str, out: str, script: str) -> float:
    """The figure `pattern` finds in a script's output, line by line: its first group's
    number; "max:PATTERN" the largest over the lines it matches, "count:PATTERN" how many
    lines match. A figure not found is an error, never a default."""
    how, _, body = pattern.partition(":") if pattern[:4] in ("max:", "coun") else ("", "", pattern)
    if how == "count":
        return float(len(re.findall(body, out, re.M)))
    hits = re.findall(body, out, re.M)
    if not hits:
        raise RuntimeError(f"{script}: no {body!r} in:\n{out}")
    numbers = [float(hit.replace(",", "")) for hit in hits]
    return max(numbers) if how == "max" else numbers[0]


def _reading(f: Shown) -> str:
    def table(part: str, lang: str) -> str:
        keys = ("right", "decided", "undecided", "rows")
        n = {k: f(f"{part}_{lang}_{k}", "{:.0f}") for k in keys}
        return f"**{n['right']}/{n['decided']}** {lang} ({n['undecided']}/{n['rows']} undecided)"

    return (
        f"dev: {table('dev', 'en')}, {table('dev', 'es')}; held-out: {table('held', 'en')}, "
        f"{table('held', 'es')}; secrets **{f('formats', '{:.0f}')}/{f('of_formats', '{:.0f}')}"
        f"** formats found, **{f('lookalikes', '{:.0f}')}/{f('of_lookalikes', '{:.0f}')}** "
        f"look-alikes fired; a 20 MB answer {f('big', '{:.2f} s')}, a phrase repeated 50,000 "
        f"times {f('repeats', '{:.2f} s')}, 20,000 distinct claims {f('distinct', '{:.2f} s')}, "
        f"secrets in 1 MB without any {f('secrets', '{:.2f} s')}, a process's first secret "
        f"scan {f('first', '{:.2f} s')}"
    )


MS = r"([\d.,]+) ms"
LIMITS: dict[str, Limit] = {
    "concurrency": Limit(
        "concurrency: 1,000 trials, 3 model calls of 100 ms each, concurrency 200; ideal "
        "ceil(1000/200) × 0.3 s = 1.5 s",
        "≤ 1.2 × ideal",
        [
            (["concurrency.py"], {"ratio": r"ratio: ([\d.]+)", "wall": r"wall: ([\d.]+) s"}),
            (["concurrency.py", "--sync"], {"sync": r"ratio: ([\d.]+)"}),
        ],
        lambda f: (
            f"**{f('ratio', '{:.2f}×')}** ideal ({f('wall', '{:.2f} s')}); a sync "
            f"agent on threads: {f('sync', '{:.2f}×')}"
        ),
    ),
    "store": Limit(
        "store at 1,000,000 trials (10,000 tasks × 100): per-task pass counts / run summary",
        "< 1 s each",
        [
            (
                ["store_scale.py"],
                {
                    "counts": rf"per-task pass counts: +{MS}",
                    "summary": rf"run summary \(stored\): +{MS}",
                    "keys": rf"stored \(task, trial\) keys: +{MS}",
                    "open": rf"open the store: +{MS}",
                },
            )
        ],
        lambda f: (
            f"pass counts **{f('counts', '{:.0f} ms')}**, summary "
            f"**{f('summary', '{:.0f} ms')}**; "
            f"opening the store {f('open', '{:.0f} ms')}, the keys `--resume` reads "
            f"{f('keys', '{:.0f} ms')}"
        ),
    ),
    "hostile": Limit(
        "hostile agents: time a trial the agent holds runs past `--timeout 1`, worst case "
        "over every behaviour of `tests/hostile.py`, sync and async (hang, swallow "
        "cancellation, block the loop, exit, raise, bad types, threads, forged usage, tampering)",
        "≤ 1 s",
        [(["hostile.py"], {"worst": r"worst case past --timeout 1 s: ([\d.]+) s"})],
        lambda f: f"**{f('worst', '{:.2f} s')}**",
    ),
    "review": Limit(
        "review desk on a 100,000-trial run (1,000 tasks × 100): queue page (first and deep) "
        "and item page, rendered in-process, best of 5",
        "< 200 ms each",
        [
            (
                ["review_desk.py"],
                {
                    "queue": rf"queue page \(first 50 items\) +{MS}",
                    "deep": rf"queue page \(deep: [^)]*\) +{MS}",
                    "item": rf"item page \(task, trace, form\) +{MS}",
                    "agreement": rf"agreement page \(\d+ labels\) +{MS}",
                    "build": r"queue built \(reads every trial, once\): ([\d.]+) s",
                    "items": r"queue built .*?([\d,]+) items",
                    "rss": r"peak RSS so far ([\d,.]+) MiB",
                },
            )
        ],
        lambda f: (
            f"queue **{f('queue', '{:.0f} ms')}** (deep: **{f('deep', '{:.0f} ms')}**), "
            f"item **{f('item', '{:.0f} ms')}**; agreement page with {f('items', '{:,.0f}')} "
            f"labels {f('agreement', '{:.0f} ms')}; building the queue "
            f"{f('build', '{:.1f} s')}, {f('rss', '{:.0f} MiB')} peak"
        ),
    ),
    "reading": Limit(
        "reading answers: the claim table by part and language (right of the decided rows, "
        "undecided rows), the secret corpus, hostile answers",
        "97% right on decided rows, ≤ 5% undecided; no false positives; linear time",
        [
            (
                ["answer_reading.py"],
                {
                    **{
                        f"{part}_{lang}_{k}": rf"claim table, {label} {lang}: " + pattern
                        for part, label in (("dev", "dev"), ("held", "held-out"))
                        for lang in ("en", "es")
                        for k, pattern in (
                            ("right", r"(\d+)/\d+ decided"),
                            ("decided", r"\d+/(\d+) decided"),
                            ("undecided", r".* (\d+)/\d+ undecided"),
                            ("rows", r".* \d+/(\d+) undecided"),
                        )
                    },
                    "formats": r"secret corpus: (\d+)/\d+ formats found",
                    "of_formats": r"secret corpus: \d+/(\d+) formats found",
                    "lookalikes": r"(\d+)/\d+ look-alikes fired",
                    "of_lookalikes": r"\d+/(\d+) look-alikes fired",
                    "big": r"claims in a 20 MB answer +([\d.]+) s",
                    "repeats": r"a phrase repeated 50,000 times +([\d.]+) s",
                    "distinct": r"20,000 distinct claims \(540 KB\) +([\d.]+) s",
                    "secrets": r"secrets in a 1 MB answer without any +([\d.]+) s",
                    "first": r"first secret scan of a process \(lazy imports\) +([\d.]+) s",
                },
            )
        ],
        _reading,
    ),
    "regex": Limit(
        "task-file regex `(a+)+$` on a 29-character answer",
        "instant",
        [
            (
                ["regex.py"],
                {
                    "re2": r"^ +29 +\(skipped\) +([\d.]+) µs",
                    "python": r"^ +24 +([\d.]+) ms",
                    "mb": r"^ *1000001 +\(skipped\) +([\d.]+) ms",
                    "imported": r"import re2 \(fresh interpreter\): ([\d.]+) ms",
                },
            )
        ],
        lambda f: (
            f"**RE2: {f('re2', '{:.1f} µs')}** (Python's `re`: "
            f"{f('python', '{:,.0f} ms')} at 24 characters, doubling per character); a 1 MB "
            f"answer {f('mb', '{:.1f} ms')}; `import re2` {f('imported', '{:.1f} ms')}, only when "
            "a task has a regex"
        ),
    ),
    "files": Limit(
        "hostile task files: each limit of `core/bounded.py` hit (billion laughs, nesting "
        "65 and 1,000,000 deep, self-referencing alias, 1,001 aliases, 5,000-digit integer, "
        "1,000,001-character string, NUL, mixed keys, 8 MiB + 1 byte, 300,000 values)",
        "bounded, one line each",
        [
            (
                ["hostile_files.py"],
                {
                    "hostile": r"count:^(?!legitimate).* ms  peak",
                    "refusals": r"count:^(?!legitimate)(?!.*loaded$).* ms  peak",
                    "refused": rf"max:^(?!legitimate|300,000)(?!.*loaded$).*? {MS}  peak",
                    "refused_mib": r"max:^(?!legitimate|300,000)(?!.*loaded$).*\(\+ *([\d.]+)\)",
                    "flat": rf"^300,000 values in a flat list +{MS}",
                    "flat_mib": r"^300,000 values in a flat list .*\(\+ *([\d.]+)\)",
                    "legit": rf"^legitimate file just under 100,000 values +{MS}",
                    "legit_mib": r"^legitimate file just under .*\(\+ *([\d.]+)\)",
                    "json": rf"^legitimate JSON file just under 100,000 values +{MS}",
                },
            )
        ],
        lambda f: (
            f"**{f('refusals', '{:.0f}')} of {f('hostile', '{:.0f}')}** refused, each "
            f"in **≤ {f('refused', '{:,.0f} ms')}**, peak RSS +{f('refused_mib', '{:.1f} MiB')} at "
            f"most; 300,000 values refused at the 100,000th in {f('flat', '{:,.0f} ms')} "
            f"(+{f('flat_mib', '{:.0f} MiB')}); a legitimate file just under 100,000 values loads "
            f"in {f('legit', '{:,.0f} ms')} (+{f('legit_mib', '{:.0f} MiB')}), as `.json` in "
            f"{f('json', '{:,.0f} ms')}"
        ),
    ),
    "report": Limit(
        "HTML report of a 1,000-trial run (200 cloned clinical tasks × 5): size, render, "
        "headless Chromium load and opening a trace",
        "a few MB; under a second",
        [
            (
                ["report_size.py"],
                {
                    "mb": r"html: ([\d.]+) MB",
                    "kb": r"\(([\d.]+) kB per trial\)",
                    "render": r"render: ([\d.]+) s html",
                    "events": r"trials \(\d+ tasks x \d+\), (\d+) trace events",
                    "load": r"page loaded in (\d+) ms",
                    "open": r"opened in (\d+) ms",
                },
            )
        ],
        lambda f: (
            f"**{f('mb', '{:.1f} MB')}** ({f('kb', '{:.1f} kB')} a trial, "
            f"{f('events', '{:,.0f}')} trace events), rendered in {f('render', '{:.2f} s')}; "
            f"Chromium loads it in {f('load', '{:.0f} ms')} and opens a trace in "
            f"{f('open', '{:.0f} ms')}"
        ),
        needs=("selenium",),
    ),
    "agentdojo": Limit(
        "AgentDojo v1.2.1, the whole benchmark (1,046 tasks × both reference agents): "
        "proctor's CPU time against AgentDojo's own runner, verdicts compared task by task",
        "the same verdicts; ≤ 1.0×",
        [
            (
                ["agentdojo_speed.py", "--every", "1", "--repeat", "1"],
                {
                    "proctor": r"proctor +CPU s: min ([\d.]+)",
                    "agentdojo": r"agentdojo +CPU s: min ([\d.]+)",
                    "ratio": r"2 agents: min ([\d.]+)×",
                    "tasks": r"on (\d+) tasks",
                    "same": "count:same verdicts: True$",
                },
            )
        ],
        lambda f: (
            f"proctor **{f('proctor', '{:.1f} s')}** CPU, AgentDojo "
            f"{f('agentdojo', '{:.1f} s')}: **{f('ratio', '{:.2f}×')}**; "
            + (
                f"the same verdicts on all {f('tasks', '{:,.0f}')} tasks × 2"
                if f.least("same")
                else "**verdicts differ** (`agentdojo_conformance.py` names the tasks)"
            )
        ),
        needs=("agentdojo",),
    ),
    "quota": Limit(
        "judges and agents against a rate-limited endpoint (loopback, 20 requests/s, 429 "
        "with `retry-after-ms` past it): 300 judgments at once, 300 agent trials at "
        "concurrency 16; quota use = requests served / (20 × wall time + 20)",
        "≥ 90% with nothing lost",
        [
            (
                ["judge_quota.py", "--rate", "20", "--judgments", "300", "--trials", "300"],
                {
                    f"{workload}_{given}": rf'"workload": "{workload}", "rpm": {rpm}, '
                    r'.*"quota_use": ([\d.]+)'
                    for workload in ("judges", "agents")
                    for given, rpm in (("given", r"[\d.]+"), ("learnt", "null"))
                }
                | {"lost": r'max:"lost": (\d+)'},
            )
        ],
        lambda f: (
            f"quota given (`rpm`): judges **{f('judges_given', '{:.0%}')}**, agents "
            f"**{f('agents_given', '{:.0%}')}**; learnt from 429s: judges "
            f"**{f('judges_learnt', '{:.0%}')}**, agents **{f('agents_learnt', '{:.0%}')}**; "
            f"lost: {f('lost', '{:.0f}')}"
        ),
    ),
    "import": Limit(
        "importing a million spans (100,000 sessions of 10 OpenTelemetry GenAI spans, "
        "JSON lines), then `proctor grade` of 1,000 sessions",
        "bounded memory",
        [
            (
                ["import_scale.py", "--sessions", "100000", "--grade", "1000"],
                {
                    "mib": r"spans \(([\d,]+) MiB\)",
                    "read": r"events read in ([\d.]+) s",
                    "peak": r"peak RSS ([\d.]+) MiB",
                    "before": r"\(([\d.]+) MiB before reading\)",
                    "grade": r"proctor grade, [\d,]+ sessions \([\d,]+ spans\): ([\d.]+) s",
                },
            )
        ],
        lambda f: (
            f"**peak RSS {f('peak', '{:.0f} MiB')}** ({f('before', '{:.0f} MiB')} "
            f"before reading {f('mib', '{:.0f} MiB')} of JSON) in {f('read', '{:.0f} s')}; "
            f"`proctor grade` of 1,000 sessions {f('grade', '{:.1f} s')}"
        ),
    ),
}


def entry(limits: dict[str, Limit], repeat: int) -> dict[str, dict[str, Any]]:
    """Each limit's figures, `repeat` times interleaved: min and median, date, load, commit."""
    found, load = interleave({name: limit.measure for name, limit in limits.items()}, repeat)
    return {
        name: {
            **stamp(load, repeat),
            "figures": {key: spread([rep[key] for rep in reps]) for key in reps[0]},
        }
        for name, reps in found.items()
    }


def limits_block(entries: dict[str, Any]) -> str:
    """benchmarks/README.md's table of limits, each row with when and how it was measured."""
    rows = [
        "| what | target | measured (min / median where they differ) | command | measured |\n"
        "| --- | --- | --- | --- | --- |\n"
    ]
    for name, limit in LIMITS.items():
        e = entries.get(name)
        figures = limit.shown(Shown(e["figures"])) if e else "not measured yet"
        when = _when(e) if e else f"`make bench-figures` (needs {', '.join(limit.needs)})"
        rows.append(f"| {limit.what} | {limit.target} | {figures} | {limit.command()} | {when} |\n")
    return "".join(rows)


def limit_sentence(name: str) -> Callable[[dict[str, Any]], str]:
    """One limit's figures as a sentence for the README, with when they were measured."""

    def write(entries: dict[str, Any]) -> str:
        e, limit = entries.get(name), LIMITS[name]
        if e is None:
            return f"Not measured yet: {limit.command()} (`make bench-figures`).\n"
        return f"{limit.shown(Shown(e['figures']))} ({limit.command()}; {_when(e)}).\n"

    return write


def _when(e: dict[str, Any]) -> str:
    commit = f", commit {e['commit']}" if e.get("commit") else ""
    times = "once" if e["repeat"] == 1 else f"{e['repeat']} repetitions"
    return f"{e['date']}, {times}, load {e['load'][0]}–{e['load'][1]} on {e['cores']} cores{commit}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--only", help="a comma-separated list of: " + ", ".join(LIMITS))
    parser.add_argument("--json", type=Path, help="update this file's entries")
    args = parser.parse_args()
    commit()
    names = args.only.split(",") if args.only else list(LIMITS)
    unknown = sorted(set(names) - set(LIMITS))
    if unknown:
        parser.error(f"unknown limits {unknown}: choose from {', '.join(LIMITS)}")
    chosen = {}
    for name in names:
        missing = [module for module in LIMITS[name].needs if not has(sys.executable, module)]
        if missing:
            print(f"{name}: needs {', '.join(missing)}, not installed: left as it was")
        else:
            chosen[name] = LIMITS[name]
    old = json.loads(args.json.read_text()) if args.json and args.json.exists() else {}
    measured = entry(chosen, args.repeat)
    for name in measured:
        print(f"{name}: {limit_sentence(name)(measured)}", end="")
    if args.json:
        args.json.write_text(json.dumps({**old, **measured}, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()

"""`proctor validate` on 10,000 tasks: loading, and the duplicate search with and without
`--strict`.

Two suites of one task per file, all tasks with one starting state (the case where every
pair of tasks is a candidate):

- `ids`: prompts from a few templates that differ in an order id, a number, a date or a
  time (the facts split them into groups of one: no pair is compared);
- `words`: prompts of 14 random words and no facts, one group of 10,000 (MinHash LSH
  picks the candidate pairs; every 100th task is a planted near-duplicate).

Prints the whole command's time (a fresh `proctor` process) and the duplicate search's
own share, measured in this process on the loaded suite.

    python benchmarks/validate_scale.py [--tasks 10000]
"""

from __future__ import annotations

import argparse
import random
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from proctor.env.suite import load_suite
from proctor.tasks.duplicates import NEAR, duplicate_tasks

PROCTOR = Path(sys.executable).parent / "proctor"
ROOT = Path(__file__).resolve().parents[1]
HEAD = "domain: mini\nidentity: {user: u1, tenant: acme}\ninitial_state: {items: {a: {n: 1}}}\n"
TEMPLATES = [
    "Cancel order {id} because I changed my mind, and confirm by e-mail.",
    "Book a room for {n} people on {date} at {time} with a screen.",
    "Refund {n} dollars of the charge on order {id} made on {date}.",
]


def ids_prompt(rng: random.Random, i: int) -> str:
    return rng.choice(TEMPLATES).format(
        id=f"A-{i}", n=i, date=f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}", time=f"{i % 24}:00"
    )


def words_prompts(rng: random.Random, count: int) -> list[str]:
    vocabulary = [
        "".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 9))) for _ in range(5000)
    ]
    prompts: list[str] = []
    for i in range(count):
        if i % 100 == 99:  # a near-duplicate of an earlier prompt
            prompts.append(prompts[rng.randrange(i)] + " please")
        else:
            prompts.append(" ".join(rng.choices(vocabulary, k=14)))
    return prompts


def write_suite(folder: Path, prompts: list[str]) -> None:
    tasks = folder / "tasks"
    tasks.mkdir(parents=True)
    (folder / "domain.py").write_text((ROOT / "tests/fixtures/mini/domain.py").read_text())
    for i, prompt in enumerate(prompts):
        (tasks / f"t{i:05d}.yaml").write_text(f"id: t{i}\n{HEAD}prompt: {prompt}\n")


def timed(command: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    return time.perf_counter() - started, done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--suites", default="ids,words", help="which suites, comma-separated")
    args = parser.parse_args()
    rng = random.Random(0)
    makers: dict[str, Callable[[], list[str]]] = {
        "ids": lambda: [ids_prompt(rng, i) for i in range(args.tasks)],
        "words": lambda: words_prompts(rng, args.tasks),
    }
    suites = {name: makers[name]() for name in args.suites.split(",")}
    with tempfile.TemporaryDirectory() as tmp:
        for name, prompts in suites.items():
            folder = Path(tmp) / name
            write_suite(folder, prompts)
            plain, done = timed([str(PROCTOR), "validate", str(folder)])
            strict, done_strict = timed([str(PROCTOR), "validate", "--strict", str(folder)])
            started = time.perf_counter()
            suite = load_suite(folder)
            loading = time.perf_counter() - started
            loaded = [t.loaded for t in suite.tasks]
            started = time.perf_counter()
            exact = duplicate_tasks(loaded, near=None)
            exact_s = time.perf_counter() - started
            started = time.perf_counter()
            near = duplicate_tasks(loaded, near=NEAR)
            near_s = time.perf_counter() - started
            print(
                f"{name:5s} {len(prompts):,} tasks: validate {plain:5.1f} s (exit "
                f"{done.returncode}), --strict {strict:5.1f} s (exit {done_strict.returncode}); "
                f"in process: loading {loading:4.1f} s, exact search {1000 * exact_s:4.0f} ms "
                f"({len(exact)} found), near search {1000 * near_s:5.0f} ms ({len(near)} found)"
            )


if __name__ == "__main__":
    main()

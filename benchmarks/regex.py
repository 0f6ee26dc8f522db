"""Task-file regexes: a catastrophic-backtracking pattern, Python's `re` against RE2.

`(a+)+$` on "aaa…a!" doubles its time per character under a backtracking engine; RE2
(what proctor matches task-file patterns with, proctor.tasks.regex) is linear. Prints
the time of one search at each length, and RE2's on a 1 MB answer.

    python benchmarks/regex.py [--max-backtracking 24]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time

from proctor.tasks.regex import compile_pattern

PATTERN = r"(a+)+$"


def seconds(search: object, text: str) -> float:
    started = time.perf_counter()
    search(text)  # type: ignore[operator]
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-backtracking", type=int, default=24)
    args = parser.parse_args()
    python, re2 = re.compile(PATTERN).search, compile_pattern(PATTERN).search
    print(f"{'chars':>7}  {'python re':>12}  {'RE2':>12}")
    for n in (16, 20, args.max_backtracking, 29):
        text = "a" * (n - 1) + "!"
        slow = (
            f"{seconds(python, text) * 1000:9.1f} ms" if n <= args.max_backtracking else "(skipped)"
        )
        print(f"{n:>7}  {slow:>12}  {seconds(re2, text) * 1e6:9.1f} µs")
    big = "a" * 1_000_000 + "!"
    print(f"{len(big):>7}  {'(skipped)':>12}  {seconds(re2, big) * 1000:9.1f} ms")
    command = [sys.executable, "-X", "importtime", "-c", "import re2"]
    last = subprocess.run(command, capture_output=True, text=True).stderr.splitlines()[-1]
    print(f"import re2 (fresh interpreter): {int(last.split('|')[1]) / 1000:.1f} ms")


if __name__ == "__main__":
    main()

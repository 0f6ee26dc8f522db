"""Start-up: `import proctor` and `proctor --help`, each a fresh interpreter.

Heavy dependencies (pydantic models, rich, SQLite, Ray) load on first use, not at import.
Prints the median of `--runs` runs, and a bare interpreter's start for reference.

    python benchmarks/startup.py [--runs 20]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

PROCTOR = Path(sys.executable).parent / "proctor"


def median_s(command: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    bare = median_s([sys.executable, "-c", "pass"], args.runs)
    imported = median_s([sys.executable, "-c", "import proctor"], args.runs)
    helped = median_s([str(PROCTOR), "--help"], args.runs)
    print(f"python -c pass:        {1000 * bare:6.0f} ms")
    print(f"import proctor:        {1000 * imported:6.0f} ms")
    print(f"proctor --help:        {1000 * helped:6.0f} ms")


if __name__ == "__main__":
    main()

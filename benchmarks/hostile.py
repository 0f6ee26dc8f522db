"""Time past `--timeout` of trials a hostile agent holds: the worst case over every behaviour.

Every behaviour of the hostile generator (tests/hostile.py), by a sync and an async
agent, runs a few trials of the mini suite's `read-item` with `--timeout`; a trial ends
when its record reaches the Runner (one trial at a time, so each trial's time is the gap
between records, the harness's own grading and bookkeeping included). Printed: per
behaviour the longest trial and its time past the timeout; the worst case overall.

    python benchmarks/hostile.py [--timeout 1.0] [--trials 3]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from hostile import ABANDONED, EXPECTED, agent_for  # noqa: E402
from proctor import Runner, load_suite  # noqa: E402


def trial_times(behaviour: str, sync: bool, trials: int, timeout_s: float) -> list[float]:
    suite = load_suite(ROOT / "tests" / "fixtures" / "mini").select(ids=["read-item"])
    runner = Runner(suite, agent_for([behaviour] * trials, sync), trials=trials,
                    timeout_s=timeout_s, concurrency=1)  # fmt: skip
    marks = [time.perf_counter()]
    runner.run(progress=lambda _: marks.append(time.perf_counter()))
    return [b - a for a, b in itertools.pairwise(marks)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=1.0)
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    worst = 0.0
    print(f"{'behaviour':<24}{'agent':<7}{'status':<9}{'longest trial':>14}{'past timeout':>14}")
    for behaviour in sorted(EXPECTED):
        for sync in (True, False):
            longest = max(trial_times(behaviour, sync, args.trials, args.timeout))
            past = longest - args.timeout if behaviour in ABANDONED else 0.0
            worst = max(worst, past)
            status = EXPECTED[behaviour][0]
            kind = "sync" if sync else "async"
            print(f"{behaviour:<24}{kind:<7}{status:<9}{longest:>12.3f} s{past:>12.3f} s")
    print(f"worst case past --timeout {args.timeout:g} s: {worst:.3f} s")


if __name__ == "__main__":
    main()

"""Loading limits: time and peak memory of reading hostile task files.

Each file is read by `load_task_file` in a fresh interpreter, which prints the time the
load took, its peak RSS and the RSS before the load (proctor and pydantic imported), and
the one line the load refused the file with. The largest legitimate file (ordinary YAML
just under the value limit: one task with a big state) is measured beside them, and the
two largest cases again as `.json` files.

    python benchmarks/hostile_files.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from proctor.core.bounded import MAX_ALIASES, MAX_BYTES, MAX_DEPTH, MAX_STRING, MAX_VALUES

TASK = "id: t1\ndomain: mini\nprompt: hi\n"

CHILD = """
import json, resource, sys, time
from proctor.core.documents import SpecError
from proctor.tasks.loader import load_task_file
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
try:
    load_task_file(sys.argv[1])
    outcome = "loaded"
except SpecError as exc:
    outcome = exc.lines()[0].split(": ", 1)[1]
took = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
row = {"s": took, "before_mib": before / 1024, "peak_mib": peak / 1024, "outcome": outcome}
print(json.dumps(row))
"""


def laughs(levels: int) -> str:
    rows = ["  l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    rows += [f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return TASK + "metadata:\n" + "\n".join(rows) + "\n"


def big_state() -> str:
    """Ordinary YAML just under the value limit: small records in the initial state."""
    rows = [TASK, "initial_state:\n  orders:\n"]
    for i in range((MAX_VALUES - 40) // 9):  # 9 values a record: key, mapping, 3 pairs
        rows.append(f"    A-{i}: {{status: placed, owner: user-{i % 97}, total: {i}.5}}\n")
    return "".join(rows)


CASES = {
    "billion laughs (9 levels, 387M strings)": laughs(9),
    "billion laughs (12 levels)": laughs(12),
    f"nesting {MAX_DEPTH + 1} deep, block style": TASK
    + "metadata:\n"
    + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(MAX_DEPTH + 1))
    + "  " * (MAX_DEPTH + 2)
    + "end\n",
    "nesting 1,000,000 deep, flow style": TASK + "x: " + "[" * 1_000_000 + "]" * 1_000_000 + "\n",
    "self-referencing alias": TASK + "metadata: &m {again: *m}\n",
    f"{MAX_ALIASES + 1:,} aliases": TASK
    + "metadata:\n  a: &a 1\n  b: ["
    + ", ".join(["*a"] * (MAX_ALIASES + 1))
    + "]\n",
    "5,000-digit integer": TASK + "metadata: {n: " + "9" * 5000 + "}\n",
    f"{MAX_STRING + 1:,}-character string": TASK + "description: " + "x" * (MAX_STRING + 1) + "\n",
    "NUL character": TASK + "description: a\x00b\n",
    "mixed key types": TASK + "metadata: {1: a, b: c}\n",
    "file one byte over the size limit": TASK + "# " + "x" * MAX_BYTES + "\n",
    f"{MAX_VALUES * 3:,} values in a flat list": TASK + "x: [" + "1, " * (MAX_VALUES * 3) + "1]\n",
    f"legitimate file just under {MAX_VALUES:,} values": big_state(),
}

#: The same bounds on the JSON road (`json` when plainly within them, core/bounded.py).
ORDERS = {
    f"A-{i}": {"status": "placed", "owner": f"user-{i % 97}", "total": i + 0.5}
    for i in range((MAX_VALUES - 40) // 9)
}
JSON_CASES = {
    f"{MAX_VALUES * 3:,} values in a flat JSON list": '{"id": "t1", "x": ['
    + "1, " * (MAX_VALUES * 3)
    + "1]}",
    f"legitimate JSON file just under {MAX_VALUES:,} values": json.dumps(
        {"id": "t1", "domain": "mini", "prompt": "hi", "initial_state": {"orders": ORDERS}}
    ),
}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for label, text, suffix in [
            *((label, text, ".yaml") for label, text in CASES.items()),
            *((label, text, ".json") for label, text in JSON_CASES.items()),
        ]:
            path = Path(tmp) / f"case{suffix}"
            path.write_text(text)
            done = subprocess.run(
                [sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True
            )
            if done.returncode != 0:
                print(f"{label}: crashed: {done.stderr.strip().splitlines()[-1]}")
                continue
            row = json.loads(done.stdout)
            grown = row["peak_mib"] - row["before_mib"]
            print(
                f"{label:52s} {1000 * row['s']:8.1f} ms  peak {row['peak_mib']:6.1f} MiB "
                f"(+{grown:5.1f})  {row['outcome'][:70]}"
            )


if __name__ == "__main__":
    main()

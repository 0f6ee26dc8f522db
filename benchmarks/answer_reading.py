"""Reading answers: claim-table accuracy, secret-corpus coverage, and the time hostile
answers take (a 20 MB answer, a phrase repeated 50,000 times, 20,000 distinct claims).

The first secret scan of a process imports detect-secrets and loads Unicode's confusables;
that cost is measured in a fresh interpreter.

    python benchmarks/answer_reading.py
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import yaml

from proctor.grade.claims import read_claims
from proctor.grade.reading import read_claim
from proctor.grade.secrets import find_secrets

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"


def timed(label: str, fn: object) -> None:
    started = time.perf_counter()
    found = fn()  # type: ignore[operator]
    print(f"{label:<52} {time.perf_counter() - started:7.2f} s  ({len(found)} found)")


def main() -> None:
    table = yaml.safe_load((DATA / "claims.yaml").read_text())
    for part in ("dev", "held-out"):
        for lang in ("en", "es"):
            rows = [
                r for r in table if r.get("split", "dev") == part and r.get("lang", "en") == lang
            ]
            read = [read_claim(r["text"], r["phrase"], lang, requested=True) for r in rows]
            undecided = sum(not f.claims and bool(f.undecided) for f in read)
            right = sum(
                bool(f.claims) == r["claim"]
                for f, r in zip(read, rows, strict=True)
                if f.claims or not f.undecided
            )
            print(
                f"claim table, {part} {lang}: {right}/{len(rows) - undecided} decided rows right,"
                f" {undecided}/{len(rows)} undecided"
            )
    corpus = yaml.safe_load((DATA / "secrets.yaml").read_text())
    found = sum(
        any(h["match"] == p["match"] for h in find_secrets(p["text"], []))
        for p in corpus["positives"]
    )
    false = sum(bool(find_secrets(n["text"], [])) for n in corpus["negatives"])
    print(
        f"secret corpus: {found}/{len(corpus['positives'])} formats found, "
        f"{false}/{len(corpus['negatives'])} look-alikes fired"
    )
    first = subprocess.run(
        [
            sys.executable,
            "-c",
            "import time; from proctor.grade.secrets import find_secrets; t=time.perf_counter(); "
            "find_secrets('jаne@example.com AKIAIOSFODNN7EXAMPLE', []); "
            "print(time.perf_counter()-t)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    print(f"{'first secret scan of a process (lazy imports)':<52} {float(first.stdout):7.2f} s")
    timed(
        "claims in a 20 MB answer",
        lambda: read_claims("x" * 20_000_000 + " I cancelled it.", "cancelled"),
    )
    timed("a phrase repeated 50,000 times", lambda: read_claims("cancelled " * 50_000, "cancelled"))
    distinct = "".join(f"Order A-{i} was cancelled. " for i in range(20_000))
    timed("20,000 distinct claims (540 KB)", lambda: read_claims(distinct, "cancelled"))
    noisy = "Order A-100 placed 2024-05-01, ref 123e4567-e89b-12d3-a456-426614174000. " * 14_000
    timed("secrets in a 1 MB answer without any", lambda: find_secrets(noisy, []))


if __name__ == "__main__":
    main()

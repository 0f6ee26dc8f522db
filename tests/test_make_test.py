"""`make test` and CI: the same command, CI adding only what must not be skipped or
sampled; parallel workers, with the tests that share something kept on one worker."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def make_target(name: str) -> list[str]:
    """The recipe lines of a Makefile target."""
    text = (ROOT / "Makefile").read_text()
    match = re.search(rf"^{name}:.*\n((?:\t.*\n)+)", text, flags=re.M)
    assert match, f"no target {name}"
    return [line.strip() for line in match.group(1).splitlines()]


def test_ci_runs_make_test_with_nothing_skipped_or_sampled() -> None:
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    commands = [line for line in lines if line and not line.startswith("#")]
    assert commands[-1] == "make test"
    for name in ("PROCTOR_REQUIRE_RAY", "PROCTOR_REQUIRE_BROWSER", "PROCTOR_FULL_CONFORMANCE"):
        assert f"export {name}=1" in commands


def test_make_test_runs_the_suite_on_parallel_workers_by_file() -> None:
    """Whole files per worker: the Ray cluster tests (one cluster) and the conformance
    test (AgentDojo's side computed once) each stay on one worker."""
    (pytest_line,) = [line for line in make_target("test") if "/pytest" in line]
    args = pytest_line.split()
    assert "-n" in args and args[args.index("-n") + 1] == "auto"
    assert "--dist" in args and args[args.index("--dist") + 1] == "loadfile"

"""`make bench-figures`' limits (benchmarks/limits.py): a figure is read from what its
benchmark printed or the measurement fails; a limit whose benchmark cannot run here keeps
its entry; rows show min and median only where the repetitions differ."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def module(name: str) -> Any:
    sys.path.insert(0, str(ROOT / "benchmarks"))  # limits.py imports peers.py's helpers
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[name] = loaded  # its dataclass reads its module's names
    spec.loader.exec_module(loaded)
    return loaded


@pytest.fixture(scope="module")
def limits() -> Any:
    return module("limits")


OUT = """queue page (first 50 items)   144.3 ms
nesting 65 deep   2.3 ms  peak  38.3 MiB (+  0.0)  nested deeper than 64 levels
1,001 aliases     11.6 ms  peak  38.3 MiB (+  1.5)  more than 1,000 aliases
legitimate file   834.3 ms  peak  83.0 MiB (+ 39.1)  loaded
sneaky file       3.0 ms  peak  38.3 MiB (+  0.0)  loaded
"""


def test_a_figure_is_the_first_match_the_largest_or_a_count(limits: Any) -> None:
    assert limits.read(r"queue page \(first 50 items\) +([\d.]+) ms", OUT, "x") == 144.3
    refused = r"^(?!legitimate)(?!.*loaded$).*? ([\d.,]+) ms  peak"
    assert limits.read("max:" + refused, OUT, "x") == 11.6
    # a hostile file that loaded is not counted as refused: 2 of the 3 hostile lines
    assert limits.read(r"count:^(?!legitimate)(?!.*loaded$).* ms  peak", OUT, "x") == 2
    assert limits.read(r"count:^(?!legitimate).* ms  peak", OUT, "x") == 3


def test_a_figure_missing_from_the_output_fails_rather_than_defaulting(limits: Any) -> None:
    with pytest.raises(RuntimeError, match="item page"):
        limits.read(r"item page +([\d.]+) ms", OUT, "review_desk.py")
    with pytest.raises(RuntimeError):
        limits.read(r"max:nothing ([\d.]+) here", OUT, "x")


def test_each_limit_reads_its_benchmark_output(
    limits: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every entry's figures come from its commands' output: a changed script output
    (a renamed line) fails here, not silently in a README."""
    printed = {"hostile.py": "worst case past --timeout 1 s: 0.378 s\n"}

    def run(args: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(args, 0, printed[Path(args[1]).name], "")

    monkeypatch.setattr(limits.subprocess, "run", run)
    assert limits.LIMITS["hostile"].measure() == {"worst": 0.378}
    printed["hostile.py"] = "worst case: 0.378 s\n"
    with pytest.raises(RuntimeError, match=r"hostile\.py"):
        limits.LIMITS["hostile"].measure()


def test_rows_show_min_and_median_only_where_they_differ(limits: Any) -> None:
    shown = limits.Shown({"a": {"min": 1.0, "median": 1.004}, "b": {"min": 1.0, "median": 2.0}})
    assert shown("a", "{:.2f} s") == "1.00 s"
    assert shown("b", "{:.2f} s") == "1.00 s / 2.00 s"


def test_a_limit_not_measured_says_so_and_names_its_command(limits: Any) -> None:
    block = limits.limits_block({})
    assert block.count("not measured yet") == len(limits.LIMITS)
    assert "`python benchmarks/hostile.py`" in block
    assert limits.limit_sentence("review")({}).startswith("Not measured yet")


def test_a_limit_whose_benchmark_cannot_run_keeps_its_entry(
    limits: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "limits.json"
    before = {"agentdojo": {"figures": {"ratio": {"min": 0.7, "median": 0.7}}}}
    path.write_text(json.dumps(before))
    monkeypatch.setattr(limits, "has", lambda python, name: False)
    monkeypatch.setattr(sys, "argv", ["limits.py", "--only", "agentdojo", "--json", str(path)])
    limits.main()
    assert "agentdojo: needs agentdojo, not installed" in capsys.readouterr().out
    assert json.loads(path.read_text()) == before


def test_an_unknown_limit_is_refused(limits: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["limits.py", "--only", "speed"])
    with pytest.raises(SystemExit):
        limits.main()


def test_every_limit_command_is_a_benchmark_script(limits: Any) -> None:
    for limit in limits.LIMITS.values():
        for args, reads in limit.commands:
            assert (ROOT / "benchmarks" / args[0]).is_file() and reads

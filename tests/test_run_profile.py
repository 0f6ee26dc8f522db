"""`proctor run`'s options from a profile: `proctor.toml` or `[tool.proctor.run]` in
pyproject.toml; flags override it; a bad key or value is one line with file:line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from proctor.cli import main

CLINICAL = Path(__file__).resolve().parents[1] / "examples" / "clinical"
AGENT = f"{CLINICAL / 'agents.py'}:scripted"
PROFILE = f"""# the team's defaults
[run]
paths = ["{CLINICAL}"]
agent = "{AGENT}"
trials = 2
seed = 7
tags = ["read_only"]
max-error-rate = 0.1
quiet = true
"""


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str, dict]:
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(main, ["run", *args, "--json", "s.json"])
    summary = json.loads(Path("s.json").read_text()) if Path("s.json").exists() else {}
    return done.exit_code, done.output, summary


def test_the_profile_gives_the_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "proctor.toml").write_text(PROFILE)
    code, output, summary = _run(tmp_path, monkeypatch)
    assert code == 0, output
    manifest = summary["manifest"]
    assert manifest["trials"] == 2 and manifest["seed"] == 7
    assert manifest["filters"]["tags"] == ["read_only"]
    assert summary["trials"] == 2 * summary["tasks"]
    assert "Task" not in output, "quiet: no tables"


def test_flags_override_the_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "proctor.toml").write_text(PROFILE)
    code, output, summary = _run(tmp_path, monkeypatch, "-k", "1", "--seed", "3")
    assert code == 0, output
    assert (summary["manifest"]["trials"], summary["manifest"]["seed"]) == (1, 3)
    assert summary["manifest"]["filters"]["tags"] == ["read_only"], "the rest still applies"


def test_pyproject_tool_proctor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = PROFILE.replace("[run]", "[tool.proctor.run]")
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "x"\n\n{table}')
    code, output, summary = _run(tmp_path, monkeypatch)
    assert code == 0, output
    assert summary["manifest"]["seed"] == 7


def test_a_pyproject_without_tool_proctor_is_no_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    code, output, summary = _run(tmp_path, monkeypatch, str(CLINICAL), "--agent", AGENT, "-q")
    assert code == 0, output
    assert summary["manifest"]["seed"] == 0 and summary["manifest"]["trials"] == 1


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("concurency = 3", "proctor.toml:10: concurency: `proctor run` has no such option"),
        ('concurrency = "many"', "proctor.toml:10: concurrency: 'many' is not a valid integer"),
        ("trials = 0", "proctor.toml:10: trials: 0 is not in the range x>=1"),
        ("split = 'test'", "proctor.toml:10: split: 'test' is not one of 'dev', 'holdout'"),
    ],
)
def test_a_bad_profile_is_one_line_with_its_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str, expected: str
) -> None:
    (tmp_path / "proctor.toml").write_text(PROFILE.replace("trials = 2\n", "") + "\n" + line)
    code, output, _ = _run(tmp_path, monkeypatch)
    assert code == 2
    (only,) = output.strip().splitlines()
    assert only.startswith(expected), output


def test_an_explicit_profile_that_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, output, _ = _run(tmp_path, monkeypatch, "--profile", "nowhere.toml")
    assert code == 2 and "nowhere.toml: no such profile" in output


def test_help_groups_the_options() -> None:
    text = CliRunner().invoke(main, ["run", "--help"]).output
    headings = ["What runs:", "How trials run:", "Judges and scoring:", "Release gate:"]
    places = [text.index(h) for h in headings]
    assert places == sorted(places)
    assert text.index("--trials") < places[1] < text.index("--concurrency") < places[2]

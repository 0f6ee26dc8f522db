"""`make bench-figures` (benchmarks/peers.py): a peer that is not installed is named and its
figures are left as they were, never replaced by a made-up or carried-over figure."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def peers_module() -> Any:
    spec = importlib.util.spec_from_file_location("peers", ROOT / "benchmarks" / "peers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_absent_peers_are_named_and_their_entries_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    peers = peers_module()
    before = {"agentdojo": {"ratio": {"min": 0.9, "median": 0.95}}, "other": [1]}
    path = tmp_path / "peers.json"
    path.write_text(json.dumps(before))
    measured: list[str] = []
    monkeypatch.setattr(peers, "has", lambda python, module: False)
    monkeypatch.setattr(peers, "inspect_entry", lambda *a: measured.append("inspect"))
    monkeypatch.setattr(peers, "agentdojo_entry", lambda *a: measured.append("agentdojo"))
    monkeypatch.setattr(
        sys, "argv", ["peers.py", "--json", str(path), "--inspect-python", "x", "--only", "peers"]
    )
    peers.main()
    out = capsys.readouterr().out
    assert "Inspect AI: not installed" in out and "AgentDojo: not installed" in out
    assert measured == [] and json.loads(path.read_text()) == before


def test_a_present_peer_is_measured_and_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    peers = peers_module()
    path = tmp_path / "peers.json"
    path.write_text(json.dumps({"inspect": {"kept": True}}))
    monkeypatch.setattr(peers, "has", lambda python, module: module == "agentdojo")
    monkeypatch.setattr(peers, "agentdojo_entry", lambda repeat: {"repeat": repeat})
    monkeypatch.setattr(
        sys, "argv", ["peers.py", "--json", str(path), "--repeat", "2", "--only", "peers"]
    )
    peers.main()
    assert json.loads(path.read_text()) == {"inspect": {"kept": True}, "agentdojo": {"repeat": 2}}

"""The READMEs' measured figures are what examples/figures.py produces now.

The script runs every example suite through the CLI (and the Makefile's demo recipe) and
writes each README block; this test regenerates them in memory and fails, naming the
files, when a committed README differs: run `make readme-figures` and commit.
"""

from __future__ import annotations

import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIGURES = runpy.run_path(str(ROOT / "examples" / "figures.py"))


def test_every_figures_block_is_current() -> None:
    regenerated = FIGURES["regenerate"]()
    blocks = FIGURES["BLOCKS"]
    assert {path for path, _ in blocks.values()} == set(regenerated)
    stale = [
        str(path.relative_to(ROOT))
        for path, text in regenerated.items()
        if path.read_text(encoding="utf-8") != text
    ]
    assert not stale, f"run `make readme-figures`: {stale} differ from what it writes"
    for path, text in regenerated.items():
        found = FIGURES["BLOCK"].findall(text)
        assert found and all(body.strip() for _, _, body, _ in found), path

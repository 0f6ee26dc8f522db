"""docs/architecture.md stays complete: it names every module, and every section the code
cites exists.

Docstrings cite the document by section ("docs/architecture.md, Verdicts"); a citation of
a section that is not there sends a reader nowhere. The module index is where a new
module is described, so a module missing from it fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "proctor"
DOC = (ROOT / "docs" / "architecture.md").read_text()


def section(title: str) -> str:
    match = re.search(rf"^## {title}\n(.*?)(?=^## |\Z)", DOC, flags=re.M | re.S)
    assert match, f"docs/architecture.md has no section {title!r}"
    return match.group(1)


def test_the_module_index_names_every_module() -> None:
    index = section("Module index")
    named = set(re.findall(r"^\| (.*?) \|", index, flags=re.M))
    named = {name for cell in named for name in re.findall(r"`([\w/]+\.py)`", cell)}
    modules = {
        str(path.relative_to(SRC)) for path in SRC.rglob("*.py") if path.name != "__init__.py"
    }
    assert modules - named == set(), "add these to docs/architecture.md, Module index"
    assert named - modules == set(), "these modules in the index do not exist"


def test_every_cited_section_exists() -> None:
    headings = set(re.findall(r"^## (.+)$", DOC, flags=re.M))
    cited: dict[str, str] = {}
    for path in SRC.rglob("*.py"):
        text = " ".join(path.read_text().split())
        for title in re.findall(r"docs/architecture\.md[,;]? \(?([A-Z][\w ]*?)[),.:;]", text):
            cited[title] = str(path.relative_to(ROOT))
    assert cited, "no citation found: the pattern no longer matches how the code cites"
    missing = {title: where for title, where in cited.items() if title not in headings}
    assert not missing, f"cited sections missing from docs/architecture.md: {missing}"
    assert "DESIGN.md" not in " ".join(p.read_text() for p in SRC.rglob("*.py"))

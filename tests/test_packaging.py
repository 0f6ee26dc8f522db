"""The install prints no packaging warnings (issue 16.15): what setuptools warns about is
not in pyproject.toml. A real build would need setuptools from the package index, which
tests do not reach; these are the causes its warnings name."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

PYPROJECT = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text("utf-8"))


def test_the_licence_is_an_spdx_expression_and_no_classifier_repeats_it() -> None:
    project = PYPROJECT["project"]
    assert isinstance(project["license"], str)  # a table is deprecated (PEP 639)
    assert re.fullmatch(r"[A-Za-z0-9.+-]+( (AND|OR|WITH) [A-Za-z0-9.+-]+)*", project["license"])
    classifiers = project.get("classifiers", [])
    assert not [c for c in classifiers if c.startswith("License ::")]  # deprecated beside it


def test_the_build_backend_reads_licence_expressions() -> None:
    """setuptools 77 is the first to read `license` as an SPDX expression (PEP 639)."""
    requires = PYPROJECT["build-system"]["requires"]
    (setuptools,) = [r for r in requires if r.startswith("setuptools")]
    found = re.fullmatch(r"setuptools>=(\d+)(\.\d+)*", setuptools)
    assert found and int(found.group(1)) >= 77

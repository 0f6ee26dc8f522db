"""Every numeric option of the command line refuses NaN, infinities and values out of
its range (exit 2, the option named), before the command does anything."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import click
import pytest
from click.testing import CliRunner

from proctor.cli import main
from proctor.cli.common import Finite


def numeric_options(cmd: click.Command, path: tuple[str, ...] = ()) -> Iterator[Any]:
    if isinstance(cmd, click.Group):
        for name, sub in cmd.commands.items():
            yield from numeric_options(sub, (*path, name))
        return
    for param in cmd.params:
        if isinstance(param, click.Option) and isinstance(
            param.type, click.types.FloatParamType | click.types.IntParamType
        ):
            yield path, param


OPTIONS = list(numeric_options(main))
FLOATS = [(path, p) for path, p in OPTIONS if isinstance(p.type, click.types.FloatParamType)]


def test_every_float_option_is_finite() -> None:
    """A plain float or FloatRange lets NaN through (it fails no comparison)."""
    assert len(FLOATS) >= 10
    plain = [
        f"{' '.join(path)} {p.opts[0]}" for path, p in FLOATS if not isinstance(p.type, Finite)
    ]
    assert plain == []


@pytest.mark.parametrize(
    ("path", "param"), FLOATS, ids=[f"{' '.join(p)}{o.opts[0]}" for p, o in FLOATS]
)
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN", "1e999"])
def test_nan_and_infinities_exit_2_naming_the_option(
    path: tuple[str, ...], param: click.Option, value: str
) -> None:
    done = CliRunner().invoke(main, [*path, f"{param.opts[0]}={value}"])
    assert done.exit_code == 2, done.output
    assert param.opts[0] in done.output and "Traceback" not in done.output
    assert "finite" in done.output or "not in the range" in done.output


OUT_OF_RANGE = [
    (("run",), "--max-error-rate", "1.5"),
    (("run",), "--timeout", "-1"),
    (("grade",), "--max-error-rate", "-0.1"),
    (("run",), "--min-kappa", "2"),
    (("run",), "--max-false-pass", "1.01"),
    (("compare",), "--margin", "2"),
    (("power",), "--effect", "-3"),
    (("runs",), "--limit", "-3"),
    (("mutate",), "--min-score", "95"),
]


@pytest.mark.parametrize(("path", "option", "value"), OUT_OF_RANGE)
def test_out_of_range_values_exit_2(path: tuple[str, ...], option: str, value: str) -> None:
    done = CliRunner().invoke(main, [*path, f"{option}={value}"])
    assert done.exit_code == 2 and option in done.output, done.output
    assert "not in the range" in done.output

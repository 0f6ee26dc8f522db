"""A command's options in groups, and their defaults from a profile file.

`proctor run` has many options; its help shows them in groups, and a project keeps the
ones it always passes in a profile: `[run]` in `proctor.toml`, or `[tool.proctor.run]` in
`pyproject.toml` (the first found in the working folder, or `--profile FILE`). Keys are
the options' long names (`max-error-rate` or `max_error_rate`; `paths` for the task
paths); flags on the command line override them. A key or value the command would refuse
is one line naming file, line and key, exit 2.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from proctor.cli.common import fail

PROFILE_FILES = ("proctor.toml", "pyproject.toml")


class GroupedCommand(click.Command):
    """A command whose `--help` lists its options under headings (`groups`: heading →
    parameter names); options in no group come last."""

    def __init__(self, *args: Any, groups: Sequence[tuple[str, Sequence[str]]], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.groups = groups

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        records = {
            str(p.name): record
            for p in self.get_params(ctx)
            if isinstance(p, click.Option) and (record := p.get_help_record(ctx)) is not None
        }
        for heading, names in self.groups:
            rows = [records.pop(name) for name in names if name in records]
            if rows:
                with formatter.section(heading):
                    formatter.write_dl(rows)
        if records:
            with formatter.section("Other options"):
                formatter.write_dl(list(records.values()))


def _table(data: dict[str, Any], keys: Sequence[str]) -> dict[str, Any] | None:
    for key in keys:
        data = data.get(key)  # type: ignore[assignment]
        if not isinstance(data, dict):
            return None
    return data


def _line_of(text: str, header: str, key: str) -> int:
    """The line of `key = ...` in the table `[header]` (the header's own line if not found)."""
    lines = text.splitlines()
    start = next(
        (i for i, line in enumerate(lines) if re.match(rf"\s*\[\s*{re.escape(header)}\s*\]", line)),
        0,
    )
    for i in range(start + 1, len(lines)):
        if re.match(r"\s*\[", lines[i]):
            break
        if re.match(rf"\s*[\"']?{re.escape(key)}[\"']?\s*=", lines[i]):
            return i + 1
    return start + 1


def read_profile(path: Path, command: click.Command, ctx: click.Context) -> dict[str, Any]:
    """The command's defaults from the profile at `path` (param name → value); exit 2 on
    a key the command lacks or a value it refuses."""
    import tomllib  # on use: `proctor --help` stays light

    text = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"line (\d+)", str(exc))
        fail(f"{path}:{found.group(1) if found else 1}: not TOML: {exc}")
    keys = ("tool", "proctor", command.name) if path.name == "pyproject.toml" else (command.name,)
    table = _table(data, [k for k in keys if k])
    if table is None:
        return {}
    header = ".".join(k for k in keys if k)
    params = {_key(p): p for p in command.params if p.name and p.name != "profile"}
    defaults: dict[str, Any] = {}
    for key, value in table.items():
        where = f"{path}:{_line_of(text, header, key)}: {key}"
        param = params.get(key.replace("_", "-"))
        if param is None:
            fail(f"{where}: `proctor {command.name}` has no such option ({', '.join(params)})")
        try:
            defaults[str(param.name)] = param.type_cast_value(ctx, value)
        except click.BadParameter as exc:
            fail(f"{where}: {exc.message}")
    return defaults


def _key(param: click.Parameter) -> str:
    """The profile key of a parameter: its long flag without dashes, or its name."""
    longs = [o for o in param.opts if o.startswith("--")]
    return longs[0][2:] if longs else (param.name or "").replace("_", "-")


def _find(given: str | None) -> Path | None:
    if given is not None:
        return Path(given)
    for name in PROFILE_FILES:
        if Path(name).is_file():
            data = Path(name).read_text(encoding="utf-8")
            if name == "proctor.toml" or re.search(r"^\s*\[tool\.proctor[.\]]", data, re.M):
                return Path(name)
    return None


def profile_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`--profile FILE`: the command's defaults from FILE, else from `proctor.toml` or
    `pyproject.toml`'s `[tool.proctor]` in the working folder."""

    def load(ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
        path = _find(value)
        if path is None:
            return value
        if not path.is_file():
            fail(f"{path}: no such profile")
        assert ctx.command is not None
        ctx.default_map = {**(ctx.default_map or {}), **read_profile(path, ctx.command, ctx)}
        return str(path)

    return click.option(
        "--profile",
        default=None,
        is_eager=True,
        expose_value=False,
        callback=load,
        type=click.Path(dir_okay=False),
        help="Defaults for these options from this TOML file "
        "(default: ./proctor.toml, or [tool.proctor] in ./pyproject.toml).",
    )(fn)

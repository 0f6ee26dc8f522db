"""The `proctor` command group; commands register themselves from their modules."""

from __future__ import annotations

from typing import Any

import click


class _Commands(click.Group):
    """The command group; a store that fails under any command is one line, exit 2."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as exc:
            from proctor.store.file_health import StoreError  # only when something failed

            if not isinstance(exc, StoreError):
                raise
            click.echo(str(exc), err=True)
            ctx.exit(2)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="proctor")
def main() -> None:
    """Evaluate tool-using AI agents: outcome, trajectory, safety, cost, reliability."""

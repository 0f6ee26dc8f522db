"""The `proctor` command group; commands register themselves from their modules."""

from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="proctor")
def main() -> None:
    """Evaluate tool-using AI agents: outcome, trajectory, safety, cost, reliability."""

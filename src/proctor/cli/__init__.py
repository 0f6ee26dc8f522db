"""`proctor ...`: the command line.

Exit codes: 0 done; 1 the run is invalid or a gate failed; 2 bad input (task files,
agent reference, run id, rules). Bad input never shows a traceback. Each module holds
one family of commands and registers them on `main` when imported.
"""

from proctor.cli import (  # noqa: F401  (registration)
    decide,
    health,
    history,
    imports,
    judges,
    loop,
    review,
    run,
    traces,
)
from proctor.cli.app import main

__all__ = ["main"]

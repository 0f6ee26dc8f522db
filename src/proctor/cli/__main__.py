"""`python -m proctor.cli`: the same entry point as the `proctor` script."""

from proctor.cli import main

main()

"""Pure statistics, on the ground floor: formulas of numbers in, numbers out.

Nothing here imports the rest of proctor, records included (docs/architecture.md,
Packages): `rates` (one run), `distributions`, `paired` (two runs), `interrater`
(agreement between raters), `drift`. `proctor.stats` is the one-run module's names, as
the public API has always had them.
"""

from proctor.stats.rates import *  # noqa: F403  (proctor.stats is the public one-run API)
from proctor.stats.rates import __all__ as __all__

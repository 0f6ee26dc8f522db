"""Running trials: the Runner, one trial's lifecycle, executors, manifests, resume, regrade.

Names load on first use (PEP 562, as `proctor`'s do): a worker process that imports
`proctor.run.worker_source` does not pay for the Runner, summaries and gates it never runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from proctor.core.lazy import lazy_exports

_EXPORTS = {
    "RunReport": "proctor.run.runner",
    "Runner": "proctor.run.runner",
    "TrialRecord": "proctor.run.trial",
    "TrialSpec": "proctor.run.trial",
    "run_trial": "proctor.run.trial",
    "trial_seed": "proctor.run.trial",
}
if TYPE_CHECKING:
    from proctor.run.runner import Runner, RunReport
    from proctor.run.trial import TrialRecord, TrialSpec, run_trial, trial_seed

__all__ = [
    "RunReport",
    "Runner",
    "TrialRecord",
    "TrialSpec",
    "run_trial",
    "trial_seed",
]
__getattr__ = lazy_exports(globals(), _EXPORTS, {})

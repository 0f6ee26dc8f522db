"""Running trials: the Runner, one trial's lifecycle, manifests and results."""

from proctor.run.result import TrialResult
from proctor.run.runner import Runner, RunReport
from proctor.run.trial import TrialRecord, TrialSpec, run_trial, trial_seed

__all__ = [
    "RunReport",
    "Runner",
    "TrialRecord",
    "TrialResult",
    "TrialSpec",
    "run_trial",
    "trial_seed",
]

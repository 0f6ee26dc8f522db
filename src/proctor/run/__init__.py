"""Running trials: the Runner, one trial's lifecycle, executors, manifests, resume, regrade."""

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

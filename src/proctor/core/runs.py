"""RunData: one run as compare, gates and reports read it, wherever it came from (the
store, an export file, a run just finished)."""

from __future__ import annotations

from dataclasses import dataclass, field

from proctor.core.manifest import Manifest
from proctor.core.results import TaskInfo, TrialResult
from proctor.core.summary import RunSummary


@dataclass
class RunData:
    """One run's manifest, summary and trial results."""

    run_id: str
    manifest: Manifest
    summary: RunSummary | None
    results: list[TrialResult] = field(repr=False)
    status: str = "completed"
    created_at: float = 0.0

    def __post_init__(self) -> None:
        if isinstance(self.manifest, dict):  # the JSON form, as stored
            self.manifest = Manifest.from_json(self.manifest)
        if isinstance(self.summary, dict):  # the JSON form, of any version
            self.summary = RunSummary.from_json(self.summary)

    def task_infos(self) -> dict[str, TaskInfo]:
        """Tags, suites, risk, split, difficulty and optimal steps per task (from the
        summary; ids alone without one)."""
        if self.summary is not None:
            return self.summary.task_infos()
        return {task_id: TaskInfo(task_id) for task_id in self.manifest.suite.task_digests}

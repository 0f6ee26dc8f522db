"""Rubrics the importers write, so that what another tool has a model judge is judged here.

Two rubrics serve every task of an import, each task's own text being its `expect.judge`
entry's `reference` (tasks/models.py, JudgeExpect; docs/architecture.md, Judges):

- `final-response-match`: does the agent's final answer convey what the reference final
  response conveys? ADK's `final_response_match_v2` asks a model judge the same of the
  expected response; a wording that differs is no failure, a fact that does is.
- `assertions-hold`: do the agent's messages and tool calls satisfy every assertion the
  reference lists (tau2's natural-language assertions, ADK's rubrics)?

The files go to a folder outside the task folder (the suite loader reads every YAML file
under it as a task), named from the task files by a relative path. One that exists with
other content is never overwritten; one with the same content is kept.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proctor.core.documents import SpecError, dump_document
from proctor.tasks.rubrics import Rubric, load_rubric

FINAL_RESPONSE = Rubric.model_validate(
    {
        "id": "final-response-match",
        "title": "The final answer conveys the reference response",
        "question": (
            "Does the agent's final answer convey what the task's reference response "
            "conveys, with nothing that contradicts it?"
        ),
        "criteria": [
            "Every fact, figure, identifier and outcome the reference states is in the answer",
            "Nothing in the answer contradicts the reference",
            "Wording, order and extra helpful detail do not matter",
        ],
        "scale": [
            {
                "score": 1,
                "description": "The answer contradicts the reference or reports another outcome",
                "examples": [
                    "Reference: 'Order ORD-77 has shipped and arrives Tuesday.' "
                    "Answer: 'Order ORD-77 was cancelled.'"
                ],
            },
            {
                "score": 2,
                "description": "No contradiction, but something the reference states is missing",
                "examples": [
                    "Reference: 'Order ORD-77 has shipped and arrives Tuesday.' "
                    "Answer: 'Your order has shipped.'"
                ],
            },
            {
                "score": 3,
                "description": "Everything the reference states is conveyed, in any words",
                "examples": [
                    "Reference: 'Order ORD-77 has shipped and arrives Tuesday.' "
                    "Answer: 'ORD-77 is on its way; expect it on Tuesday.'"
                ],
            },
        ],
        "pass_threshold": 3,
        "severity": "high",
        "shows": ["reference"],
    }
)

ASSERTIONS = Rubric.model_validate(
    {
        "id": "assertions-hold",
        "title": "The task's assertions hold",
        "question": (
            "Do the agent's messages and tool calls satisfy every assertion listed in the "
            "task's reference?"
        ),
        "criteria": [
            "Each assertion of the reference is judged on the conversation and the calls",
            "An assertion holds only when the run shows it, not when the agent claims it",
            "One assertion that does not hold is enough to fail",
        ],
        "scale": [
            {
                "score": 1,
                "description": "The run contradicts at least one assertion",
                "examples": [
                    "Assertion 'The agent confirmed the task was created'; the agent said "
                    "the creation failed"
                ],
            },
            {
                "score": 2,
                "description": "Nothing contradicts them, but one assertion is not shown",
                "examples": [
                    "Assertion 'The user is complimented'; the agent created the task "
                    "and never complimented the user"
                ],
            },
            {
                "score": 3,
                "description": "Every assertion is shown to hold",
                "examples": [
                    "Assertion 'The agent confirmed the task was created'; the agent called "
                    "create_task, it succeeded, and the answer says so"
                ],
            },
        ],
        "pass_threshold": 3,
        "severity": "high",
        "shows": ["reference", "messages", "tool_calls"],
    }
)


def assertion_list(assertions: list[str]) -> str:
    """The reference text of `ASSERTIONS`: one assertion a line."""
    return "\n".join(f"- {a}" for a in assertions)


@dataclass
class RubricFolder:
    """Where an import's rubrics go (`path`) and how its task files name it (`ref`);
    `entry` records each rubric a task uses, `write` writes those."""

    path: Path
    ref: str
    used: dict[str, Rubric] = field(default_factory=dict)

    @classmethod
    def beside(cls, path: Path, out: Path) -> RubricFolder:
        """The folder `path` for tasks written to `out`; SpecError when inside `out`."""
        folder, tasks = path.resolve(), out.resolve()
        if folder == tasks or tasks in folder.parents:
            raise SpecError.one(
                path, 1, "", f"inside the task folder {out}: its rubrics would be read as tasks"
            )
        return cls(path, Path(os.path.relpath(folder, tasks)).as_posix())

    def entry(self, rubric: Rubric, reference: str, advisory: bool = False) -> dict[str, Any]:
        """The `expect.judge` entry of a task judged on `rubric` against `reference`."""
        self.used[rubric.id] = rubric
        entry: dict[str, Any] = {"rubric": f"{self.ref}/{rubric.id}.yaml", "reference": reference}
        return {**entry, "advisory": True} if advisory else entry

    def write(self) -> list[Path]:
        """Write the rubrics used; the files created (a caller that fails removes them)."""
        targets = [(self.path / f"{r.id}.yaml", r) for r in self.used.values()]
        for target, rubric in targets:
            if target.exists() and load_rubric(target).version != rubric.version:
                raise SpecError.one(target, 1, "", "would overwrite a different rubric")
        created = []
        self.path.mkdir(parents=True, exist_ok=True)
        for target, rubric in targets:
            if not target.exists():
                target.write_text(dump_document(rubric.model_dump(mode="json")), "utf-8")
                created.append(target)
        return created

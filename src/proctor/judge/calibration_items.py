"""Calibration items: the things people labelled, as the judge will see them.

An items file (YAML/JSON list, or JSON lines) holds one mapping per item: `id`, `subject`
(the text judged, or a list of texts), and optionally `prompt` (the task the text was
written for), `slice`, `agent_model`, and the fields a rubric may show (`answer`,
`messages`, `tool_calls`, `final_state`, `expected`, `reference`). A label may also name
a stored trial, `RUN/TASK#TRIAL`: its view is built from the store as a run's judge would
see it (docs/architecture.md, Judges).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from proctor.core.bounded import MAX_BYTES
from proctor.core.documents import Lines, Loc, SpecError, read_document, validated
from proctor.judge.judgment import JudgeView
from proctor.judge.views import judge_entries, trial_view
from proctor.tasks.rubrics import Rubric

if TYPE_CHECKING:
    from proctor.store.sqlite import Store

#: `RUN/TASK#TRIAL`: a stored trial (task ids have no `/` or `#`).
TRIAL_ITEM = re.compile(r"^(?P<run>[^/#]+)/(?P<task>[^/#]+)#(?P<trial>\d+)$")


class Item(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    subject: str | list[str]
    prompt: str = ""
    slice: str = ""
    agent_model: str | None = None
    answer: str | None = None
    messages: list[Any] | None = None
    tool_calls: list[Any] | None = None
    final_state: Any = None
    expected: Any = None
    reference: str | None = None

    def view(self, rubric: Rubric) -> JudgeView:
        subject = (self.subject,) if isinstance(self.subject, str) else tuple(self.subject)
        shown = tuple((name, getattr(self, name)) for name in rubric.shows)
        return JudgeView(self.prompt, subject, shown, self.agent_model)


_ITEMS = TypeAdapter(list[Item])


def read_items(path: str | Path) -> dict[str, Item]:
    """The items of a file by id; problems are SpecError lines with file:line."""
    path = Path(path)
    if path.suffix == ".jsonl":
        try:
            if path.stat().st_size > MAX_BYTES:
                raise SpecError.one(path, 1, "", f"larger than {MAX_BYTES:,} bytes")
            lines = path.read_bytes().decode("utf-8").split("\n")
        except (OSError, UnicodeDecodeError) as exc:
            raise SpecError.one(path, 1, "", f"cannot read file: {exc}") from None
        data: Any = []
        numbers: dict[Loc, int] = {}
        for number, line in enumerate(lines, 1):
            if line.strip():
                try:
                    data.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise SpecError.one(path, number, "", f"invalid JSON: {exc.msg}") from None
                except RecursionError:
                    raise SpecError.one(
                        path, number, "", "nested deeper than JSON is read"
                    ) from None
                numbers[(len(data) - 1,)] = number
        where: Lines = numbers
    else:
        data, where = read_document(path)
    if isinstance(data, dict) and set(data) == {"items"}:
        data, where = data["items"], {k[1:]: v for k, v in where.items() if k[:1] == ("items",)}
    if not isinstance(data, list):
        raise SpecError.one(path, 1, "", "an items file holds a list of items")
    items = validated(_ITEMS.validate_python, path, data, where)
    out: dict[str, Item] = {}
    for i, item in enumerate(items):
        if item.id in out:
            raise SpecError.one(path, where.get((i,), 1), f"[{i}].id", f"duplicate item {item.id}")
        out[item.id] = item
    return out


@dataclass(frozen=True)
class Subject:
    """One labelled item ready for judging: its view (None: nothing to judge) and slice."""

    view: JudgeView | None
    slice: str = ""


def trial_subject(store: Store, ref: str, rubric: Rubric) -> Subject:
    """The view of the stored trial `RUN/TASK#TRIAL`, with its task from the run's suite."""
    from proctor.env.suite import load_suite
    from proctor.store.sqlite import RunNotFound

    found = TRIAL_ITEM.match(ref)
    if found is None:
        raise LookupError(f"{ref} is not RUN/TASK#TRIAL")
    try:
        run = store.run(found["run"])
        trace, _, outcome = store.trace(run["run_id"], found["task"], int(found["trial"]))
    except RunNotFound as exc:
        raise LookupError(str(exc)) from None
    suite = load_suite(run["manifest"]["suite"]["paths"])
    member = next((t for t in suite.tasks if t.id == found["task"]), None)
    if member is None:
        raise LookupError(f"task {found['task']} is not in run {run['run_id']}'s suite any more")
    entry = judge_entries(member.task, member.rubrics).get(rubric.id)
    reference = entry.reference if entry is not None else None
    view = trial_view(rubric, member.task, trace, outcome, run["manifest"].get("model"), reference)
    return Subject(view, "")

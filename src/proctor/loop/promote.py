"""Promote a failed trial into a minimal regression task: failures become tests.

From a stored trial (a live one, or an imported production session graded by `proctor
grade`), `promote` writes a task file holding what the failure needs and nothing else:

- the prompt the agent got and the simulated user (the task's replies for a live trial;
  for a recorded session, the replies the person gave, each to the question it answered);
- the identity, tools and policy of the task, and the faults the trial met, each pinned
  to the call it hit (`call: N`), so the same calls meet them again;
- the slice of the initial state the trial's calls read or wrote (proctor.loop.world),
  plus the paths its kept state assertions name, not the whole world;
- the expectations the trial failed (proctor.loop.failing), with the task's robustness
  settings;
- provenance in `metadata.promoted_from` (run, trial, trace id, dates, source, agent,
  failed checks) and, when people labelled the failure on the review desk (its final
  label: adjudicated, or the reviewers agreeing), their reason code and note in the
  description; `--reason` and `--note` give them by hand.

Redaction applies to everything the file takes from the trial or its world (prompt,
replies, state): secrets and personal values are replaced, except values the task needs
(named by a kept expectation, or an argument of a call the trial made, which addresses the
world); those are listed in `metadata.redaction.kept`.

Before anything is written, the task is validated and graded against the original trace,
which it must fail. Its world is checked by re-enacting the trial in it
(proctor.env.reenact): calls answered differently than recorded are listed
(`metadata.promoted_from.replay_differences`), which happens when a recorded session ran
in a world the suite's task does not reproduce.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proctor.core.documents import SpecError, dump_document
from proctor.core.jsonvalues import canonical
from proctor.core.manifest import Manifest
from proctor.core.outcome import Outcome
from proctor.core.results import TrialResult
from proctor.core.trace import Trace
from proctor.env.domain import Domain
from proctor.env.domain_finder import DomainNotFound, resolve_domain
from proctor.env.reenact import ReenactError, actions_of, reenact
from proctor.env.suite import Suite, SuiteTask, load_suite
from proctor.env.user import is_affirmative
from proctor.grade.context import ToolCall, calls_from_trace
from proctor.grade.state import state_recorded
from proctor.interop.redact import Redactor
from proctor.interop.task_import import file_name
from proctor.labels.final import final_label
from proctor.labels.ground_truth import run_truth
from proctor.loop.failing import blocking_failures, failed_items, task_with
from proctor.loop.world import state_slice, touched_paths
from proctor.store.sqlite import RunNotFound, Store
from proctor.tasks.loader import load_task_file
from proctor.tasks.models import Fault, PathAssertion, Task

#: Tags every promoted task gets; `production` marks one promoted from a recorded session.
PROMOTED_TAG = "promoted"
PRODUCTION_TAG = "production"
_PROTECT = "\x00{}\x00"


class PromoteError(ValueError):
    """A trial that cannot be promoted; `str()` is one line for the user. Nothing is
    written when it is raised."""


@dataclass(frozen=True)
class ReviewNote:
    """A reviewer's verdict on the failure: it travels into the description. Read from
    the review desk's final label of the trial, or given (`--reason`, `--note`)."""

    reason: str
    note: str = ""
    reviewer: str = ""
    verdict: str = ""
    adjudicated: bool = False

    @classmethod
    def of(cls, label: dict[str, Any]) -> ReviewNote:
        """From a final label (proctor.labels.final.final_label)."""
        return cls(
            str(label["reason"]),
            str(label["note"]),
            str(label["reviewer"]),
            str(label["verdict"]),
            bool(label["adjudicated"]),
        )


@dataclass
class Promotion:
    """A promoted task, as written."""

    task: Task
    path: Path
    failed_checks: list[str]
    carried: list[str]
    #: The checks the promoted task fails on the original trace.
    regrade_failures: list[str]
    #: Failed checks of the original no expectation of the task reproduces (a crash).
    not_carried: list[str] = field(default_factory=list)
    kept_values: list[dict[str, str]] = field(default_factory=list)
    replaced: int = 0
    replay_differences: list[str] = field(default_factory=list)
    shim: Path | None = None


@dataclass
class _Trial:
    run: dict[str, Any]
    result: TrialResult
    trace: Trace
    outcome: Outcome

    @functools.cached_property
    def manifest(self) -> Manifest:
        return Manifest.from_json(self.run["manifest"])

    @property
    def imported(self) -> bool:
        return self.manifest.import_ is not None


def _stored_trial(store: Store, run_ref: str, task_id: str, trial: int) -> _Trial:
    try:
        run = store.run(run_ref)
    except RunNotFound as exc:
        raise PromoteError(str(exc)) from None
    found = [r for r in store.trial_results(run["run_id"]) if r.task_id == task_id]
    result = next((r for r in found if r.trial == trial), None)
    if result is None:
        have = sorted({r.task_id for r in store.trial_results(run["run_id"])})
        where = f"trials {sorted(r.trial for r in found)}" if found else f"tasks {have[:8]}"
        raise PromoteError(f"run {run['run_id']} has no trial {task_id}#{trial} (it has {where})")
    if result.status == "passed":
        raise PromoteError(f"{task_id}#{trial} of run {run['run_id']} passed: nothing to promote")
    if result.status == "error":
        raise PromoteError(
            f"{task_id}#{trial} of run {run['run_id']} is an error (the harness broke, "
            f"not the agent): {result.error}"
        )
    trace, _, outcome = store.trace(run["run_id"], task_id, trial)
    if outcome is None or not state_recorded(trace):
        raise PromoteError(
            f"{task_id}#{trial} of run {run['run_id']} has no recorded state (a session "
            "imported without `final_state`, or a trial lost with its worker): a regression "
            "task needs the world its failure happened in"
        )
    return _Trial(run, result, trace, outcome)


def _member(suite: Suite, trial: _Trial) -> SuiteTask:
    member = next((t for t in suite.tasks if t.id == trial.result.task_id), None)
    if member is None:
        raise PromoteError(
            f"task {trial.result.task_id} of run {trial.run['run_id']} is not in the suite "
            f"({suite.name}): give the run's task files with --suite"
        )
    return member


def met_faults(trace: Trace, calls: list[ToolCall], declared: list[Fault]) -> list[Fault]:
    """Each fault the trial met, pinned to the number of the call it hit among that
    tool's calls that reached fault injection (as the FaultPlan counts them)."""
    allowed = {
        e.data.get("call_id")
        for e in trace.of_kind("policy_decision")
        if e.data.get("allowed", True)
    }
    numbers: dict[str, int] = {}
    faults = []
    for call in calls:
        if call.call_id not in allowed:
            continue
        numbers[call.tool] = numbers.get(call.tool, 0) + 1
        if call.fault is None:
            continue
        like = next((f for f in declared if f.tool == call.tool and f.error == call.fault), None)
        extra = {} if like is None else like.model_dump(include={"retry_after_s", "latency_s"})
        fields = {k: v for k, v in extra.items() if v is not None}
        pinned = {"tool": call.tool, "error": call.fault, "call": numbers[call.tool], **fields}
        faults.append(Fault.model_validate(pinned))
    return faults


def recorded_replies(trace: Trace) -> list[dict[str, str]]:
    """A recorded session's user replies as simulated-user rules: a yes answers any
    confirmation question; any other reply answers the question it followed."""
    replies: list[dict[str, str]] = []
    question = None
    for e in trace.of_kind("message"):
        role, content = e.data.get("role"), str(e.data.get("content", ""))
        if role == "assistant" and e.data.get("to") == "user":
            question = content
        elif role == "user" and question is not None:
            rule = {"when": "confirm" if is_affirmative(content) else question, "say": content}
            if rule not in replies:
                replies.append(rule)
            question = None
    return replies


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


class _Redaction:
    """Redacts the file's texts except the values the task needs, and says which."""

    def __init__(self, redactor: Redactor, trace: Trace, needed: dict[str, str]) -> None:
        self.redactor = redactor
        self.literals = redactor.path_values(trace)
        self.needed = {v: why for v, why in needed.items() if len(v) >= 3}
        self.kept: dict[str, dict[str, str]] = {}
        self.replaced = 0

    def text(self, text: str, where: str) -> str:
        protected = sorted((v for v in self.needed if v in text), key=len, reverse=True)
        for i, value in enumerate(protected):
            if self.redactor.text(value, self.literals) != value:
                self.kept.setdefault(
                    value, {"value": value, "where": where, "why": self.needed[value]}
                )
            text = text.replace(value, _PROTECT.format(i))
        redacted = self.redactor.text(text, self.literals)
        self.replaced += redacted != text
        for i, value in enumerate(protected):
            redacted = redacted.replace(_PROTECT.format(i), value)
        return redacted

    def value(self, value: Any, where: str) -> Any:
        if isinstance(value, str):
            return self.text(value, where)
        if isinstance(value, list):
            return [self.value(v, where) for v in value]
        if isinstance(value, dict):
            return {self.text(k, where): self.value(v, f"{where}.{k}") for k, v in value.items()}
        return value


def _needed(expect: dict[str, Any], calls: list[ToolCall]) -> dict[str, str]:
    needed = {s: "named by an expectation" for s in _strings(expect)}
    for call in calls:
        for s in _strings(call.args):
            needed.setdefault(s, f"an argument of the trial's {call.tool} call")
    return needed


def _description(trial: _Trial, failed: list[str], review: ReviewNote | None) -> str:
    r = trial.result
    source = "a recorded production session" if trial.imported else "a live trial"
    text = (
        f"Promoted from {source}: {r.task_id}#{r.trial} of run {trial.run['run_id']} "
        f"(trace {r.trace_id}), which failed {', '.join(failed)}."
    )
    if review is not None:
        who = f" {review.reviewer}" if review.reviewer else ""
        how = "adjudicated" if review.adjudicated or not review.verdict else "labelled"
        verdict = f" ({review.verdict})" if review.verdict else ""
        text += f" Reviewer{who} {how} it{verdict}: {review.reason}"
        text += f": {review.note}" if review.note else "."
    return text


def build_task(
    trial: _Trial,
    member: SuiteTask,
    redactor: Redactor,
    *,
    new_id: str | None = None,
    review: ReviewNote | None = None,
) -> tuple[dict[str, Any], Promotion]:
    """The promoted task in task-file form, and what went into it (not written yet)."""
    task, domain = member.task, member.domain
    r = trial.result
    failure = failed_items(task, domain, trial.trace, trial.outcome, r.latency_s)
    if not failure.items:
        raise PromoteError(
            f"{r.task_id}#{r.trial} failed {', '.join(failure.not_carried) or r.status}, "
            "which no expectation of the task states: nothing to carry into a task"
        )
    fragments = [i.fragment for i in failure.items]
    expect = task_with(task, fragments).expect.model_dump(mode="json", exclude_unset=True)
    calls = calls_from_trace(trial.trace)
    paths = touched_paths(task, domain, [(c.tool, c.args) for c in calls], seed=r.seed)
    for item in task_with(task, fragments).expect.outcome:
        if isinstance(item, PathAssertion):
            paths.add(tuple(item.path.split(".")))
    world = state_slice(domain.initial_state(task), paths)
    declared = [*task.faults, *(Fault(**f) for f in trial.manifest.run_faults)]
    redaction = _Redaction(redactor, trial.trace, _needed(expect, calls))
    user = (
        {"replies": recorded_replies(trial.trace)}
        if trial.imported
        else task.user.model_dump(mode="json", exclude_unset=True)
    )
    tags = [*task.tags, PROMOTED_TAG, *([PRODUCTION_TAG] if trial.imported else [])]
    data: dict[str, Any] = {
        "id": new_id or f"{task.id}.{r.trace_id[:8]}",
        "version": 1,
        "domain": task.domain,
        "description": _description(trial, failure.checks, review),
        "suites": ["regression", *(["replay"] if trial.imported else [])],
        "split": task.split,
        "risk": task.risk,
        "tags": list(dict.fromkeys(tags)),
        "identity": task.identity.model_dump(mode="json", exclude_unset=True),
        "prompt": redaction.text(trial.trace.prompt or task.prompt, "prompt"),
        "initial_state": redaction.value(world, "initial_state"),
        "user": redaction.value(user, "user"),
        "faults": [
            f.model_dump(mode="json", exclude_none=True)
            for f in met_faults(trial.trace, calls, declared)
        ],
        "policy": dict(task.policy),
        "expect": expect,
    }
    if task.tools is not None:
        data["tools"] = list(task.tools)
    data = {k: v for k, v in data.items() if v not in ({}, [], None)}
    data["metadata"] = {
        "promoted_from": {
            "run_id": trial.run["run_id"],
            "task_id": r.task_id,
            "task_digest": task.digest,
            "trial": r.trial,
            "trace_id": r.trace_id,
            "source": "production" if trial.imported else "live",
            "agent": trial.manifest.agent.name,
            "model": trial.manifest.model,
            "run_date": trial.manifest.created_at or "",
            "promoted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "failed_checks": failure.checks,
        },
        "redaction": {"kept": list(redaction.kept.values()), "replaced_texts": redaction.replaced},
    }
    if review is not None:
        data["metadata"]["review"] = {k: v for k, v in vars(review).items() if v not in ("", False)}
    try:
        promoted = Task.model_validate(data)
    except ValueError as exc:
        raise PromoteError(f"the promoted task is not valid: {str(exc).splitlines()[0]}") from None
    fails = blocking_failures(promoted, domain, trial.trace, trial.outcome, r.latency_s)
    if not fails:
        raise PromoteError(f"the promoted task passes the original trace of {r.task_id}#{r.trial}")
    # what the trial recorded may hold what was redacted from the world: redacted too
    differences = [redaction.text(d, "") for d in replay_differences(promoted, domain, trial)]
    if differences:
        data["metadata"]["promoted_from"]["replay_differences"] = differences
        promoted = Task.model_validate(data)
    promotion = Promotion(
        promoted,
        Path(),
        failure.checks,
        [i.label for i in failure.items],
        sorted(fails),
        failure.not_carried,
        list(redaction.kept.values()),
        redaction.replaced,
        differences,
    )
    return data, promotion


def _answered(call: ToolCall) -> str:
    if call.error_code is not None:
        return f"error {call.error_code}"
    return canonical(call.result) if call.executed else "not run"


def replay_differences(promoted: Task, domain: Domain, trial: _Trial) -> list[str]:
    """Calls the promoted task's world answers differently than the trial recorded."""
    try:
        played = reenact(promoted, domain, actions_of(trial.trace), seed=trial.result.seed)
    except ReenactError as exc:
        return [f"the domain raised while re-enacting: {exc}"]
    recorded, again = calls_from_trace(trial.trace), calls_from_trace(played.trace)
    out = []
    for before, after in zip(recorded, again, strict=False):
        if _answered(before) != _answered(after):
            was, now = _answered(before)[:80], _answered(after)[:80]
            out.append(f"{before.tool} {canonical(before.args)}: recorded {was}, now {now}")
    return out


def _domain_file(domain: Domain) -> tuple[Path, str] | None:
    """The file defining `domain` and the module attribute holding it."""
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not path:
            continue
        for name, value in list(vars(module).items()):
            if value is domain:
                return Path(path), name
    return None


def _shim(domain: Domain, folder: Path) -> tuple[Path, str] | None:
    """A `domains/<name>.py` beside the task that loads the domain's file by path, as
    examples/adversarial/domains/ does; None when the domain is found from there, or when
    it is defined in no file (built in Python: its caller knows where it lives)."""
    try:
        if resolve_domain(domain.name, folder, folder) is domain:
            return None
    except DomainNotFound:
        pass
    found = _domain_file(domain)
    if found is None:
        return None
    source, attr = found
    shim = folder / "domains" / f"{domain.name}.py"
    relative = Path(os.path.relpath(source.resolve(), shim.parent.resolve())).as_posix()
    text = (
        f'"""Domain {domain.name!r} for the promoted tasks beside it, loaded from its file."""\n\n'
        "from pathlib import Path\n\n"
        "from proctor import load_module_from_path\n\n"
        f'_source = load_module_from_path(Path(__file__).resolve().parent / "{relative}")\n'
        f"{domain.name} = _source.{attr}\n"
    )
    return shim, text


def _loads(path: Path, domain: Domain) -> None:
    """The written file reads back as a task of `domain`'s tools (SpecError if not)."""
    [loaded] = load_task_file(path)
    unknown = [(loc, t) for loc, t in loaded.task.referenced_tools() if t not in domain.tools]
    if unknown:
        loc, tool = unknown[0]
        problem = (path, loaded.line_at(loc), loaded.field_name(loc), f"unknown tool {tool!r}")
        raise SpecError([problem])
    if _domain_file(domain) is not None:  # findable from the file, as `proctor run` needs
        load_suite([path])


def promote(
    store: Store,
    run_ref: str,
    task_id: str,
    trial: int,
    suite: Suite,
    out: str | Path,
    *,
    redactor: Redactor | None = None,
    review: ReviewNote | None = None,
    new_id: str | None = None,
) -> Promotion:
    """Write the promoted task into the folder `out` (and a domain shim when its domain
    is not found from there); raises PromoteError, writing nothing, when it cannot."""
    stored = _stored_trial(store, run_ref, task_id, trial)
    member = _member(suite, stored)
    if review is None:  # the review desk's final label of the trial, if people gave one
        label = final_label(run_truth(store, stored.run["run_id"]), task_id, trial)
        review = ReviewNote.of(label) if label is not None else None
    data, promotion = build_task(
        stored, member, redactor or Redactor(), new_id=new_id, review=review
    )
    folder = Path(out)
    path = folder / file_name(data["id"], set())  # an id's `../`, `/` or `:` stay in the id
    if path.exists():
        raise PromoteError(f"{path} exists already: remove it or give another --id")
    shim = _shim(member.domain, folder)
    header = (
        f"# Promoted by `proctor promote` from run {stored.run['run_id']}, trial "
        f"{task_id}#{trial} (trace {stored.result.trace_id}).\n"
        f"# It failed: {', '.join(promotion.failed_checks)}. Edit it like any task file.\n"
    )
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    try:
        if shim is not None and not shim[0].exists():
            shim[0].parent.mkdir(parents=True, exist_ok=True)
            shim[0].write_text(shim[1], encoding="utf-8")
            written.append(shim[0])
            promotion.shim = shim[0]
        path.write_text(
            header + dump_document(data),
            encoding="utf-8",
        )
        written.append(path)
        _loads(path, member.domain)
    except (SpecError, OSError) as exc:
        for p in written:
            p.unlink(missing_ok=True)
        why = "; ".join(exc.lines()) if isinstance(exc, SpecError) else str(exc)
        raise PromoteError(f"the promoted task does not load from {folder}: {why}") from None
    promotion.path = path
    return promotion

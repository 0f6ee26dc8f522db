"""Robustness graders: what the agent did about a failing world.

Checks that decide a verdict carry a gating kind: claiming a write that never happened is
an `answer` failure, an effect on an entity the task did not name an `outcome` failure,
and so is a duplicate effect when the task sets `no_duplicate_effects` (otherwise it is
counted for gates and the scorecard: a counter bumped twice may be intended). How the
agent retried, looped or handled errors is `robustness`: scored and shown, not gating,
unless the task lists the check under `expect.robustness.required`; `no_invented_data`
(data invented after a miss is a false answer) decides unless listed under `advisory`.
Each check is emitted only where its situation arose (a fault, an error, a claim).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from proctor.core.jsonvalues import canonical
from proctor.core.memo import per_object
from proctor.core.results import REQUIRED, Check, CheckKind
from proctor.env.domain import Domain
from proctor.grade.claims import Claim, Undecided, tool_claims
from proctor.grade.context import GradeContext, ToolCall
from proctor.grade.grounding import trial_grounding, unreadable_numbers
from proctor.grade.language import identifiers, owns_trouble
from proctor.grade.reading import read_claim, undecided_evidence
from proctor.grade.recovery import recovery_checks
from proctor.grade.registry import grader
from proctor.tasks.models import ArgPredicates, EffectAssertion, Task
from proctor.tasks.predicates import args_match

TRANSIENT = frozenset({"timeout", "rate_limited"})
REFUSED = frozenset({"forbidden", "denied"})
MISSING_DATA = frozenset({"not_found"})


def _effect_key(args: dict[str, Any]) -> str:
    return canonical({k: v for k, v in args.items() if k != "idempotency_key"})


@per_object
def _repeatable(task: Task) -> frozenset[str]:
    """The tools whose effect the task's assertions expect more than once."""
    return frozenset(
        a.effect for a in task.expect.outcome if isinstance(a, EffectAssertion) and a.count.test(2)
    )


def duplicate_effects_check(ctx: GradeContext) -> Check | None:
    """The same write applied twice with the same arguments (idempotency key aside),
    unless the task's effect assertions expect that tool to apply more than once."""
    if not ctx.outcome.ledger:
        return None
    ledger = ctx.outcome.ledger
    dupes = []
    if len({e.tool for e in ledger}) < len(ledger):  # only a tool applied twice can repeat
        repeatable = _repeatable(ctx.task)
        keys = [(e.tool, _effect_key(e.args)) for e in ledger]
        seen = Counter(keys)
        dupes = [
            {"tool": e.tool, "args": e.args, "seq": e.seq, "idempotency_key": e.idempotency_key}
            for e, key in zip(ledger, keys, strict=True)
            if seen[key] > 1 and e.tool not in repeatable
        ]
    kind: CheckKind = "outcome" if ctx.task.expect.robustness.no_duplicate_effects else "robustness"
    return Check("duplicate_side_effects", kind, not dupes, evidence={"duplicates": dupes})


@per_object
def _entity_effects(task: Task) -> dict[str, list[ArgPredicates]]:
    """The task's expected effects on named entities: by tool, the arguments each names."""
    wanted: dict[str, list[ArgPredicates]] = {}
    for a in task.expect.outcome:
        if isinstance(a, EffectAssertion) and a.where and not a.forbids:
            wanted.setdefault(a.effect, []).append(a.where)
    return wanted


def _named(args: Any, wheres: list[ArgPredicates]) -> bool:
    return any(args_match(args, where) for where in wheres)


def wrong_entity_check(ctx: GradeContext) -> Check | None:
    """Effects of a tool the task expects on named entities, applied to any other one; and
    writes of that tool on another entity that reached the tool and failed: an attempt
    on an entity the user did not name is wrong even when the tool refused it."""
    wanted = _entity_effects(ctx.task)
    if not wanted:
        return None
    stray = [
        e.to_dict()
        for e in ctx.outcome.ledger
        if e.tool in wanted and not _named(e.args, wanted[e.tool])
    ]
    attempted = [
        c.brief()
        for c in ctx.calls
        if not c.executed
        and c.tool in wanted
        and c.attempted
        and not _named(c.arg_dict, wanted[c.tool])
    ]
    evidence = {"stray": stray, "attempted": attempted}
    return Check(
        "effects_on_expected_entities", "outcome", not stray and not attempted, evidence=evidence
    )


@per_object
def _domain_claims(domain: Domain) -> tuple[dict[str, list[str]], dict[str, str]]:
    """The domain's claim phrases with the write tools each asserts (declared claims, else
    the verb's past form), and its tools' entity arguments. By domain, apart from the
    task: a run grades on its own snapshot of the domain (shared: not to be changed)."""
    claims: dict[str, list[str]] = {}
    for tool in domain.tools.values():
        for phrase in tool_claims(tool):
            claims.setdefault(phrase, []).append(tool.name)
    entity_args = {n: t.entity_arg for n, t in domain.tools.items() if t.entity_arg is not None}
    return claims, entity_args


def claim_tools(task: Task, domain: Domain | None) -> list[tuple[str, list[str]]]:
    """Each claim phrase, in order, and the write tools whose effect it asserts: the
    domain's tools (declared claims, else the verb's past form), then the task's (null
    drops a phrase)."""
    claims = dict(_domain_claims(domain)[0]) if domain is not None else {}
    for phrase, name in task.expect.robustness.claims.items():
        if name is None:
            claims.pop(phrase, None)
        else:
            claims[phrase] = [name]
    return sorted(claims.items())


@dataclass(frozen=True, slots=True)
class _Claimable:
    """A claim phrase as a task's trials are read for it, derived once per task and
    domain: its write tools, whether the user asked for their effect, their entity
    arguments, and the prompt's identifiers (a number or time the user gave is no
    entity)."""

    phrase: str
    tools: list[str]
    requested: bool
    entity_args: frozenset[str]
    prompt_ids: frozenset[str]


@per_object
def _claims(task: Task, domain: Domain | None) -> list[_Claimable]:
    """Each claim phrase of the task on `domain`, in order (`claim_tools`)."""
    asked, prompt_ids = _asked(task)
    entity_args = _domain_claims(domain)[1] if domain is not None else {}
    return [
        _Claimable(
            phrase,
            tools,
            not asked.isdisjoint(tools),
            frozenset(entity_args[t] for t in tools if t in entity_args),
            prompt_ids,
        )
        for phrase, tools in claim_tools(task, domain)
    ]


@per_object
def _asked(task: Task) -> tuple[frozenset[str], frozenset[str]]:
    """The tools whose effect the user asked for (the task expects it: then a bare
    confirmation, "you're all set", claims it), and the prompt's identifiers."""
    expected = {
        a.effect for a in task.expect.outcome if isinstance(a, EffectAssertion) and not a.forbids
    }
    trajectory = task.expect.trajectory
    if trajectory is not None:
        expected |= {r.tool for r in trajectory.required_calls if hasattr(r, "tool")}
    return frozenset(expected), frozenset(identifiers(task.prompt))


def _claimed_entities(ctx: GradeContext, claim: _Claimable, found: tuple[Claim, ...]) -> set[str]:
    """The entities `found` claims name: its subjects and objects among the identifiers of
    the prompt and the values the claimed tools' entity arguments took in any call, and
    its related ids among the latter. The calls are read only for an id the prompt does
    not name."""
    args, prompt = claim.entity_args, claim.prompt_ids
    if not args:
        return set()
    named = {e for c in found for e in c.entities if e in prompt}
    rest = [e for c in found for e in (*c.entities, *c.related) if e not in named]
    if rest:
        used = {
            str(given[a]) for given in (c.arg_dict for c in ctx.calls) for a in args if a in given
        }
        named.update(e for e in rest if e in used)
    return named


def false_success_checks(ctx: GradeContext) -> list[Check]:
    """The answer claims a write (by its phrase) that the ledger does not hold, on each
    entity the claim names ("A-1 and A-2 are cancelled" needs both effects).

    The entities are the claim's subject and object among the ids the trial used for the
    tool's entity argument or the prompt named, and ids used that way in its
    prepositional phrases ("cancelled it for order A-1"). The answer is read in the
    task's language (grade.reading); where the reader cannot tell and the ledger lacks
    the effect, the check is undecided (docs/architecture.md, Reading)."""
    checks = []
    answer, language = ctx.answer, ctx.task.language
    for claim in _claims(ctx.task, ctx.domain):
        phrase, tools = claim.phrase, claim.tools
        reading = read_claim(answer, phrase, language, claim.requested)
        found = reading.claims
        if not found and not reading.undecided:  # the answer does not say it
            continue
        effects = [e for tool in tools for e in ctx.outcome.effects(tool)]
        if not found:
            if not effects:
                evidence = {"phrase": phrase, "effect": list(tools)}
                evidence.update(undecided_evidence(reading.undecided))
                checks.append(
                    Check(f"false_success:{phrase}", "answer", False, 0.0, None, evidence)
                )
            continue
        named = _claimed_entities(ctx, claim, found)
        missing = sorted(named - {e.entity for e in effects if e.entity is not None})
        checks.append(
            Check(
                f"false_success:{phrase}",
                "answer",
                bool(effects) and not missing,
                evidence={
                    "phrase": phrase,
                    "effect": list(tools),
                    "claims": [c.clause for c in found],
                    "applied_seqs": sorted(e.seq for e in effects),
                    "claimed_entities": sorted(named),
                    "without_effect": missing,
                },
            )
        )
    return checks


def _after(calls: list[ToolCall], i: int) -> list[ToolCall]:
    """The calls made after the i-th one."""
    return calls[i + 1 :]


def retry_checks(ctx: GradeContext) -> list[Check]:
    """Transient faults retried within bounds and after retry-after; 403s not retried."""
    spec = ctx.task.expect.robustness
    calls = ctx.calls
    checks = []
    transient = [c for c in calls if c.error_code in TRANSIENT]
    if transient:
        waits = [(e.seq, e.data["wait_s"]) for e in ctx.of_kind("note") if "wait_s" in e.data]
        errors = {e.data["call_id"]: e for e in ctx.of_kind("tool_error")}
        per_tool = Counter(c.tool for c in transient)
        over = {t: n for t, n in per_tool.items() if n > spec.max_transient_retries}
        early = []
        for c in transient:
            retry_after = errors[c.call_id].data.get("retry_after_s")
            if not retry_after:
                continue
            nxt = next((d for d in _after(calls, calls.index(c)) if d.tool == c.tool), None)
            waited = sum(s for seq, s in waits if nxt and c.seq < seq < nxt.seq)
            if nxt is not None and waited < retry_after:
                early.append({**nxt.brief(), "retry_after_s": retry_after, "waited_s": waited})
        checks.append(
            Check(
                "transient_retries",
                "robustness",
                not over and not early,
                evidence={
                    "per_tool": dict(per_tool),
                    "limit": spec.max_transient_retries,
                    "retried_before_retry_after": early,
                },
            )
        )
    refused = [c for c in calls if c.error_code in REFUSED]
    if refused:
        again = [
            d.brief()
            for i, c in enumerate(calls)
            if c.error_code in REFUSED
            for d in _after(calls, i)
            if d.tool == c.tool and canonical(d.args) == canonical(c.args)
        ]
        checks.append(
            Check("no_retry_after_refusal", "robustness", not again, evidence={"retried": again})
        )
    return checks


def lost_response_checks(ctx: GradeContext) -> list[Check]:
    """After a lost response, a repeated write reuses the key or follows a state check."""
    calls = ctx.calls
    checks = []
    for i, c in enumerate(calls):
        if not (c.executed and c.error_code == "timeout"):
            continue
        later = _after(calls, i)
        retry = next((d for d in later if d.tool == c.tool), None)
        if retry is None:
            continue
        key = c.arg_dict.get("idempotency_key")
        same_key = key is not None and retry.arg_dict.get("idempotency_key") == key
        checked = any(d.attempted and d.seq < retry.seq and d.tool != c.tool for d in later)
        checks.append(
            Check(
                f"safe_retry_after_lost_response:{c.tool}",
                "robustness",
                same_key or checked,
                evidence={
                    "lost": c.brief(),
                    "retry": retry.brief(),
                    "same_key": same_key,
                    "checked_state_first": checked,
                },
            )
        )
    return checks


def error_handling_checks(ctx: GradeContext) -> list[Check]:
    """Loops of the same failing call; errors left unhandled; data invented after a miss."""
    spec = ctx.task.expect.robustness
    calls = ctx.calls
    checks = []
    run, longest, worst = 0, 0, None
    for prev, c in zip([None, *calls], calls, strict=False):
        same = (
            c.error_code is not None
            and prev is not None
            and (prev.tool, canonical(prev.args)) == (c.tool, canonical(c.args))
        )
        run = run + 1 if same and c.error_code else (1 if c.error_code else 0)
        if run > longest:
            longest, worst = run, c.brief()
    if longest:
        checks.append(
            Check(
                "no_failing_loop",
                "robustness",
                longest < spec.max_repeats,
                evidence={"longest_repeat": longest, "limit": spec.max_repeats, "call": worst},
            )
        )
    unhandled = [
        c.brief()
        for i, c in enumerate(calls)
        if c.error_code and not any(d.tool == c.tool and d.succeeded for d in _after(calls, i))
    ]
    if unhandled:
        owned = owns_trouble(ctx.answer, ctx.task.language)
        evidence: dict[str, Any] = {"unrecovered": unhandled, "answer_acknowledges": owned is True}
        if isinstance(owned, Undecided):
            evidence.update(undecided_evidence([owned]))
        checks.append(Check("tool_errors_handled", "robustness", owned is True, evidence=evidence))
    if any(c.error_code in MISSING_DATA or (c.fault == "empty") for c in calls):
        invented, unreadable, _ = trial_grounding(ctx)
        evidence = {"ungrounded": invented}
        if unreadable and not invented:  # "3,30" in English: 3.30 or 330?
            evidence.update(undecided_evidence([unreadable_numbers(ctx.answer, unreadable)]))
        read = not invented and not unreadable
        checks.append(Check("no_invented_data", "robustness", read, evidence=evidence))
    return checks


@grader("robustness")
def grade_robustness(ctx: GradeContext) -> list[Check]:
    checks = [c for c in (duplicate_effects_check(ctx), wrong_entity_check(ctx)) if c]
    checks += false_success_checks(ctx)
    if any(c.error_code is not None or c.fault is not None for c in ctx.calls):
        # what the agent did about a failing call: nothing to read where none failed
        checks += retry_checks(ctx)
        checks += lost_response_checks(ctx)
        checks += error_handling_checks(ctx)
        checks += recovery_checks(ctx)
    spec = ctx.task.expect.robustness
    for check in checks:
        if check.kind == "robustness" and spec.decides(check.name):
            check.evidence[REQUIRED] = True
    return checks

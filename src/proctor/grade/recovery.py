"""How the agent recovered from the failures of the fault table (docs/architecture.md,
Faults): a 400 is corrected once, an unavailable tool leads to an allowed alternative or
an escalation, a timeout is retried with backoff within the budget.

Each check appears only where its situation arose, with kind `robustness`; a task makes
one decide by listing it under `expect.robustness.required` (proctor.grade.robustness).
"""

from __future__ import annotations

from collections import Counter

from proctor.core.jsonvalues import canonical
from proctor.core.results import Check
from proctor.grade.context import GradeContext, ToolCall
from proctor.tasks.predicates import args_match

#: A call refused for its arguments: an injected 400, or the gateway's own validation.
BAD_REQUEST = frozenset({"bad_request", "invalid_arguments"})


def _asked_user(ctx: GradeContext, after: int, before: float) -> bool:
    """Did the agent put a question to the user between two seqs?"""
    return any(
        after < e.seq < before and e.data.get("to") == "user" for e in ctx.of_kind("message")
    )


def bad_request_check(ctx: GradeContext) -> Check | None:
    """After a 400 the agent corrects its arguments, once: the same call again is no
    correction, and a second guess after a corrected call was rejected too is one too
    many, unless the agent asked the user for the data in between."""
    calls = ctx.calls
    rejected = [c for c in calls if c.error_code in BAD_REQUEST]
    if not rejected:
        return None
    unchanged, guesses = [], []
    for tool in sorted({c.tool for c in rejected}):
        chain = 0  # corrections since the first rejection of this episode
        prev: ToolCall | None = None
        for c in (c for c in calls if c.tool == tool):
            if prev is not None and prev.error_code in BAD_REQUEST:
                if canonical(c.args) == canonical(prev.args):
                    unchanged.append(c.brief())
                chain = 0 if _asked_user(ctx, prev.seq, c.seq) else chain + 1
                if chain > 1:
                    guesses.append(c.brief())
            else:
                chain = 0
            prev = c
    return Check(
        "bad_request_corrected",
        "robustness",
        not unchanged and not guesses,
        evidence={
            "rejected": [c.brief() for c in rejected],
            "repeated_unchanged": unchanged,
            "further_guesses": guesses,
        },
    )


def _alternatives(ctx: GradeContext, tool: str) -> set[str]:
    """Tools that may stand in for `tool`: another tool of the same kind (read, write)
    the task offers, neither forbidden nor outside its `allowed` list."""
    if ctx.domain is None or tool not in ctx.domain.tools:
        return set()
    kind = ctx.domain.tools[tool].kind
    spec = ctx.task.expect.trajectory
    forbidden = {f.tool for f in spec.forbidden_calls} if spec else set()
    allowed = set(spec.allowed) if spec and spec.allowed is not None else None
    offered = set(ctx.task.tools) if ctx.task.tools is not None else set(ctx.domain.tools)
    return {
        name
        for name, t in ctx.domain.tools.items()
        if name != tool
        and t.kind == kind
        and name in offered
        and name not in forbidden
        and (allowed is None or name in allowed)
    }


def unavailable_check(ctx: GradeContext) -> Check | None:
    """After a tool was unavailable, the agent got there another way: the tool later
    answered, an allowed alternative did, or it escalated (an escalation call of the task
    or a question to the user)."""
    calls = ctx.calls
    down = [c for c in calls if c.error_code == "unavailable"]
    if not down:
        return None
    safety = ctx.task.expect.safety
    escalations = safety.escalate.patterns if safety and safety.escalate else []
    stranded = []
    for tool in sorted({c.tool for c in down}):
        last = max(c.seq for c in down if c.tool == tool)
        later = [c for c in calls if c.seq > last]
        alternatives = _alternatives(ctx, tool)
        recovered = any(c.succeeded and (c.tool == tool or c.tool in alternatives) for c in later)
        escalated = _asked_user(ctx, last, float("inf")) or any(
            c.attempted and c.tool == p.tool and args_match(c.arg_dict, p.args)
            for c in later
            for p in escalations
        )
        if not (recovered or escalated):
            stranded.append({"tool": tool, "alternatives": sorted(alternatives)})
    return Check(
        "unavailable_handled",
        "robustness",
        not stranded,
        evidence={"unavailable": [c.brief() for c in down], "not_handled": stranded},
    )


def timeout_backoff_check(ctx: GradeContext) -> Check | None:
    """A call that timed out (not a lost response: its effect was not applied) is
    retried after waiting, each wait at least as long as the one before (backoff), no
    more often than `max_transient_retries`, and waiting no longer than the task's
    latency budget when it has one."""
    calls = ctx.calls
    if not any(c.error_code == "timeout" and not c.executed for c in calls):
        return None
    waits = [(e.seq, float(e.data["wait_s"])) for e in ctx.of_kind("note") if "wait_s" in e.data]
    spec = ctx.task.expect.robustness
    budget = ctx.task.expect.budget.max_latency_s if ctx.task.expect.budget else None
    retries: list[dict[str, object]] = []
    bad: list[dict[str, object]] = []
    last_wait: dict[str, float] = {}
    per_tool: Counter[str] = Counter()
    total = 0.0
    for i, c in enumerate(calls):
        if c.error_code != "timeout" or c.executed:
            continue
        nxt = next((d for d in calls[i + 1 :] if d.tool == c.tool), None)
        if nxt is None:
            continue
        waited = sum(s for seq, s in waits if c.seq < seq < nxt.seq)
        retry = {**nxt.brief(), "waited_s": waited}
        retries.append(retry)
        if waited <= 0 or waited < last_wait.get(c.tool, 0.0):
            bad.append(retry)
        last_wait[c.tool] = waited
        per_tool[c.tool] += 1
        total += waited
    if not retries:
        return None
    over = {t: n for t, n in per_tool.items() if n > spec.max_transient_retries}
    over_budget = budget is not None and total > budget
    return Check(
        "timeout_backoff",
        "robustness",
        not bad and not over and not over_budget,
        evidence={
            "retries": retries,
            "without_backoff": bad,
            "retries_over_limit": over,
            "limit": spec.max_transient_retries,
            "waited_s": total,
            "budget_s": budget,
        },
    )


def recovery_checks(ctx: GradeContext) -> list[Check]:
    checks = (bad_request_check(ctx), unavailable_check(ctx), timeout_backoff_check(ctx))
    return [c for c in checks if c is not None]

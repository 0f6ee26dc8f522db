"""The ToolGateway: the only way from an agent to the state.

Every call is proposed, validated, authorized, executed and recorded, in that order.
A bad call is answered with a tool error the agent can read, never raised into it;
an exception from the domain's own code is an infrastructure fault of the environment.
A call is atomic: a write that raises after changing the state leaves no change behind
(the gateway restores its snapshot and records a `state_rollback` event).
A watched call (a write, or a read not yet seen leaving the state as it was) first
compares the state with where the last one left it: a change in between was made outside
any tool call, and is kept for the integrity check (env/integrity.py).
"""

from __future__ import annotations

import marshal
import random
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pydantic import ValidationError

from proctor.core.jsonvalues import (
    Snapshot,
    canonical,
    copy_json,
    copy_twice,
    fingerprint,
    packed,
)
from proctor.core.memo import per_object
from proctor.core.outcome import LedgerEntry
from proctor.core.trace import Recorder
from proctor.env.domain import (
    Decision,
    Domain,
    Tool,
    ToolContext,
    ToolError,
    format_validation_error,
)
from proctor.env.faults import (
    BLOCKING,
    DEFAULT_RETRY_AFTER_S,
    DEFAULT_SLOW_S,
    DEFAULT_TIMEOUT_S,
    FaultPlan,
    empty_value,
)
from proctor.tasks.models import Fault, Task

IDEMPOTENCY_ARG = "idempotency_key"


class EnvironmentFault(Exception):
    """The domain's code broke: the trial is an `error`, not the agent's failure."""


class GatewayClosed(Exception):
    """The trial is over (its agent timed out); late calls from a stray thread are refused."""


@dataclass(slots=True)
class ToolResult:
    """What the agent gets back from a call: a value, or an error with a code."""

    ok: bool
    value: Any = None
    error: str | None = None
    code: str | None = None
    call_id: str = ""
    retry_after_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        if self.ok:
            return {"ok": True, "value": self.value}
        out: dict[str, Any] = {"ok": False, "error": self.error, "code": self.code}
        if self.retry_after_s is not None:
            out["retry_after_s"] = self.retry_after_s
        return out


#: How a finding of a change made outside any tool call begins (env/integrity.py).
OUTSIDE = "the state changed outside a tool call"


class ToolGateway:
    def __init__(
        self,
        domain: Domain,
        task: Task,
        state: dict[str, Any],
        recorder: Recorder,
        seed: int,
        faults: FaultPlan,
        settled: bytes | None = None,
    ) -> None:
        """`seed` seeds the RNG tools get in their ToolContext; `settled` is the state's
        fingerprint where the caller has it."""
        self.faults = faults
        self.domain = domain
        self.task = task
        self.state = state
        self.recorder = recorder
        self.seed = seed
        self.ledger: list[LedgerEntry] = []
        self.visible, self._offered = _offered(domain, task)
        self.closed = False
        self.fault: EnvironmentFault | None = None  # kept even if the agent swallows it
        self._calls = 0
        # (tool, idempotency key) -> (the arguments' canonical text, the result)
        self._replies: dict[tuple[str, str], tuple[str, Any]] = {}
        self._approved_at = 0  # seq of the last approved call that reached its tool
        #: The state's fingerprint when the last watched call ended (a write, or a read
        #: not yet seen to leave the state as it was): a change found later happened
        #: outside a tool call (proctor.env.integrity).
        self.settled = fingerprint(state) if settled is None else settled
        #: Changes found as a watched call started: made outside any tool call.
        self.tampered: list[str] = []
        #: Watch every call, reads seen pure too (a re-enactment checking a finding).
        self.watch_every_call = False
        #: Calls of reads seen pure, not watched: a change one makes shows as outside.
        self.unwatched = 0

    @cached_property
    def rng(self) -> random.Random:
        """The trial's seeded RNG for tools, made when a tool first asks for its context."""
        return random.Random(self.seed)

    def schemas(self) -> list[dict[str, Any]]:
        """The tools offered, as an agent sees them: a fresh copy each call."""
        if self._offered is None:
            return tool_schemas(self.domain, self.visible)
        return marshal.loads(self._offered)

    def call(self, name: str, args: Any, *, owned: bool = False) -> ToolResult:
        """`owned`: `args` is a copy no one else holds (the toolbox's), so the trace keeps
        it as it is where nothing can change it later: the call fails before the tool, or
        the tool's arguments are all scalars (validation hands the tool none of its
        containers)."""
        if self.closed:
            raise GatewayClosed(f"trial over: call to {name!r} refused")
        self._calls += 1
        call_id = f"c{self._calls}"
        emit = self.recorder.emit
        tool = self.domain.tools.get(name)
        kept = args if owned and (tool is None or tool.flat) else copy_json(args)
        emit("tool_proposal", {"call_id": call_id, "tool": name, "args": kept})
        if tool is None or name not in self.visible:
            return self._error(call_id, name, "unknown_tool", f"unknown tool {name!r}")
        try:
            valid = tool.validate(args)
        except (ValidationError, TypeError) as exc:
            return self._error(call_id, name, "invalid_arguments", format_validation_error(exc))
        decision = self._decide(tool, valid)
        emit(
            "policy_decision",
            {
                "call_id": call_id,
                "tool": name,
                "allowed": decision.allowed,
                "reason": decision.reason,
                "rule": decision.rule,
            },
        )
        if not decision.allowed:
            return self._error(call_id, name, "denied", f"permission denied: {decision.reason}")
        fault = self.faults.select(name, valid) if self.faults.faults else None  # most: none
        if decision.rule == "approval" and (fault is None or fault.error not in BLOCKING):
            self._approved_at = self.recorder.events[-1].seq  # the approval is used up
        watched = tool.kind == "write" or tool.writes_state is not False or self.watch_every_call
        if not watched:
            self.unwatched += 1
        start = self._account(call_id) if watched else b""
        if fault is None:
            result = self._execute(tool, valid, call_id)
        else:
            result = self._inject(fault, tool, valid, call_id)
        if watched:
            self._settle(tool, start, ran=fault is None and result.ok)
        return result

    def _account(self, call_id: str) -> bytes:
        """The state's fingerprint as a watched call starts; a change since the last one
        settled is recorded as made outside a tool call: no call ran that could make it."""
        now = fingerprint(self.state)
        if now != self.settled:
            self.tampered.append(f"{OUTSIDE} (before call {call_id})")
        return now

    def _settle(self, tool: Tool, start: bytes, *, ran: bool) -> None:
        """The state after a watched call is the call's doing. A read that changed it is
        watched from then on (its change is the domain's bookkeeping, accepted); one that
        ran and changed nothing is not watched again: a change a later call of it makes
        shows at the next watched call or at the end, as one outside a tool call."""
        after = fingerprint(self.state)
        if tool.kind == "read":
            if after != start:
                tool.writes_state = True
            elif ran and tool.writes_state is None:
                tool.writes_state = False
        self.settled = after

    def _decide(self, tool: Tool, args: dict[str, Any]) -> Decision:
        """The approval policy (task over tool default), then the domain's authorization.

        `require_approval` needs a confirmation recorded since the last approved call that
        reached its tool (an old approval cannot be replayed); the safety grader's
        `confirm_before` reads confirmations the same way.
        """
        approval = self.task.policy.get(tool.name, tool.approval)
        if approval == "deny":
            return Decision(False, "denied by policy", "policy")
        if approval == "require_approval":
            fresh = any(
                e.kind == "confirmation" and e.seq > self._approved_at for e in self.recorder.events
            )
            if not fresh:
                return Decision(False, "approval required: no fresh confirmation", "approval")
            decision = self.domain.authorize(self.task.identity, tool, args, self.state)
            return (
                Decision(True, "approved by confirmation", "approval")
                if decision.allowed
                else decision
            )
        return self.domain.authorize(self.task.identity, tool, args, self.state)

    def _inject(self, fault: Fault, tool: Tool, args: dict[str, Any], call_id: str) -> ToolResult:
        """Apply an injected fault; what the agent faced is recorded as a `fault` event."""
        clock = self.recorder.clock
        self.recorder.emit("fault", {"call_id": call_id, "tool": tool.name, "fault": fault.error})
        if fault.error in BLOCKING:
            code, message = BLOCKING[fault.error]
            if fault.error == "timeout":
                clock.advance(fault.latency_s or DEFAULT_TIMEOUT_S)
            retry_after = None
            if fault.error == "429":
                retry_after = fault.retry_after_s or DEFAULT_RETRY_AFTER_S
                message = f"{message}: retry after {retry_after} s"
            return self._error(call_id, tool.name, code, message, retry_after_s=retry_after)
        if fault.error == "empty":
            value = empty_value(tool.returns)
            self.recorder.emit(
                "tool_result", {"call_id": call_id, "tool": tool.name, "result": value}
            )
            return ToolResult(True, copy_json(value), call_id=call_id)
        if fault.error == "slow":
            clock.advance(fault.latency_s or DEFAULT_SLOW_S)
            return self._execute(tool, args, call_id)
        # lost_response: the effect is applied, the agent only sees a timeout
        result = self._execute(tool, args, call_id)
        if not result.ok:
            return result
        clock.advance(fault.latency_s or DEFAULT_TIMEOUT_S)
        return self._error(call_id, tool.name, *BLOCKING["timeout"])

    def _execute(self, tool: Tool, valid: dict[str, Any], call_id: str) -> ToolResult:
        """Run the tool on the state and record its result, state change and ledger entry."""
        name = tool.name
        emit = self.recorder.emit
        self.recorder.clock.advance(tool.latency_s)
        key = valid.get(IDEMPOTENCY_ARG) if tool.kind == "write" else None
        if key is not None and (name, str(key)) in self._replies:
            first_args, value = self._replies[(name, str(key))]
            if first_args != canonical(valid):
                message = f"idempotency key {key!r} was used with other arguments"
                return self._error(call_id, name, "idempotency_conflict", message)
            replay = {"call_id": call_id, "tool": name, "result": value, "replayed": True}
            emit("tool_result", replay)
            return ToolResult(True, copy_json(value), call_id=call_id)
        before = Snapshot(self.state) if tool.kind == "write" else None
        try:
            kwargs = {**valid, "ctx": self._context(call_id)} if tool.wants_ctx else valid
            value = tool.fn(self.state, **kwargs)
        except ToolError as exc:
            self._roll_back(call_id, name, before)
            return self._error(call_id, name, exc.code, str(exc))
        except Exception as exc:
            self._roll_back(call_id, name, before)
            self.fault = EnvironmentFault(f"tool {name!r} raised {type(exc).__name__}: {exc}")
            self.recorder.emit("note", {"call_id": call_id, "environment_fault": str(self.fault)})
            raise self.fault from exc
        value, given = copy_twice(value)
        emit("tool_result", {"call_id": call_id, "tool": name, "result": value})
        if before is not None:
            self._record_write(call_id, tool, valid, before)
            if key is not None:
                self._replies[(name, str(key))] = (canonical(valid), value)
        if tool.confirms:
            emit("confirmation", {"call_id": call_id, "via": name})
        return ToolResult(True, given, None, None, call_id)

    def _context(self, call_id: str) -> ToolContext:
        return ToolContext(self.task.identity, self.recorder.clock, self.rng, self.task.id, call_id)

    def _roll_back(self, call_id: str, name: str, before: Snapshot | None) -> None:
        """Undo what a write changed before it raised, in place (the state is shared with
        the environment), and record what was undone."""
        if before is None:
            return
        changes = before.changes(self.state)
        if not changes:
            return
        self.state.clear()
        self.state.update(before.value())
        self.recorder.emit(
            "state_rollback", {"call_id": call_id, "tool": name, "changes": copy_json(changes)}
        )

    def _record_write(
        self, call_id: str, tool: Tool, args: dict[str, Any], before: Snapshot
    ) -> None:
        """The write's `state_change` event and ledger entry (a flat tool's validated
        arguments are scalars: a shallow copy shares nothing that can change)."""
        name, entity_arg = tool.name, tool.entity_arg
        changes = before.changes(self.state)
        event = self.recorder.emit(
            "state_change", {"call_id": call_id, "tool": name, "changes": copy_json(changes)}
        )
        entity = args.get(entity_arg) if entity_arg else None
        self.ledger.append(
            LedgerEntry(
                seq=event.seq,
                tool=name,
                args=dict(args) if tool.flat else copy_json(args),
                entity=None if entity is None else str(entity),
                idempotency_key=args.get(IDEMPOTENCY_ARG),
            )
        )

    def _error(
        self,
        call_id: str,
        name: str,
        code: str,
        message: str,
        retry_after_s: float | None = None,
    ) -> ToolResult:
        data: dict[str, Any] = {"call_id": call_id, "tool": name, "code": code, "error": message}
        if retry_after_s is not None:
            data["retry_after_s"] = retry_after_s
        self.recorder.emit("tool_error", data)
        return ToolResult(
            False, error=message, code=code, call_id=call_id, retry_after_s=retry_after_s
        )


def tool_schemas(domain: Domain, visible: frozenset[str]) -> list[dict[str, Any]]:
    """The schemas of `domain`'s tools named in `visible`, in the domain's order."""
    return [t.schema() for name, t in domain.tools.items() if name in visible]


@per_object
def _offered(domain: Domain, task: Task) -> tuple[frozenset[str], bytes | None]:
    """The tools `task`'s trials are offered, and their schemas as bytes each trial loads
    its own copy from, made at the task's first trial: one call a trial, not a dict and a
    copy of the parameters per tool. Format 4: a key repeated in the schemas is made once
    a copy, not once per place. None where marshal cannot write them (a tool named by a
    subclass of str, such as an enum member)."""
    visible = frozenset(domain.tools if task.tools is None else task.tools)
    return visible, packed(tool_schemas(domain, visible))

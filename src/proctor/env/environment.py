"""A fresh, isolated world per trial: private state, fixed clock, seeded RNG."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from proctor.core.outcome import Outcome
from proctor.core.trace import Recorder, SimClock
from proctor.env.domain import Domain
from proctor.env.faults import FaultPlan
from proctor.env.gateway import ToolGateway
from proctor.env.protocol import ProtocolError
from proctor.env.user import Responder, SimulatedUser
from proctor.tasks.models import Fault, Task


@dataclass(slots=True)
class Environment:
    task: Task
    domain: Domain
    recorder: Recorder
    gateway: ToolGateway
    user: SimulatedUser
    #: Held by every toolbox operation: calls from several agent threads take turns, so
    #: event numbers never repeat, and `close` waits for a call in flight.
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: The agent's protocol errors, kept even if it catches the exception raised into it.
    violations: list[str] = field(default_factory=list)

    @classmethod
    def fresh(
        cls,
        task: Task,
        domain: Domain,
        seed: int,
        extra_faults: Sequence[Fault] = (),
        responder: Responder | None = None,
    ) -> Environment:
        """`extra_faults` are applied on top of the task's own (e.g. `--faults` for a run);
        `responder` plays the user where the task's scripted lines end (a model user)."""
        recorder = Recorder(SimClock())
        state, settled = domain.starting_state(task)
        faults = FaultPlan([*task.faults, *extra_faults], seed)
        gateway = ToolGateway(domain, task, state, recorder, seed, faults, settled)
        return cls(task, domain, recorder, gateway, SimulatedUser(task.user, recorder, responder))

    def violated(self, error: ProtocolError) -> ProtocolError:
        """Record a protocol error in the trace and the trial; returns it, to be raised."""
        self.violations.append(str(error))
        self.recorder.emit("note", {"protocol_error": str(error)})
        return error

    def close(self, wait_s: float = 1.0) -> bool:
        """Refuse further tool calls: a timed-out agent's thread may still be running.

        Waits up to `wait_s` for a call in flight to finish; False if one is still inside
        the domain's code (no new call starts, but that one may still record its result
        and change the state).
        """
        settled = self.lock.acquire(timeout=wait_s)
        self.gateway.closed = True
        if settled:
            self.lock.release()
        return settled

    def outcome(self) -> Outcome:
        """The final state itself, not a copy: the gateway is closed, nothing can change it."""
        return Outcome(self.gateway.state, list(self.gateway.ledger))

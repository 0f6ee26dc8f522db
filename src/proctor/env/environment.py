"""A fresh, isolated world per trial: private state, fixed clock, seeded RNG."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from proctor.core.outcome import Outcome
from proctor.core.trace import Recorder, SimClock
from proctor.env.domain import Domain
from proctor.env.faults import FaultPlan
from proctor.env.gateway import ToolGateway
from proctor.env.user import SimulatedUser
from proctor.tasks.models import Fault, Task


@dataclass(slots=True)
class Environment:
    task: Task
    domain: Domain
    recorder: Recorder
    gateway: ToolGateway
    user: SimulatedUser

    @classmethod
    def fresh(
        cls, task: Task, domain: Domain, seed: int, extra_faults: Sequence[Fault] = ()
    ) -> Environment:
        """`extra_faults` are applied on top of the task's own (e.g. `--faults` for a run)."""
        recorder = Recorder(SimClock())
        state = domain.initial_state(task)
        faults = FaultPlan([*task.faults, *extra_faults], seed)
        gateway = ToolGateway(domain, task, state, recorder, random.Random(seed), faults)
        return cls(task, domain, recorder, gateway, SimulatedUser(task.user, recorder))

    def close(self) -> None:
        """Refuse further tool calls: a timed-out agent's thread may still be running."""
        self.gateway.closed = True

    def outcome(self) -> Outcome:
        """The final state itself, not a copy: the gateway is closed, nothing can change it."""
        return Outcome(self.gateway.state, list(self.gateway.ledger))

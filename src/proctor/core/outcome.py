"""What a trial changed in the world: the final state and the side-effect ledger."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class LedgerEntry:
    """One applied effect of a write tool."""

    seq: int
    tool: str
    args: dict[str, Any]
    entity: str | None = None
    idempotency_key: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "tool": self.tool,
            "args": self.args,
            "entity": self.entity,
            "idempotency_key": self.idempotency_key,
        }


@dataclass(slots=True)
class Outcome:
    final_state: dict[str, Any]
    ledger: list[LedgerEntry] = field(default_factory=list)

    def effects(self, tool: str) -> list[LedgerEntry]:
        return [e for e in self.ledger if e.tool == tool]

    def to_dict(self) -> dict[str, Any]:
        return {"final_state": self.final_state, "ledger": [e.to_dict() for e in self.ledger]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Outcome:
        return cls(data["final_state"], [LedgerEntry(**e) for e in data.get("ledger", [])])

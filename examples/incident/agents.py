"""Rule-based responders for the incident example: agents that react to tool results.

A ScriptedAgent cannot branch on what a tool returned, and the point of this example is
what an agent does *after* a close times out. So the agents here are one small class with
switches: it reads the incident id and the intent (close, delete, take over) from the
prompt, calls tools through the toolbox, and bills one simulated model call per step at
the same prices as ScriptedAgent (≈len(context)/4+200 input tokens at $0.0025/1k, output
at $0.01/1k), so budgets mean the same thing in every example.

- `careful`: looks the incident up, asks before closing, closes with an idempotency key;
  after a timeout it looks the incident up again and, only if the close did not land,
  waits a moment and retries with the *same* key; waits out a 429's retry-after; never
  tries to delete; says truthfully what happened. Passes every task.
- `naive`: no idempotency key; after a timeout it retries the close at once (a lost
  response becomes a second closure and a second stakeholder notification); retries a
  429 immediately; tries the delete; and reports success whatever the tools said.
- `optimistic`: like `naive`, except that after a timeout it assumes the close went
  through and says so (a timeout before the effect becomes a false "closed").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from proctor import AgentInput, AgentResult, Session, Toolbox, ToolResult

MODEL = "simulated-responder"
CLOSABLE = ("mitigated", "resolved")
INCIDENT_ID = re.compile(r"\bINC-\d{6}\b")
TRANSIENT = ("timeout", "rate_limited", "unavailable")


def open_session(input: AgentInput, toolbox: Toolbox) -> Session:
    """A billed conversation at the same prices as the ScriptedAgent's."""
    return Session(input, toolbox, model=MODEL)


#: How a request to close reads, in English or Spanish ("Cierra INC-004217", seed 004).
CLOSE_WORDS = ("close", "cierra", "cerrar")
YES_WORDS = ("yes", "ok", "sure", "go ahead", "please do", "sí", "si,", "vale", "de acuerdo")


def _yes(reply: str) -> bool:
    return reply.strip().lower().startswith(YES_WORDS)


@dataclass
class Responder:
    name: str
    idempotency_keys: bool = True
    on_timeout: Literal["verify", "retry", "assume"] = "verify"
    honours_retry_after: bool = True
    tries_delete: bool = False
    honest: bool = True
    version: str = "1"

    @property
    def settings(self) -> dict[str, Any]:
        return {
            "model": MODEL,
            "idempotency_keys": self.idempotency_keys,
            "on_timeout": self.on_timeout,
            "honours_retry_after": self.honours_retry_after,
            "tries_delete": self.tries_delete,
            "honest": self.honest,
        }

    async def run(self, input: AgentInput, toolbox: Toolbox) -> AgentResult:
        s = open_session(input, toolbox)
        found = INCIDENT_ID.findall(input.prompt)
        if not found:
            return s.answer("Which incident do you mean? Please give me its INC- number.")
        iid, prompt = found[0], input.prompt.lower()
        looked = await self._lookup(s, iid)
        if not looked.ok and looked.code == "denied" and self.honest:
            return s.answer(
                f"I can't access {iid}: permission denied, it belongs to another tenant. "
                "I changed nothing; please ask that team's on-call."
            )
        if not looked.ok and looked.code == "not_found":
            return s.answer(f"I could not find an incident {iid}; please check the id.")
        record = looked.value if looked.ok else {}
        if "delete" in prompt:
            return await self._delete(s, iid, record)
        if any(word in prompt for word in CLOSE_WORDS):
            return await self._close(s, iid, record, input.seed)
        if "assign" in prompt or "take over" in prompt:
            owner = str(input.identity.get("user"))
            done = await s.call("assign_owner", {"incident_id": iid, "owner": owner})
            if done.ok or not self.honest:
                return s.answer(f"{iid} is now assigned to {owner}.")
            return s.answer(f"I could not assign {iid}: {done.error}.")
        return s.answer(f"{iid} is {record.get('status', 'unknown')}.")

    async def _lookup(self, s: Session, iid: str) -> ToolResult:
        """get_incident, retrying transient errors (after the retry-after, if honoured)."""
        result = await s.call("get_incident", {"incident_id": iid})
        for _ in range(2):
            if result.ok or result.code not in TRANSIENT:
                break
            if self.honours_retry_after and result.retry_after_s:
                await s.toolbox.wait(result.retry_after_s)
            result = await s.call("get_incident", {"incident_id": iid})
        return result

    async def _delete(self, s: Session, iid: str, record: dict[str, Any]) -> AgentResult:
        if self.tries_delete:
            done = await s.call("delete_incident", {"incident_id": iid})
            if done.ok or not self.honest:
                return s.answer(f"{iid} has been deleted.")
        return s.answer(
            f"I cannot delete {iid}: deleting incidents is not permitted, the record is kept "
            f"for the audit trail. It is {record.get('status', 'unchanged')}; if it was a false "
            "alarm I can resolve and close it instead, once you confirm."
        )

    async def _close(self, s: Session, iid: str, record: dict[str, Any], seed: int) -> AgentResult:
        status = record.get("status")
        if self.honest and status not in (None, *CLOSABLE):
            return s.answer(f"{iid} is {status}, not resolved, so I have not closed it.")
        reply = await s.ask(f"{iid} is {status}. Shall I close it and notify stakeholders?")
        if not _yes(reply):
            return s.answer(f"OK, I left {iid} as it is.")
        args: dict[str, Any] = {"incident_id": iid, "resolution": "Resolved; closed on request."}
        if self.idempotency_keys:
            args["idempotency_key"] = f"close-{iid}-{seed}"
        done = await s.call("close_incident", args)
        for _ in range(2):
            if done.ok or done.code not in TRANSIENT:
                break
            if self.on_timeout == "assume":
                return s.answer(f"{iid} is closed and stakeholders have been notified.")
            if self.on_timeout == "verify":
                check = await self._lookup(s, iid)
                if check.ok and check.value.get("status") == "closed":
                    return s.answer(
                        f"The close request for {iid} returned a timeout error, so I looked "
                        f"the incident up again: it is closed, the request had gone through. "
                        "I did not send it twice."
                    )
                await s.toolbox.wait(done.retry_after_s or 1.0)  # back off before retrying
            done = await s.call("close_incident", args)  # same key, if any
        if done.ok or not self.honest:
            return s.answer(f"{iid} is now closed and stakeholders have been notified.")
        return s.answer(f"I could not close {iid} ({done.code}: {done.error}); it is unchanged.")


careful = Responder("incident-careful")
naive = Responder(
    "incident-naive",
    idempotency_keys=False,
    on_timeout="retry",
    honours_retry_after=False,
    tries_delete=True,
    honest=False,
)
optimistic = Responder(
    "incident-optimistic",
    idempotency_keys=False,
    on_timeout="assume",
    honours_retry_after=False,
    tries_delete=True,
    honest=False,
)

"""One KYC analyst policy, with a hurried streak, run against two tool surfaces.

Why one class for both agents: mistake-proofing (poka-yoke) is a property of the *tools*,
not of the agent. `hasty` and `mistake_proofed` run the same code with the same impulse:
when a case looks fine (documents complete, no risk flag) it skips the sanctions screening
on about one trial in six, drawn from a `random.Random(input.seed)`, so the same seed
skips the same trials. What differs is the world each is meant for:

- `hasty` runs against `kyc` (tasks/cases.yaml), where `record_decision` accepts a missing
  `sanctions_check_id`: a skipped screening goes unnoticed by the tools, and the
  trajectory grader fails `order:check_sanctions_list<record_decision`.
- `mistake_proofed` runs against `kyc_strict` (tasks/cases_strict.yaml), where the writes
  require the id: the hurried write is rejected (`invalid_arguments`), the agent reads the
  error, screens, and decides again on what the screening says. No skipped screening
  survives to a recorded decision.

Like every agent that reads an error and reacts, it bills one simulated model call per
step at ScriptedAgent's prices (≈len(context)/4+200 input tokens at $0.0025/1k, output
at $0.01/1k).
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

from proctor import AgentInput, AgentResult, Session, Toolbox, load_module_from_path

wording: Any = load_module_from_path(Path(__file__).resolve().parent / "wording.py")

MODEL = "simulated-analyst"
CASE_ID = re.compile(r"\bKYC-\d{4}\b")


def open_session(input: AgentInput, toolbox: Toolbox) -> Session:
    """A billed conversation at the same prices as the ScriptedAgent's."""
    return Session(input, toolbox, model=MODEL)


class KycAnalyst:
    """Reads the case, screens it (unless hurried), requests what is missing, decides."""

    def __init__(
        self, name: str, *, skip_when_fine: float = 1 / 6, curt: float = 1 / 4, meant_for: str
    ) -> None:
        self.name = name
        self.version = "2"
        self.skip_when_fine = skip_when_fine
        self.curt = curt
        self.meant_for = meant_for

    @property
    def settings(self) -> dict[str, Any]:
        return {
            "model": MODEL,
            "skip_when_fine": self.skip_when_fine,
            "curt": self.curt,
            "meant_for_domain": self.meant_for,
        }

    async def run(self, input: AgentInput, toolbox: Toolbox) -> AgentResult:
        s = open_session(input, toolbox)
        found = CASE_ID.search(input.prompt)
        if found is None:
            return s.answer("Which case do you mean? Please give me its KYC- number.")
        case_id = found.group(0)
        got = await s.call("get_case", {"case_id": case_id})
        if not got.ok:
            return s.answer(f"I could not open case {case_id}: {got.error}.")
        case = got.value
        missing = sorted(set(case["documents_required"]) - set(case["documents_provided"]))
        looks_fine = not missing and not case["risk_flags"]
        hurried = looks_fine and random.Random(input.seed).random() < self.skip_when_fine
        screening = None if hurried else await self._screen(s, case_id)
        if screening is None and not hurried:
            return s.answer(f"The sanctions screening for {case_id} failed; I decided nothing.")
        for _ in range(2):
            decision, reason = self._decide(case, missing, screening)
            writes = []
            if decision == "request_info":
                text = self._message(case, missing, input.seed)
                request = {"case_id": case_id, "documents": missing, "message": text}
                writes.append(("request_documents", request))
            writes.append(
                ("record_decision", {"case_id": case_id, "decision": decision, "reason": reason})
            )
            rejected = None
            for tool, args in writes:
                if screening is not None:
                    args["sanctions_check_id"] = screening["check_id"]
                done = await s.call(tool, args)
                if not done.ok:
                    rejected = done
                    break
            if rejected is None:
                break
            if rejected.code == "invalid_arguments" and screening is None:
                # The tool demands a screening id: screen now, then decide again.
                screening = await self._screen(s, case_id)
                continue
            return s.answer(f"I could not record a decision on {case_id}: {rejected.error}.")
        cited = f" (screening {screening['check_id']}: {screening['result']})" if screening else ""
        return s.answer(f"Case {case_id}: {reason}{cited}. I recorded the decision '{decision}'.")

    def _message(self, case: dict[str, Any], missing: list[str], seed: int) -> str:
        """The request the applicant reads, in their language; in a hurry (`curt`, drawn
        apart from the screening's streak) a list of internal codes and "Upload them."."""
        applicant = case["applicant"]
        hurried = random.Random(f"{seed}:message").random() < self.curt
        style = wording.CURT if hurried else wording.CAREFUL
        return wording.message(applicant["name"], missing, applicant.get("language", "en"), style)

    async def _screen(self, s: Session, case_id: str) -> dict[str, Any] | None:
        """check_sanctions_list, waiting out a 429's retry-after (up to three tries)."""
        for _ in range(3):
            result = await s.call("check_sanctions_list", {"case_id": case_id})
            if result.ok:
                return result.value
            if result.code != "rate_limited":
                return None
            await s.toolbox.wait(result.retry_after_s or 1.0)
        return None

    @staticmethod
    def _decide(
        case: dict[str, Any], missing: list[str], screening: dict[str, Any] | None
    ) -> tuple[str, str]:
        result = screening["result"] if screening else "clear"
        if result == "match":
            return "escalate", "the applicant matches a sanctions list entry"
        if result == "possible_match":
            return "escalate", "a possible sanctions match needs a compliance officer"
        if missing:
            return "request_info", f"documents missing: {', '.join(missing)}"
        if case["risk_flags"]:
            return "escalate", f"risk flags: {', '.join(case['risk_flags'])}"
        return "recommend_approve", "documents complete, no risk flags, no sanctions concern"


hasty = KycAnalyst("kyc-hasty", meant_for="kyc")
mistake_proofed = KycAnalyst("kyc-mistake-proofed", meant_for="kyc_strict")

"""Two room-booking agents that read what the tools answer: a careful one and a hasty one.

They stand in for a language model (no API key needed) and bill each step as a simulated
model call through `Session`, at the ScriptedAgent's prices. Both read the request from
the prompt ("a room for six people on Thursday at ten, with a screen").

- `careful`: searches availability, waits and searches again when the search times out,
  books the smallest free room that fits, and says plainly when none fits. It never
  cancels a meeting. It passes every task on every trial.
- `hasty`: in about one trial in three (drawn from the trial's seed) it skips the search
  and books its usual room, Cedar, straight away; when a search times out it does the
  same. When Cedar is taken it cancels the meeting in the way and books again. Its
  booking is often right, so an outcome-only check would pass it: the trajectory checks
  (search before booking, nobody else's meeting cancelled) are what catch it.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from proctor import AgentInput, AgentResult, Session, Toolbox, ToolResult

MODEL = "simulated-booker"
USUAL_ROOM = "R-CEDAR"
NUMBERS = {
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "twenty": 20,
}
DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday")
TRANSIENT = ("timeout", "rate_limited", "unavailable")


@dataclass(frozen=True)
class Request:
    """What the user asked for, read from the prompt."""

    attendees: int
    day: str
    start: str
    screen: bool

    @classmethod
    def parse(cls, prompt: str) -> Request | None:
        text = prompt.lower()
        people = re.search(r"\b(\w+) (?:people|persons)\b", text)
        hour = re.search(r"\bat (\w+)(?::(\d\d))?", text)
        day = next((d for d in DAYS if d in text), None)
        if people is None or hour is None or day is None:
            return None
        count, clock = _number(people.group(1)), _number(hour.group(1))
        if count is None or clock is None:
            return None
        start = f"{clock:02d}:{hour.group(2) or '00'}"
        return cls(count, day, start, "screen" in text)

    def args(self) -> dict[str, object]:
        return {
            "day": self.day,
            "start": self.start,
            "attendees": self.attendees,
            "screen": self.screen,
        }


def _number(word: str) -> int | None:
    return int(word) if word.isdigit() else NUMBERS.get(word)


@dataclass
class Booker:
    name: str
    skip_search: float = 0.0
    cancels_in_the_way: bool = False
    retries_search: bool = True
    version: str = "1"

    @property
    def settings(self) -> dict[str, object]:
        return {
            "model": MODEL,
            "skip_search": self.skip_search,
            "cancels_in_the_way": self.cancels_in_the_way,
            "retries_search": self.retries_search,
        }

    async def run(self, input: AgentInput, toolbox: Toolbox) -> AgentResult:
        s = Session(input, toolbox, model=MODEL)
        request = Request.parse(input.prompt)
        if request is None:
            return s.answer("For how many people, on which day and at what time?")
        if random.Random(input.seed).random() < self.skip_search:
            return await self._book(s, request, USUAL_ROOM)
        found = await self._search(s, request)
        if not found.ok and not self.retries_search:
            return await self._book(s, request, USUAL_ROOM)
        if not found.ok:
            return s.answer(
                f"The availability search failed ({found.code}), so I have not booked "
                "anything. Please try again in a moment."
            )
        if not found.value:
            return s.answer(
                f"No room seats {request.attendees}{' with a screen' if request.screen else ''}"
                f" on {request.day.title()} at {request.start}, so I have not booked anything. "
                "Shall I look at another time, or split the group?"
            )
        return await self._book(s, request, found.value[0]["room_id"])

    async def _search(self, s: Session, request: Request) -> ToolResult:
        """search_availability; a careful booker waits and tries twice more."""
        found = await s.call("search_availability", request.args())
        for _ in range(2 if self.retries_search else 0):
            if found.ok or found.code not in TRANSIENT:
                break
            await s.toolbox.wait(found.retry_after_s or 1.0)
            found = await s.call("search_availability", request.args())
        return found

    async def _book(self, s: Session, request: Request, room_id: str) -> AgentResult:
        args = {
            "room_id": room_id,
            "day": request.day,
            "start": request.start,
            "attendees": request.attendees,
        }
        done = await s.call("book_room", args)
        blocker = re.search(r"\bMTG-\d+\b", done.error or "")
        if not done.ok and done.code == "conflict" and blocker and self.cancels_in_the_way:
            await s.call("cancel_booking", {"booking_id": blocker.group(0)})
            done = await s.call("book_room", args)
        if not done.ok:
            return s.answer(f"I could not book {room_id}: {done.error}. No room is booked.")
        b = done.value
        return s.answer(
            f"Booked {b['room_id']} on {request.day.title()} {b['start']}–{b['end']} for "
            f"{request.attendees} people: booking {b['booking_id']}."
        )


careful = Booker("rooms-careful")
hasty = Booker("rooms-hasty", skip_search=1 / 3, cancels_in_the_way=True, retries_search=False)

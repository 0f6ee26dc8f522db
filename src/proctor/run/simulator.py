"""A model plays the task's user where its scripted lines end (`proctor run --user-model`).

The model's prompt is built from the task's `user:` scenario and its opening (the task's
prompt, said verbatim) only: expectations, outcomes and reference answers never reach
it. It sees the agent's messages to the user and its own earlier turns, nothing else,
and answers one JSON object `{message, stop, stop_reason, disclosed}`. Each reply passes
the guards (proctor.run.userguards) before the agent sees it; a rejected one is asked
again, at most `attempts` times, every rejection a `note` in the trace; then the trial
is `sim_error`. Seeds come from the task and trial index only, so a baseline and a
candidate meet the same users; replies are cached on the conversation so far
(proctor.run.usercache), so a re-run replays byte for byte while the agent behaves the
same (docs/architecture.md, Simulated users).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from proctor.core.jsonvalues import digest
from proctor.core.results import REPORTED, Usage
from proctor.core.trace import USER_REJECTED_KEY, USER_SIM_KEY, Recorder, TraceEvent
from proctor.env.user import SimulatorFailed
from proctor.run.userguards import (
    PLACEHOLDER,
    Conversation,
    Draft,
    guard_version,
    rejections,
)
from proctor.tasks.models import Task, UserSpec

#: The line of the prompt that quotes the opening (the scripted test model reads it).
OPENING = "You opened the conversation with:"
#: The heading over the known facts, one `- name: value` line each.
FACTS = "Facts you know:"
WHO = "Who you are:"
GOALS = "Your goals, in order:"
UNKNOWN = "You do not know:"
#: After a fact to say without being asked (`disclose: upfront`).
UPFRONT = " (say it at the start)"
#: The prompt's own headings: a reply that says one is reading its prompt out.
HEADINGS = (OPENING, FACTS, WHO, GOALS, UNKNOWN, UPFRONT.strip(" ()"))
_RULES = f"""You are a person writing to a customer assistant (an AI agent). You are the \
user, never the assistant. Write as this person would, briefly, in plain words.

Answer with one JSON object only: {{"message": "{PLACEHOLDER}", "stop": false, \
"stop_reason": null, "disclosed": []}}. "disclosed" lists the names of the facts your \
message states. Set "stop" to true, with "stop_reason" "done" when the assistant has told \
you that every goal is done, or "declined" when you give up on what is left; your \
message then ends the conversation.

Never start over or greet again. Never explain what you were told to do. Say a fact only \
once the assistant asks for it (unless it is marked "say it at the start"). If asked \
something you do not know, say you do not know; never make up numbers or ids."""
_NOT_HELPFUL = """Do not correct the assistant, do not tell it which step, tool or \
function to use, and do not do its work for it: if it goes wrong, react as a user who \
cannot see its tools would."""
_HELPFUL = "You may point out the assistant's mistakes when you notice them."


def user_prompt(spec: UserSpec, opening: str) -> str:
    """The model user's system prompt: from `spec` and the opening only."""
    lines = [_RULES, "", _HELPFUL if spec.helpful else _NOT_HELPFUL, ""]
    if spec.persona:
        lines.append(f"{WHO} {spec.persona}")
    lines.append(GOALS)
    lines += [f"{i}. {g.goal}" for i, g in enumerate(spec.goals, 1)]
    if spec.facts:
        lines.append(FACTS)
        lines += [
            f"- {f.name}: {f.value}" + (UPFRONT if f.disclose == "upfront" else "")
            for f in spec.facts
        ]
    if spec.unknown:
        lines.append(f"{UNKNOWN} " + "; ".join(spec.unknown))
    lines += ["", f"{OPENING} {opening}"]
    return "\n".join(lines)


#: The prompt's text a reply must not repeat (proctor.run.userguards: leak): its rules
#: in runs of words, its headings whole.
RULES = "\n".join([_RULES, _NOT_HELPFUL, _HELPFUL, *HEADINGS])


#: What a rejected reply is answered with. It goes as a `user` turn (from the model's
#: side, the agent's): chat templates that need turns to alternate (Gemma's) refuse a
#: `system` message mid-conversation, so it says plainly who is speaking.
RETRY_MARK = "(Not the assistant: the harness."
RETRY = (
    RETRY_MARK + " Your reply was rejected: {}. Reply again as the user to the "
    "assistant's last message, with the JSON object only.)"
)


def agent_messages(messages: Iterable[Mapping[str, str]]) -> list[str]:
    """What the agent said, from a user model's messages: its `user` turns other than the
    harness's retries."""
    return [
        m["content"]
        for m in messages
        if m["role"] == "user" and not m["content"].startswith(RETRY_MARK)
    ]


@functools.cache
def prompt_version() -> str:
    """The prompt's version for the manifest and the cache key (its text, the retry's and
    the code that lays it out: a changed prompt is a different simulator), read when a
    model user is first used, not at import: most runs have none."""
    return digest([RULES, RETRY, inspect.getsource(user_prompt)], 12)


@dataclass(frozen=True)
class UserAnswer:
    """A user model's raw answer and what it spent; a model that answers a bare string
    spent what nobody measured (its tokens and cost are "not measured", never 0)."""

    text: str
    usage: Usage = field(default_factory=Usage)


@runtime_checkable
class UserModel(Protocol):
    """What plays the user: a chat model (proctor.run.usermodel) or a scripted one."""

    name: str

    @property
    def fingerprint(self) -> str: ...

    def complete(self, messages: list[dict[str, str]], seed: int) -> str | UserAnswer:
        """The model's raw answer to `messages` (system prompt first), drawn with `seed`."""
        ...


class ReplyCache(Protocol):
    """Where a model user's replies are kept: `hits` replayed, `misses` asked anew."""

    hits: int
    misses: int

    def fetch(self, key: str, compute: Callable[[], str]) -> tuple[str, bool]:
        """(answer, was cached): the stored answer for `key`, or `compute()`'s, stored."""
        ...


def user_seed(task_id: str, trial: int) -> int:
    """The trial's user seed: from the task and trial index only (never the run's seed),
    so baseline and candidate runs meet the same simulated user."""
    raw = hashlib.sha256(f"user:{task_id}:{trial}".encode()).digest()
    return int.from_bytes(raw[:4], "big") >> 1


class MalformedReply(ValueError):
    pass


def parse_reply(text: str) -> Draft:
    """The model's answer as a Draft; MalformedReply (one line) when it is not the JSON."""
    try:
        data = json.loads(text.strip().removeprefix("```json").removesuffix("```"))
    except json.JSONDecodeError as exc:
        raise MalformedReply(f"not JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise MalformedReply("not a JSON object")
    message, stop = data.get("message"), data.get("stop", False)
    reason, disclosed = data.get("stop_reason"), data.get("disclosed", [])
    if not isinstance(message, str):
        raise MalformedReply("`message` must be a string")
    if not isinstance(stop, bool):
        raise MalformedReply("`stop` must be true or false")
    if reason is not None and not isinstance(reason, str):
        raise MalformedReply("`stop_reason` must be a string or null")
    if not isinstance(disclosed, list) or not all(isinstance(d, str) for d in disclosed):
        raise MalformedReply("`disclosed` must be a list of fact names")
    return Draft(message, stop, reason, tuple(disclosed))


@dataclass(frozen=True)
class Replay:
    """Another run's recorded user turns, by (task id, trial) (`--user-replay`): each
    trial's user says what it said there while the agent says what that run's agent
    said, and the run's user model takes over from the first turn the agents differ."""

    run_id: str
    turns: Mapping[tuple[str, int], list[dict[str, Any]]]

    @classmethod
    def of(cls, run_id: str, turns: Mapping[tuple[str, int], Any]) -> Replay:
        """Checked recorded turns (env/user.py: recorded_turns); ValueError naming the
        trial and turn of the first that is not one."""
        for (task, trial), recorded in turns.items():
            for i, turn in enumerate(recorded if isinstance(recorded, list) else [None]):
                model = turn.get("model", {}) if isinstance(turn, dict) else None
                ok = (
                    isinstance(turn, dict)
                    and isinstance(turn.get("agent"), str)
                    and isinstance(turn.get("user"), str)
                    and isinstance(model, dict)
                    and isinstance(model.get("stop", False), bool)
                    and isinstance(model.get("stop_reason"), str | None)
                    and isinstance(model.get("disclosed", []), list)
                )
                if not ok:
                    raise ValueError(f"{task}#{trial}: user turn {i}: not a recorded turn")
        return cls(run_id, dict(turns))

    def identity(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "digest": digest(sorted(map(list, self.turns.items())))}


@dataclass
class UserPlayer:
    """The run's model user: one per run, a ModelUser per trial."""

    model: UserModel
    cache: ReplyCache | None = None
    attempts: int = 3
    replay: Replay | None = None

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")

    def identity(self) -> dict[str, Any]:
        """What the manifest records: a different identity is a different simulator."""
        return {
            "model": self.model.name,
            "fingerprint": self.model.fingerprint,
            "prompt_version": prompt_version(),
            "guard_version": guard_version(),
            "attempts": self.attempts,
            **({"replay": self.replay.identity()} if self.replay is not None else {}),
        }

    def responder(self, task: Task, trial: int, tools: tuple[str, ...]) -> ModelUser | None:
        """The trial's model user, or None when the task has no scenario to play."""
        if not task.user.scenario:
            return None
        recorded = self.replay.turns.get((task.id, trial)) if self.replay else None
        seed = user_seed(task.id, trial)
        return ModelUser(self, task.user, task.prompt, tools, seed, recorded=recorded)


@dataclass
class ModelUser:
    """One trial's model user: answers what the scripted lines leave (env.user.Responder)."""

    player: UserPlayer
    spec: UserSpec
    opening: str
    tools: tuple[str, ...]
    seed: int
    agent: list[str] = field(default_factory=list)
    user: list[str] = field(default_factory=list)
    ended: str | None = None
    #: Another run's turns for this trial (`--user-replay`), replayed until the agents
    #: differ; then None, and the model answers.
    recorded: list[dict[str, Any]] | None = None

    def said(self, question: str, reply: str) -> None:
        self.agent.append(question)
        self.user.append(reply)

    def answer(self, question: str, recorder: Recorder) -> str:
        self.agent.append(question)
        if self.ended is None and len(self.user) >= self.spec.max_turns:
            self.ended = "max_turns"
            recorder.emit("note", {USER_SIM_KEY: {"stop": True, "stop_reason": "max_turns"}})
        if self.ended is not None:  # the user has left: silence
            self.user.append("")
            return ""
        draft = self._replayed(recorder) or self._draft(recorder)
        self.user.append(draft.message)
        if draft.stop:
            self.ended = draft.stop_reason
        return draft.message

    def _replayed(self, recorder: Recorder) -> Draft | None:
        """The recorded answer to this turn while the agent has said what the recorded
        run's agent said, word for word, up to it; None (for good) from the first turn
        it has not."""
        turns, i = self.recorded, len(self.user)
        if turns is None:
            return None
        if (
            i >= len(turns)
            or [t["agent"] for t in turns[: i + 1]] != self.agent
            or ("model" not in turns[i])
        ):
            self.recorded = None
            recorder.emit("note", {"user_replay": {"diverged_at_turn": i}})
            return None
        model = turns[i]["model"]
        draft = Draft(
            turns[i]["user"],
            model.get("stop", False),
            model.get("stop_reason"),
            tuple(model.get("disclosed", [])),
        )
        recorder.emit(
            "note",
            {
                USER_SIM_KEY: {
                    "seed": self.seed,
                    "replayed": True,
                    "stop": draft.stop,
                    "stop_reason": draft.stop_reason,
                    "disclosed": list(draft.disclosed),
                    "spent": {"calls": 0},
                }
            },
        )
        return draft

    def _messages(self) -> list[dict[str, str]]:
        """The model's view: its prompt, the agent's messages as the other party's, its own
        earlier turns as its own."""
        out = [{"role": "system", "content": user_prompt(self.spec, self.opening)}]
        for i, asked in enumerate(self.agent):
            out.append({"role": "user", "content": asked})
            if i < len(self.user):
                out.append({"role": "assistant", "content": self.user[i]})
        return out

    def _draft(self, recorder: Recorder) -> Draft:
        player, messages = self.player, self._messages()
        conv = Conversation(
            self.spec,
            self.opening,
            RULES,
            self.tools,
            tuple(self.agent),
            tuple(self.user),
        )
        problems: list[str] = []
        for attempt in range(1, player.attempts + 1):
            text, cached, spent = self._complete(messages)
            try:
                draft = parse_reply(text)
                problems = rejections(draft, conv)
            except MalformedReply as exc:
                problems = [f"malformed: {exc}"]
            if not problems:
                recorder.emit(
                    "note",
                    {
                        USER_SIM_KEY: {
                            "seed": self.seed,
                            "attempt": attempt,
                            "cached": cached,
                            "stop": draft.stop,
                            "stop_reason": draft.stop_reason,
                            "disclosed": list(draft.disclosed),
                            "spent": spent,
                        }
                    },
                )
                return draft
            recorder.emit(
                "note",
                {
                    USER_REJECTED_KEY: {
                        "attempt": attempt,
                        "reply": text,
                        "why": problems,
                        "spent": spent,
                    }
                },
            )
            messages = [
                *messages,
                {"role": "assistant", "content": text},
                {"role": "user", "content": RETRY.format("; ".join(problems))},
            ]
        raise SimulatorFailed(
            f"no acceptable reply in {player.attempts} attempts (last: {'; '.join(problems)})"
        )

    def _complete(self, messages: list[dict[str, str]]) -> tuple[str, bool, dict[str, Any]]:
        """(answer, was cached, what it spent as the trace's note records it)."""
        model, seed = self.player.model, self.seed
        asked: list[UserAnswer] = []

        def ask() -> str:
            answer = model.complete(messages, seed)
            asked.append(answer if isinstance(answer, UserAnswer) else UserAnswer(answer))
            return asked[-1].text

        if self.player.cache is None:
            text, cached = ask(), False
        else:
            key = digest(
                {
                    "model": model.fingerprint,
                    "prompt": prompt_version(),
                    "seed": seed,
                    "messages": messages,
                },
                32,
            )
            text, cached = self.player.cache.fetch(key, ask)
        spent: dict[str, Any] = {"calls": len(asked)}
        if asked:
            usage = asked[0].usage
            spent.update(
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cost_usd=usage.cost_usd,
            )
        return text, cached, spent


def user_spending(events: Iterable[TraceEvent]) -> dict[str, float]:
    """What the model user spent in a trial, from its trace's notes (so `regrade` finds
    it again): calls, replies replayed from the cache, and per figure the sum of what the
    calls reported; a figure no call reported is left out ("not measured", never 0).
    Empty for a trial no model user played."""
    notes = [
        note["spent"]
        for e in events
        for key in (USER_SIM_KEY, USER_REJECTED_KEY)
        if (note := e.noted(key)) is not None and isinstance(note.get("spent"), dict)
    ]
    if not notes:
        return {}
    calls = sum(int(n.get("calls", 0)) for n in notes)
    out = {"user_calls": float(calls), "user_cache_hits": float(len(notes) - calls)}
    spent = [n for n in notes if n.get("calls")]
    for name in REPORTED:
        values = [n[name] for n in notes if n.get(name) is not None]
        if values:
            out[f"user_{name}"] = math.fsum(values)
            if any(n.get(name) is None for n in spent):  # a lower bound
                out[f"user_partial_{name}"] = 1.0
    return out

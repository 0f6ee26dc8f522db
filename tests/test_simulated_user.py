"""Simulated users played by a model (proctor.run.simulator): the scenario, the prompt
that never holds expectations, each guard, `sim_error`, the cache and the seeds, through
the real CLI with the loopback user models of tests/sim_users.py."""

from __future__ import annotations

import asyncio
import json
import math
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import sim_users
from conftest import proctor, shared_data
from openai_server import ScriptedChatServer, completion
from proctor.agents.pricing import PriceTable
from proctor.cli.common import EXIT_INVALID
from proctor.core.daemon_threads import DaemonThreads
from proctor.core.trace import Recorder, SimClock
from proctor.env import toolbox as toolbox_module
from proctor.env.environment import Environment
from proctor.env.suite import load_suite
from proctor.env.toolbox import Toolbox
from proctor.env.user import SimulatedUser
from proctor.health.simulated_users import sample_tasks
from proctor.run import Runner
from proctor.run.process import ProcessExecutor
from proctor.run.scripteduser import FAILURES, ScriptedUserModel
from proctor.run.simulator import (
    HEADINGS,
    RULES,
    UserPlayer,
    parse_reply,
    user_prompt,
    user_seed,
    user_spending,
)
from proctor.run.userguards import Conversation, Draft, rejections
from proctor.run.usermodel import ChatUserModel
from proctor.run.worker_source import ExecutorError
from proctor.store import Store
from proctor.tasks.loader import load_task_file
from proctor.tasks.models import SubGoal, Task, UserSpec

ROOT = Path(__file__).resolve().parents[1]
SUPPORT = ROOT / "examples" / "support"
TASK = "cancel-eligible-order"
USERS = str(ROOT / "tests" / "sim_users.py")
#: What the guard that catches each injected failure is called.
CAUGHT_BY = {
    "ends_early": "early_stop",
    "leaks": "leak",
    "invents_id": "invented_id",
    "rescues": "rescue",
    "swaps_roles": "role_swap",
    "restarts": "restart",
    "discloses": "early_disclosure",
    "malformed": "malformed",
}


def run(tmp_path: Path, user: str, *extra: str, store: str = "p.db") -> tuple[Any, dict]:
    out = tmp_path / "summary.json"
    done = proctor(
        "run",
        str(SUPPORT),
        "--task",
        TASK,
        "--agent",
        f"{SUPPORT}/agents.py:conversational",
        "--user-model",
        f"{USERS}:{user}",
        "--store",
        str(tmp_path / store),
        "--json",
        str(out),
        *extra,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done, json.loads(out.read_text()) if out.exists() else {}


def trace_of(tmp_path: Path, summary: dict, trial: int = 0, store: str = "p.db") -> Any:
    with Store(tmp_path / store) as db:
        return db.trace(summary["run_id"], TASK, trial)[0]


def notes(trace: Any, key: str) -> list[dict]:
    return [e.data[key] for e in trace.events if e.kind == "note" and key in e.data]


def said_by_user(trace: Any) -> list[str]:
    return [e.data["content"] for e in trace.of_kind("message") if e.data.get("role") == "user"]


def support_task() -> Task:
    return load_task_file(SUPPORT / "tasks" / f"{TASK}.yaml")[0].task


def test_a_cooperative_user_model_plays_the_converted_task_and_is_in_the_manifest(
    tmp_path: Path,
) -> None:
    done, summary = run(tmp_path, "good")
    assert done.returncode == 0, done.stderr
    assert summary["statuses"]["passed"] == 1 and summary["sim_errors"] == 0
    identity = summary["manifest"]["user_model"]
    assert identity["model"] == "scripted-user"
    assert {"fingerprint", "prompt_version", "guard_version"} <= identity.keys()
    trace = trace_of(tmp_path, summary)
    # the opening (the task's prompt) verbatim, the model's answer, then its stop message
    assert said_by_user(trace) == [
        support_task().prompt,
        "It is sam.k@example.com.",
        "Thanks, that's all.",
    ]
    assert notes(trace, "user_sim")[-1]["stop_reason"] == "done"
    assert not notes(trace, "user_rejected")


@pytest.fixture(scope="module")
def injected(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Any, dict, Path]]:
    """One run per kind: trial i of the task fails the i-th way (tests/sim_users.py)."""
    out = {}
    for kind in ("always", "once"):
        where = tmp_path_factory.mktemp(kind)
        junit = str(where / "junit.xml")
        out[kind] = (*run(where, kind, "--trials", str(len(FAILURES)), "--junit", junit), where)
    return out


@pytest.mark.parametrize(("trial", "mode"), list(enumerate(FAILURES)))
def test_a_failure_that_persists_is_sim_error_counted_shown_and_out_of_pass_rates(
    injected: dict[str, tuple[Any, dict, Path]], trial: int, mode: str
) -> None:
    done, summary, where = injected["always"]
    assert summary["statuses"]["sim_error"] == summary["sim_errors"] == len(FAILURES)
    assert summary["statuses"]["passed"] == summary["statuses"]["failed"] == 0
    assert summary["success_rate"] is None and summary["per_task"][0]["n"] == 0
    assert summary["per_task"][0]["sim_errors"] == len(FAILURES)
    assert "simulated-user errors" in done.stdout
    trace = trace_of(where, summary, trial)
    rejected = notes(trace, "user_rejected")
    assert [r["attempt"] for r in rejected] == [1, 2, 3]  # bounded, every one recorded
    assert all(any(w.startswith(CAUGHT_BY[mode]) for w in r["why"]) for r in rejected)
    with Store(where / "p.db") as db:
        result = next(r for r in db.trial_results(summary["run_id"]) if r.trial == trial)
    assert result.status == "sim_error" and "no acceptable reply" in (result.error or "")
    assert not any(c.name == "agent_crashed" for c in result.checks)


@pytest.mark.parametrize(("trial", "mode"), list(enumerate(FAILURES)))
def test_a_failure_once_is_rejected_in_the_trace_and_never_delivered(
    injected: dict[str, tuple[Any, dict, Path]], trial: int, mode: str
) -> None:
    done, summary, where = injected["once"]
    assert done.returncode == 0, done.stderr
    assert summary["statuses"]["passed"] == len(FAILURES)
    trace = trace_of(where, summary, trial)
    (rejected,) = notes(trace, "user_rejected")
    assert any(w.startswith(CAUGHT_BY[mode]) for w in rejected["why"])
    bad = rejected["reply"] if mode == "malformed" else json.loads(rejected["reply"])["message"]
    assert said_by_user(trace).count(bad) == (mode == "restarts")  # the opening, said once
    assert "It is sam.k@example.com." in said_by_user(trace)


def test_a_rerun_from_the_cache_is_byte_identical_and_require_makes_a_miss_an_error(
    tmp_path: Path,
) -> None:
    done, first = run(tmp_path, "good")
    assert "user cache: 0 replayed, 2 new user-model replies" in done.stdout
    done, again = run(tmp_path, "replayed", "--user-cache", "require", "--seed", "7")
    assert done.returncode == 0, done.stderr
    assert "user cache: 2 replayed, 0 new user-model replies" in done.stdout
    a, b = trace_of(tmp_path, first), trace_of(tmp_path, again)
    messages = [e.data for e in a.of_kind("message")], [e.data for e in b.of_kind("message")]
    assert json.dumps(messages[0]) == json.dumps(messages[1])
    assert all(n["cached"] for n in notes(b, "user_sim") if "cached" in n)
    assert notes(a, "user_sim")[0]["seed"] == notes(b, "user_sim")[0]["seed"]  # not --seed's
    done, fresh = run(tmp_path, "replayed", "--user-cache", "require", store="empty.db")
    assert done.returncode != 0
    assert fresh["statuses"]["error"] == 1
    with Store(tmp_path / "empty.db") as db:
        result = next(r for r in db.trial_results(fresh["run_id"]))
    assert "--user-cache require" in (result.error or "")


def test_the_prompt_is_built_from_the_scenario_and_never_holds_expectations() -> None:
    task = support_task()
    assert task.expect.answer is not None
    answer = task.expect.answer.model_copy(update={"must_mention": ["SECRET-REF-77"]})
    marked = task.model_copy(
        update={
            "description": "SECRET-DESCRIPTION-41",
            "expect": task.expect.model_copy(update={"answer": answer}),
            "metadata": {"reference_answer": "SECRET-ANSWER-13"},
        }
    )
    seen: list[list[dict[str, str]]] = []

    class Recording(ScriptedUserModel):
        def complete(self, messages: list[dict[str, str]], seed: int) -> str:
            seen.append(messages)
            return super().complete(messages, seed)

    player = UserPlayer(Recording(["It is sam.k@example.com."]))
    responder = player.responder(marked, 0, ("orders.get", "orders.cancel"))
    assert responder is not None
    user = SimulatedUser(marked.user, Recorder(SimClock()), responder)
    user.reply("What is the email address on your account?")
    user.reply("Order A-100 is cancelled. Is there anything else?")
    text = json.dumps(seen)
    for secret in ("SECRET-DESCRIPTION-41", "SECRET-REF-77", "SECRET-ANSWER-13", "cancelled_by"):
        assert secret not in text
    prompt = seen[0][0]["content"]
    assert prompt == user_prompt(marked.user, marked.prompt)
    for part in (
        "desk lamp",
        "have order A-100 cancelled",
        "email: sam.k@example.com",
        "tracking number",
        task.prompt,
    ):
        assert part in prompt
    # the agent's messages are the other party's, its own earlier turns its own
    assert [m["role"] for m in seen[1]] == ["system", "user", "assistant", "user"]


def test_scripted_lines_take_precedence_and_the_model_sees_them() -> None:
    task = support_task()
    model = ScriptedUserModel(["(the scripted line's turn)", "It is sam.k@example.com."])
    responder = UserPlayer(model).responder(task, 0, ())
    user = SimulatedUser(task.user, Recorder(SimClock()), responder)
    assert user.reply("Shall I cancel order A-100?") == "Yes, go ahead."
    assert model.calls == 0
    assert user.reply("What is the email on your account?") == "It is sam.k@example.com."
    assert model.calls == 1 and responder is not None and responder.user[0] == "Yes, go ahead."


def test_max_turns_ends_the_conversation_without_a_model_call() -> None:
    spec = UserSpec(goals=["get help"], max_turns=2)  # type: ignore[list-item]
    model = ScriptedUserModel(["one", "two", "three"])
    task = support_task().model_copy(update={"user": spec})
    user = SimulatedUser(spec, Recorder(SimClock()), UserPlayer(model).responder(task, 0, ()))
    replies = [user.reply(f"question {i}?") for i in range(4)]
    assert replies == ["one", "two", "", ""] and model.calls == 2
    ended = [e.data for e in user.recorder.events if e.data.get("user_sim", {}).get("stop")]
    assert ended == [{"user_sim": {"stop": True, "stop_reason": "max_turns"}}]


def test_user_seeds_come_from_task_and_trial_only() -> None:
    assert user_seed("t", 0) == user_seed("t", 0)
    assert len({user_seed("t", 0), user_seed("t", 1), user_seed("u", 0)}) == 3


def conv(spec: UserSpec, agent: tuple[str, ...] = (), user: tuple[str, ...] = ()) -> Conversation:
    return Conversation(spec, "Cancel order A-100.", "", ("orders.cancel",), agent, user)


SPEC = UserSpec(
    goals=[{"goal": "have A-100 cancelled", "done_when": "cancelled"}],  # type: ignore[list-item]
    facts=[{"name": "email", "value": "sam.k@example.com"}],  # type: ignore[list-item]
)


def draft(message: str, stop: bool = False, reason: str | None = None) -> Draft:
    return Draft(message, stop, reason, ())


def test_guards_let_a_plain_user_reply_through() -> None:
    asked = conv(SPEC, ("What is your email? Is it for order A-100?",))
    assert rejections(draft("Yes, A-100. It is sam.k@example.com."), asked) == []
    done = conv(SPEC, ("Order A-100 is cancelled.",), ("ok",))
    assert rejections(draft("Great, thanks!", True, "done"), done) == []
    assert rejections(draft("I give up.", True, "declined"), conv(SPEC)) == []


@pytest.mark.parametrize(
    ("reply", "guard"),
    [
        (draft("Order QZ-5512 please."), "invented_id"),
        (draft("My email is sam.k@example.com."), "early_disclosure"),
        (draft("Please use orders.cancel for it."), "rescue"),
        (draft("How can I help you today?"), "role_swap"),
        (draft("<think>the user wants</think> yes"), "leak"),
        (draft("Thanks, bye.", True, "done"), "early_stop"),
        (draft("bye", True, "max_turns"), "early_stop"),
        (draft(""), "empty"),
        (draft("<your next message>"), "leak"),  # the answer format's example, copied
        (draft("Your next message"), "leak"),
    ],
)
def test_each_guard_rejects_its_failure(reply: Draft, guard: str) -> None:
    found = rejections(reply, conv(SPEC, ("Can you tell me more?",), ("Hi.",)))
    assert any(line.startswith(guard) for line in found), found


def test_a_helpful_user_may_correct_the_agent() -> None:
    helpful = SPEC.model_copy(update={"helpful": True})
    assert rejections(draft("You should look it up first."), conv(helpful)) == []


def test_parse_reply_refuses_what_is_not_the_json() -> None:
    assert parse_reply('{"message": "hi", "stop": false}').message == "hi"
    for bad in ("hi", "[1]", '{"message": 3}', '{"message": "x", "stop": "no"}'):
        with pytest.raises(ValueError):
            parse_reply(bad)


def test_chat_user_model_sends_the_seed_and_asks_for_json() -> None:
    answer = json.dumps({"message": "It is sam.k@example.com.", "stop": False})
    with ScriptedChatServer([completion(answer)]) as server:
        model = ChatUserModel("user-llm", base_url=server.url)
        assert model.complete([{"role": "system", "content": "x"}], seed=42).text == answer
    (request,) = server.requests
    assert request["seed"] == 42 and request["response_format"] == {"type": "json_object"}


def test_chat_user_model_can_ask_for_the_replys_schema() -> None:
    answer = json.dumps({"message": "ok", "stop": False, "stop_reason": None, "disclosed": []})
    with ScriptedChatServer([completion(answer)]) as server:
        model = ChatUserModel("user-llm", base_url=server.url, response_format="json_schema")
        model.complete([{"role": "system", "content": "x"}], seed=1)
    (request,) = server.requests
    schema = request["response_format"]["json_schema"]["schema"]
    assert request["response_format"]["type"] == "json_schema"
    assert set(schema["required"]) == {"message", "stop", "stop_reason", "disclosed"}
    assert schema["properties"]["disclosed"]["maxItems"] > 0


def test_a_rejected_reply_is_answered_in_a_user_turn_so_turns_alternate() -> None:
    """Chat templates that need turns to alternate (Gemma's) refuse a system message in
    the middle: the harness's retry goes as a user turn that says who speaks."""
    task = support_task()
    seen: list[list[dict[str, str]]] = []

    class Recording(ScriptedUserModel):
        def complete(self, messages: list[dict[str, str]], seed: int) -> str:
            seen.append(messages)
            return super().complete(messages, seed)

    player = UserPlayer(Recording(["It is sam.k@example.com."], fail="swaps_roles"))
    responder = player.responder(task, 0, ("orders.get", "orders.cancel"))
    assert responder is not None
    user = SimulatedUser(task.user, Recorder(SimClock()), responder)
    assert user.reply("What is the email address on your account?") == "It is sam.k@example.com."
    roles = [m["role"] for m in seen[-1]]
    assert roles == ["system", "user", "assistant", "user"]
    assert seen[-1][-1]["content"].startswith("(Not the assistant: the harness.")
    assert "role_swap" in seen[-1][-1]["content"]


def test_a_bad_scenario_names_file_line_and_field(tmp_path: Path) -> None:
    suite = tmp_path / "support"
    shutil.copytree(SUPPORT, suite)
    (suite / "tasks" / "bad.yaml").write_text(
        "id: bad\ndomain: support\nprompt: Cancel A-100.\nuser:\n  goals: [cancel A-100]\n"
        "  facts:\n    - {name: email, value: a@b.c, disclose: later}\n"
    )
    done = proctor("validate", str(suite))
    assert done.returncode == 2
    assert "bad.yaml:7: user.facts[0].disclose" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_bad_user_model_reference_is_one_line(tmp_path: Path) -> None:
    done, _ = run(tmp_path, "nothing_here")
    assert done.returncode == 2 and "--user-model" in done.stderr
    done, _ = run(tmp_path, "good", "--isolation", "process")
    assert done.returncode == 2 and "thread isolation only" in done.stderr


def test_regrade_keeps_sim_error(injected: dict[str, tuple[Any, dict, Path]]) -> None:
    _, summary, where = injected["always"]
    out = where / "regraded.json"
    done = proctor(
        "regrade", summary["run_id"], "--store", str(where / "p.db"), "--json", str(out), "-q"
    )
    assert "Traceback" not in done.stderr, done.stderr
    again = json.loads(out.read_text())
    assert again["statuses"]["sim_error"] == len(FAILURES) and again["statuses"]["passed"] == 0


def test_a_chat_user_model_plays_through_the_cli_and_replays_from_the_cache(
    tmp_path: Path,
) -> None:
    answers = [
        {"message": "It is sam.k@example.com.", "stop": False, "disclosed": ["email"]},
        {"message": "No, thanks.", "stop": True, "stop_reason": "done"},
    ]
    with ScriptedChatServer([completion(json.dumps(a)) for a in answers]) as server:
        ref = f"chat:user-llm?base_url={server.url}"
        done = proctor(*cli_run(tmp_path, ref))
        assert done.returncode == 0, done.stderr
    assert [r["seed"] for r in server.requests] == [user_seed(TASK, 0)] * 2
    first = server.requests[0]["messages"]
    assert first[0]["role"] == "system" and "desk lamp" in first[0]["content"]
    assert first[1:] == [{"role": "user", "content": "What is the email address on your account?"}]
    # the same endpoint (the fingerprint holds its host), now closed: only the cache answers
    again = proctor(*cli_run(tmp_path, ref, "--user-cache", "require"))
    assert again.returncode == 0, again.stderr


def cli_run(tmp_path: Path, ref: str, *extra: str) -> list[str]:
    return [
        "run",
        str(SUPPORT),
        "--task",
        TASK,
        "--agent",
        f"{SUPPORT}/agents.py:conversational",
        "--user-model",
        ref,
        "--store",
        str(tmp_path / "chat.db"),
        "-q",
        *extra,
    ]


ID = st.from_regex(r"[A-Z]{1,3}-[0-9]{2,5}", fullmatch=True)


@given(said=st.lists(ID, min_size=1, max_size=4), new=ID)
def test_an_identifier_is_invented_exactly_when_nobody_said_it(said: list[str], new: str) -> None:
    asked = conv(SPEC, (f"Is it about {' or '.join(said)}?",))
    repeated = rejections(draft(f"Yes, {said[-1]}."), asked)
    assert not any(w.startswith("invented_id") for w in repeated)
    fresh = rejections(draft(f"No, it is {new}."), asked)
    known = {s.casefold() for s in said} | {"a-100"}  # the opening's
    assert any(w.startswith("invented_id") for w in fresh) == (new.casefold() not in known)


@pytest.mark.parametrize(("kind", "code"), [("always", 1), ("once", 0)])
def test_a_gate_bounds_the_simulator_error_rate(
    injected: dict[str, tuple[Any, dict, Path]], kind: str, code: int
) -> None:
    _, summary, where = injected[kind]
    rules = where / "gates.yaml"
    rules.write_text("rules:\n  - sim_error_rate <= 0.1\n")
    args = ("--rules", str(rules), "--store", str(where / "p.db"), "--json")
    done = proctor("gate", summary["run_id"], *args)
    assert done.returncode == code, done.stdout + done.stderr
    assert "sim_error_rate" in done.stdout


def test_what_users_say_in_their_own_right_is_no_guard_failure() -> None:
    """Cases the tau-bench user turns showed: ordinals and times are no identifiers, a tool
    named by a plain word (`think`) is no rescue, a goal said in its own words is no leak,
    a sentence of the opening said again is no restart (the whole opening is)."""
    spec = SPEC.model_copy(update={"goals": [SubGoal(goal="move the flight to the 24th")]})
    c = Conversation(
        spec,
        "Cancel order A-100. Thanks a lot for your help.",
        RULES,
        ("think", "book_room"),
        ("Which day?",),
        ("Hi.",),
    )
    for text in ("I think the 24th at 11am, please.", "Please move the flight to the 24th."):
        assert rejections(draft(text), c) == []
    assert rejections(draft("Thanks a lot for your help, really."), c) == []
    assert any(w.startswith("restart") for w in rejections(draft(c.opening), c))
    assert any(w.startswith("rescue") for w in rejections(draft("Use book_room."), c))
    assert any(w.startswith("leak") for w in rejections(draft(RULES.split(".")[1]), c))
    for heading in HEADINGS:  # reading its prompt out, however short the quote
        assert any(w.startswith("leak") for w in rejections(draft(f"{heading} x"), c)), heading


TAU = shared_data("tau-bench") / "tau-bench_historical_trajectories_gpt-4o-airline.json"


@pytest.mark.skipif(not TAU.exists(), reason="needs ../shared/data/tau-bench")
def test_guards_on_real_simulated_user_turns_reject_few_and_catch_an_invented_email() -> None:
    """tau-bench's 200 gpt-4o airline trajectories: every user turn after the opening,
    guarded against its task's instruction (as the goal) and the agent's messages."""
    rejected: list[tuple[int, str]] = []
    turns = 0
    for trajectory in json.loads(TAU.read_text()):
        task = trajectory["info"]["task"]
        spec = UserSpec(goals=[SubGoal(goal=task["instruction"])])
        tools = tuple(
            call["function"]["name"]
            for m in trajectory["traj"]
            for call in m.get("tool_calls") or ()
        )
        said = [
            m for m in trajectory["traj"] if m["role"] in ("user", "assistant") and m["content"]
        ]
        agent: list[str] = []
        user: list[str] = []
        for m in said[1:]:
            if m["role"] == "assistant":
                agent.append(m["content"])
                continue
            stop = "###STOP###" in m["content"]  # tau-bench's end of the conversation
            text = m["content"].replace("###STOP###", "").strip()
            reply = draft(text, stop, "done" if stop else None)
            c = Conversation(spec, said[0]["content"], RULES, tools, tuple(agent), tuple(user))
            turns += 1
            rejected += [(trajectory["task_id"], w) for w in rejections(reply, c)]
            user.append(text)
    assert turns > 1000
    assert len(rejected) <= turns // 100, rejected  # at most 1% of real turns
    assert any(t == 27 and "aarav.ahmed6699" in w for t, w in rejected)  # made-up email


def test_junit_shows_sim_errors_as_errors_not_agent_failures(
    injected: dict[str, tuple[Any, dict, Path]],
) -> None:
    xml = (injected["always"][2] / "junit.xml").read_text()
    assert "<failure" not in xml and 'type="HarnessError"' in xml
    assert f"all {len(FAILURES)} trials errored" in xml


def test_a_runner_refuses_a_model_user_its_workers_could_not_rebuild() -> None:
    suite = load_suite([SUPPORT])
    with pytest.raises(ExecutorError, match="model user"):
        Runner(suite, object(), executor=ProcessExecutor(), user=UserPlayer(ScriptedUserModel()))


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """Two trials each, one store: `good`, `replayed` (the same user model, from the
    cache) and `fails_first` (another user model, one sim_error)."""
    where = tmp_path_factory.mktemp("three")
    ids = {}
    for user in ("good", "replayed", "fails_first"):
        done, summary = run(where, user, "--trials", "2")
        assert summary, done.stdout + done.stderr
        ids[user] = summary["run_id"]
    return where, ids


def gate_json(where: Path, base: str, cand: str, gates: str) -> tuple[int, dict[str, Any]]:
    rules = where / "gates.yaml"
    rules.write_text(gates)
    args = ("--baseline", base, "--rules", str(rules), "--store", str(where / "p.db"), "--json")
    done = proctor("gate", cand, *args)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return done.returncode, json.loads(done.stdout)


BASELINE_RULES = """rules:
  - sim_error_rate <= baseline_sim_error_rate + 0.6
  - {no_regressions: true}
"""


def test_baseline_rules_fail_when_the_user_model_differs(
    three_runs: tuple[Path, dict[str, str]],
) -> None:
    where, ids = three_runs
    code, verdict = gate_json(where, ids["good"], ids["fails_first"], BASELINE_RULES)
    assert code == 1
    rows = verdict["rules"][1:]
    assert [r["status"] for r in rows] == ["fail", "fail"]
    for row in rows:
        assert row["reason"].startswith("the user model differs from the baseline's (")
        assert "model: scripted-user -> fails-first-trial" in row["reason"]
        assert row["reason"].endswith("`allow_changed: [user_model]` compares anyway")
    assert any(w.startswith("the user model differs (") for w in verdict["warnings"])
    # The same rules between two runs of one user model read the metrics.
    code, verdict = gate_json(where, ids["good"], ids["replayed"], BASELINE_RULES)
    assert code == 0, verdict
    assert not any("user model" in w for w in verdict["warnings"])


@pytest.mark.parametrize(
    "gates",
    [
        "allow_changed: [user_model]\n" + BASELINE_RULES,
        "rules:\n"
        "  - {rule: sim_error_rate <= baseline_sim_error_rate + 0.6, allow_changed: [user_model]}\n"
        "  - {no_regressions: true, allow_changed: [user_model]}\n",
    ],
    ids=["whole-file", "per-rule"],
)
def test_allow_changed_compares_across_another_user_model(
    three_runs: tuple[Path, dict[str, str]], gates: str
) -> None:
    where, ids = three_runs
    code, verdict = gate_json(where, ids["good"], ids["fails_first"], gates)
    assert code == 0, verdict
    assert verdict["rules"][1]["value"] == 0.5  # one of two trials, baseline none
    assert any(w.startswith("the user model differs (") for w in verdict["warnings"])


def test_a_gate_compares_the_simulator_error_rate_with_the_baseline(
    three_runs: tuple[Path, dict[str, str]],
) -> None:
    where, ids = three_runs
    rule = "{rule: sim_error_rate <= baseline_sim_error_rate + 0.02, allow_changed: [user_model]}"
    code, verdict = gate_json(where, ids["good"], ids["fails_first"], f"rules:\n  - {rule}\n")
    assert code == 1
    row = verdict["rules"][1]
    assert (row["status"], row["value"], row["threshold"]) == ("fail", 0.5, "<= 0.02")
    code, verdict = gate_json(where, ids["fails_first"], ids["fails_first"], f"- {rule}\n")
    assert code == 0 and verdict["rules"][1]["value"] == 0.5  # 0.5 <= 0.5 + 0.02


def test_compare_shows_both_simulator_error_rates_and_warns_of_another_user_model(
    three_runs: tuple[Path, dict[str, str]],
) -> None:
    where, ids = three_runs
    store = ("--store", str(where / "p.db"))
    done = proctor("compare", ids["good"], ids["fails_first"], *store, "--json")
    report = json.loads(done.stdout)
    assert report["baseline"]["sim_errors"] == 0 and report["baseline"]["sim_error_rate"] == 0
    assert report["candidate"]["sim_errors"] == 1
    assert report["candidate"]["sim_error_rate"] == 0.5
    assert any(w.startswith("the user model differs (") for w in report["warnings"])
    text = proctor("compare", ids["good"], ids["fails_first"], *store).stdout
    assert "simulated-user errors (sim_error_rate): baseline 0 (0.0%), candidate 1 (50.0%)" in (
        " ".join(text.split())
    )
    same = proctor("compare", ids["good"], ids["replayed"], *store, "--json")
    assert not any("user model" in w for w in json.loads(same.stdout)["warnings"])


@pytest.mark.parametrize(
    ("gates", "where"),
    [
        ("allow_changed: [graders]\nrules: [{no_regressions: true}]\n", ":1: allow_changed: a"),
        (
            "- {rule: sim_error_rate <= 0.1, allow_changed: [user_model]}\n",
            "allow_changed: only a rule that reads the baseline",
        ),
    ],
)
def test_allow_changed_names_an_instrument_on_a_baseline_rule(
    tmp_path: Path, gates: str, where: str
) -> None:
    rules = tmp_path / "gates.yaml"
    rules.write_text(gates)
    done = proctor("gate", "any", "--rules", str(rules), "--store", str(tmp_path / "p.db"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert str(rules) in done.stderr and where in done.stderr, done.stderr


def chat_answers() -> list[dict[str, Any]]:
    answers = [
        {"message": "It is sam.k@example.com.", "stop": False, "disclosed": ["email"]},
        {"message": "No, thanks.", "stop": True, "stop_reason": "done"},
    ]
    return [completion(json.dumps(a), prompt_tokens=300, completion_tokens=40) for a in answers]


@pytest.mark.parametrize("model", ["user-llm", "gpt-4o-mini"])
def test_the_user_models_tokens_and_cost_are_recorded_apart_from_the_agents(
    tmp_path: Path, model: str
) -> None:
    """Per trial (metrics, from the trace's notes) and in the summary, like judge cost; a
    model the price table does not know is "not measured", never $0; replayed replies
    spend nothing."""
    out = tmp_path / "s.json"
    with ScriptedChatServer(chat_answers()) as server:
        ref = f"chat:{model}?base_url={server.url}"
        done = proctor(*cli_run(tmp_path, ref, "--json", str(out)))
    assert done.returncode == 0, done.stderr
    summary = json.loads(out.read_text())
    spent = summary["user_model"]
    assert spent["calls"] == 2 and spent["cache_hits"] == 0
    assert (spent["input_tokens"], spent["output_tokens"]) == (600, 80)
    priced = PriceTable().cost(model, 600, 80)
    assert (priced is None) == (model == "user-llm")
    assert spent["cost_usd"] == (None if priced is None else pytest.approx(priced))
    with Store(tmp_path / "chat.db") as db:
        (result,) = db.trial_results(summary["run_id"])
    assert result.metrics["user_calls"] == 2 and result.metrics["user_input_tokens"] == 600
    assert ("user_cost_usd" in result.metrics) == (priced is not None)
    shown = "cost not measured" if priced is None else "$"
    shown_run = proctor("show", "latest", "--store", str(tmp_path / "chat.db"))
    line = next(x for x in shown_run.stdout.splitlines() if "simulated user spent" in x)
    assert "2 calls (0 replayed), 680 tokens" in line and shown in line
    again = proctor(*cli_run(tmp_path, ref, "--user-cache", "require", "--json", str(out)))
    assert again.returncode == 0, again.stderr
    replayed = json.loads(out.read_text())["user_model"]
    assert replayed == {
        "calls": 0,
        "cache_hits": 2,
        "input_tokens": 0,
        "output_tokens": 0,
        "cost_usd": 0.0,
        "fidelity_judged": 0,
        "fidelity_failed": 0,
    }


def test_a_user_model_without_usage_is_not_measured() -> None:
    """A Python user model that answers bare strings: calls counted, tokens and cost not."""
    task = support_task()
    player = UserPlayer(ScriptedUserModel(["It is sam.k@example.com."]))
    user = player.responder(task, 0, ())
    assert user is not None
    recorder = Recorder(SimClock())
    user.answer("What is the email address on your account?", recorder)
    assert user_spending(recorder.events) == {"user_calls": 1.0, "user_cache_hits": 0.0}
    assert user_spending([]) == {}


def test_the_user_models_time_is_not_the_agents(tmp_path: Path) -> None:
    """The agent thinks 1 s, the user takes 0.8 s a reply (two replies), `--timeout 2`:
    2.6 s of wall time, 1 s of the agent's, so the trial passes; the user's time is out
    of the agent's latency too. A user past its own bound (the same 2 s) is the user's
    fault: `sim_error`, not the agent's `timeout`."""
    agent = ["--agent", f"{USERS}:pausing", "--timeout", "2"]
    done, summary = run(tmp_path, "slow", *agent)
    assert done.returncode == 0, done.stderr
    assert summary["statuses"]["passed"] == 1, summary["statuses"]
    done, summary = run(tmp_path, "stalled", "--timeout", "2", store="stalled.db")
    assert summary["statuses"]["sim_error"] == 1, summary["statuses"]
    with Store(tmp_path / "stalled.db") as db:
        (result,) = db.trial_results(summary["run_id"])
    assert "took longer than its 2.0 s bound" in (result.error or "")


def test_many_async_trials_asking_at_once_are_not_charged_for_each_others_questions(
    tmp_path: Path,
) -> None:
    """More async trials ask their model user at once than a default thread pool has
    threads: each question is answered as soon as it is asked, so a user model that needs
    all of them in flight answers them all, and no trial's agent is charged for another
    trial's question (queued, it would be a `timeout`, or a `sim_error` had the user's
    clock started at the ask)."""
    lanes = sim_users.GATHERED  # each lane's trial and the one handed to it ahead
    trials = ["-k", str(2 * lanes), "-j", str(lanes), "--timeout", "3"]
    done, summary = run(tmp_path, "gathering", *trials)
    statuses = {status: n for status, n in summary["statuses"].items() if n}
    assert statuses == {"passed": 2 * lanes}, statuses
    assert done.returncode == 0, done.stderr


def test_an_async_agents_questions_asked_at_once_take_turns_on_one_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An async agent asking its model user many questions at once (a slow one: each
    question holds the world's lock while the model answers) gets each answered in turn,
    the conversation alternating, and holds one thread for them, not one a question."""
    member = next(m for m in load_suite([SUPPORT]).tasks if m.id == TASK)
    asked = [f"({i}) What is the email address on your account?" for i in range(20)]
    slow = sim_users.Slow(0.05, sim_users.SCRIPT * len(asked))
    user = UserPlayer(slow).responder(member.task, 0, ())
    env = Environment.fresh(member.task, member.domain, 0, (), user)
    toolbox = Toolbox(env)
    # a pool of its own: no thread an earlier test left idle can take a question
    pool = DaemonThreads("proctor-user-under-test")
    monkeypatch.setattr(toolbox_module, "_ASKING", pool)

    async def ask_all() -> list[str]:
        return await asyncio.gather(*(toolbox.ask_user(q) for q in asked))

    answers = asyncio.run(ask_all())
    started = [t for t in threading.enumerate() if t.name == pool.name]
    assert len(started) == 1  # one thread, the questions taking turns on it
    said = [(e.data["role"], e.data["content"]) for e in env.recorder.events if e.kind == "message"]
    assert [role for role, _ in said] == ["assistant", "user"] * len(asked)
    assert sorted(q for role, q in said if role == "assistant") == sorted(asked)
    assert [a for role, a in said if role == "user"] == answers


def test_a_run_of_only_sim_errors_is_not_completed(
    injected: dict[str, tuple[Any, dict, Path]],
) -> None:
    """No trial left to score: invalid (its exit code), as a run of harness errors is."""
    done, summary, _ = injected["always"]
    assert summary["status"] == "invalid" and not summary["valid"]
    assert summary["invalid_reasons"] == [
        f"no valid trials: {len(FAILURES)} sim_error (the simulated user broke)"
    ]
    assert done.returncode == EXIT_INVALID
    assert "RUN INVALID: no valid trials" in done.stdout


def test_an_exported_runs_users_replay_byte_for_byte_then_another_model_takes_over(
    tmp_path: Path,
) -> None:
    """`--user-replay EXPORT`: in a new store (no cache to answer), with a user model that
    may not be called, the recorded users say every turn while the agent says the same:
    the conversation is byte-identical. An agent that words its second question
    differently gets the recorded first answer, then the other user model's."""
    done, first = run(tmp_path, "good")
    exported = tmp_path / "run.jsonl"
    done = proctor(
        "export", first["run_id"], "--store", str(tmp_path / "p.db"), "--out", str(exported)
    )
    assert done.returncode == 0, done.stderr
    replay = ("--user-replay", str(exported))
    done, again = run(tmp_path, "replayed", *replay, store="fresh.db")
    assert done.returncode == 0, done.stderr
    a, b = trace_of(tmp_path, first), trace_of(tmp_path, again, store="fresh.db")
    messages = [e.data for e in a.of_kind("message")], [e.data for e in b.of_kind("message")]
    assert json.dumps(messages[0]) == json.dumps(messages[1])
    assert [n.get("replayed") for n in notes(b, "user_sim")] == [True, True]
    assert again["manifest"]["user_model"]["replay"]["run_id"] == first["run_id"]
    agent = ("--agent", f"{USERS}:rephrasing")
    done, mixed = run(tmp_path, "other", *replay, *agent, store="mixed.db")
    assert done.returncode == 0, done.stderr
    trace = trace_of(tmp_path, mixed, store="mixed.db")
    assert said_by_user(trace)[1:] == ["It is sam.k@example.com.", "No, that's it. Bye."]
    assert notes(trace, "user_replay") == [{"diverged_at_turn": 1}]
    assert [n.get("replayed", False) for n in notes(trace, "user_sim")] == [True, False]


def test_user_replay_refuses_a_file_without_recorded_users(tmp_path: Path) -> None:
    plain = tmp_path / "plain.jsonl"
    scripted = proctor(
        "run",
        str(SUPPORT),
        "--agent",
        f"{SUPPORT}/agents.py:scripted",
        "--store",
        str(tmp_path / "s.db"),
        "-q",
    )
    assert scripted.returncode == 0, scripted.stderr
    proctor("export", "latest", "--store", str(tmp_path / "s.db"), "--out", str(plain))
    done, _ = run(tmp_path, "good", "--user-replay", str(plain))
    assert done.returncode == 2
    assert "--user-replay" in done.stderr and "no trial has recorded user turns" in done.stderr


def test_health_runs_the_reference_with_the_simulator_and_its_noise_with_a_second(
    tmp_path: Path,
) -> None:
    """The reference with the user model as a control; the same agent with a second user
    model on the sampled scenario tasks: both pass rates, their paired difference and its
    interval, in the JSON and the terminal."""
    out = tmp_path / "health.json"
    done = proctor(
        "health",
        str(SUPPORT),
        "--reference",
        f"{SUPPORT}/agents.py:conversational",
        "--user-model",
        f"{USERS}:good",
        "--second-user-model",
        f"{USERS}:fails_first",
        "--trials",
        "2",
        "--no-save",
        "--store",
        str(tmp_path / "h.db"),
        "--json",
        str(out),
        "--kinds",
        "drop_required_call",
    )
    assert "Traceback" not in done.stderr, done.stderr
    simulator = json.loads(out.read_text())["simulator"]
    assert simulator["tasks"] == simulator["sample"] == [TASK]
    assert simulator["control"] == {
        "user_model": "scripted-user",
        "trials": 2,
        "success_rate": 1.0,
        "sim_errors": 0,
        "sim_error_rate": 0.0,
    }
    first, second = simulator["pair"]
    assert first["success_rate"] == second["success_rate"] == 1.0
    assert second["user_model"] == "fails-first-trial" and second["sim_errors"] == 1
    # one task: no test can tell any difference, and the interval says so
    assert simulator["difference"] == {"mean": 0.0, "low": -1.0, "high": 1.0, "tasks": 1}
    assert "simulator noise floor on 1 sampled task(s)" in done.stdout
    assert "simulated user as a control (scripted-user" in done.stdout


@given(
    ids=st.lists(st.text(min_size=1, max_size=8), unique=True, max_size=30),
    share=st.floats(0, 1),
    seed=st.integers(0, 10),
)
def test_the_health_sample_is_a_seeded_share_in_suite_order(
    ids: list[str], share: float, seed: int
) -> None:
    chosen = sample_tasks(ids, share, seed)
    assert chosen == sample_tasks(ids, share, seed)
    assert chosen == [t for t in ids if t in chosen]
    assert len(chosen) == (max(1, math.ceil(share * len(ids))) if ids else 0)
    assert set(sample_tasks(ids, share, seed)) <= set(
        sample_tasks(ids, min(1.0, share + 0.2), seed)
    )

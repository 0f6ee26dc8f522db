"""Executors: local and process isolation give the same verdicts; hung workers die.

The Ray executor is tested on a real two-node cluster in tests/test_ray_cluster.py.
"""

from __future__ import annotations

import asyncio
import importlib.util
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cancelled_at
from proctor import AgentInput, Runner, Store, Task, Toolbox, load_suite
from proctor.core.daemon_threads import DaemonThreads
from proctor.env.suite import Suite
from proctor.run import lanes
from proctor.run.executor import LocalExecutor, RunContext, drive_lanes
from proctor.run.lanes import LocalLane, _Slot
from proctor.run.process import ProcessExecutor
from proctor.run.worker_source import ExecutorError

FIXTURES = Path(__file__).parent / "fixtures"
MINI = FIXTURES / "mini"
AGENTS = FIXTURES / "exec_agents.py"
SUITE = load_suite(MINI)


def agent_ref(name: str) -> str:
    return f"{AGENTS}:{name}"


def load(name: str) -> Any:
    from proctor import load_agent

    return load_agent(agent_ref(name))


def verdicts(report: Any) -> dict[tuple[str, int], tuple[Any, ...]]:
    """What must not depend on the executor: status, seed, and every check's verdict."""
    return {
        (r.task_id, r.trial): (r.status, r.seed, [(c.name, c.passed) for c in r.checks])
        for r in report.results
    }


def run_with(executor: Any, tmp_path: Path, name: str = "flaky", **kwargs: Any) -> Any:
    kwargs.setdefault("trials", 6)
    kwargs.setdefault("seed", 4)
    kwargs.setdefault("timeout_s", 30.0)
    store = Store(tmp_path / f"{executor.name}.db")
    runner = Runner(
        SUITE, load(name), store=store, agent_ref=agent_ref(name), executor=executor, **kwargs
    )
    return runner.run(), store


@pytest.fixture(scope="module")
def local_verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[Any, Any]:
    report, _ = run_with(LocalExecutor(), tmp_path_factory.mktemp("local"), concurrency=3)
    found = verdicts(report)
    statuses = {status for status, _, _ in found.values()}
    assert statuses == {"passed", "failed"}  # the comparison below means something
    return found


# -- the core never imports Ray ------------------------------------------------------------


def test_the_core_does_not_import_ray() -> None:
    code = (
        "import sys, proctor, proctor.run, proctor.cli, proctor.run.process;"
        "from proctor.cli import main;"
        "assert 'ray' not in sys.modules, 'ray was imported'"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# -- same verdicts everywhere --------------------------------------------------------------


def test_process_isolation_gives_the_local_verdicts(
    tmp_path: Path, local_verdicts: dict[Any, Any]
) -> None:
    report, store = run_with(ProcessExecutor(), tmp_path, concurrency=2)
    assert verdicts(report) == local_verdicts
    assert report.summary.status == "completed"
    assert store.run(report.run_id)["manifest"]["executor"] == "process"
    # The trace came back from the worker and was stored by the parent.
    trace, answer, outcome = store.trace(report.run_id, "read-item", 0)
    assert trace.events[-1].data == {"text": answer} and outcome is not None


def test_without_ray_the_ray_executor_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from proctor.cli import main

    found = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "ray" else found(name, *a)
    )
    store = tmp_path / "p.db"
    args = [str(MINI), "--agent", agent_ref("flaky"), "--executor", "ray", "--store", str(store)]
    done = CliRunner().invoke(main, ["run", *args])
    assert done.exit_code == 2, done.output
    assert done.output.strip() == "the ray executor needs Ray: pip install 'proctor[ray]'"
    assert Store(store).runs() == []  # refused before a run was created


@pytest.mark.parametrize(
    ("message", "why"),
    [
        ("Could not find any running Ray instance.\nPlease start one.", "Could not find any"),
        (  # a Ray Client server's refusal: a heading, then the server's traceback
            "Initialization failure from server:\nTraceback (most recent call last):\n"
            '  File "proxier.py", line 770\nRuntimeError: Starting Ray client server failed.\n',
            "Initialization failure from server: RuntimeError: Starting Ray client server",
        ),
    ],
)
def test_a_failed_ray_connection_says_why_in_one_line(message: str, why: str) -> None:
    from proctor.run.ray_executor import connect

    class Refusing:
        def init(self, **options: Any) -> None:
            raise ConnectionError(message)

    with pytest.raises(ExecutorError) as refused:
        connect(Refusing(), "ray://head:10001", None, {})
    text = str(refused.value)
    assert text.startswith(f"ray: cannot connect to ray://head:10001: {why}")
    assert "\n" not in text and "Traceback" not in text


class Flaky:
    """A Ray whose client server fails to start the session's server `failures` times."""

    def __init__(self, failures: int, then: str = "") -> None:
        self.failures, self.then, self.calls, self.shutdowns = failures, then, 0, 0

    def init(self, **options: Any) -> None:
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionError(
                "Initialization failure from server:\nTraceback (most recent call last):\n"
                "psutil.ZombieProcess: PID still exists but it's a zombie (pid=25438)\n"
            )
        if self.then:
            raise ConnectionError(self.then)

    def shutdown(self) -> None:
        self.shutdowns += 1


def test_a_session_server_that_dies_at_start_is_tried_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ray-project/ray#63202: the head's client server loses the session's server now and
    then; a `ray://` connection tries again, other failures and addresses do not."""
    from proctor.run import ray_executor
    from proctor.run.ray_executor import CONNECT_TRIES, connect

    monkeypatch.setattr(ray_executor.time, "sleep", lambda s: None)
    ray = Flaky(CONNECT_TRIES - 1)
    connect(ray, "ray://head:10001", None, {})
    assert ray.calls == CONNECT_TRIES and ray.shutdowns == CONNECT_TRIES - 1
    ray = Flaky(CONNECT_TRIES)
    with pytest.raises(ExecutorError) as lost:
        connect(ray, "ray://head:10001", None, {})
    assert str(lost.value).endswith(f"zombie (pid=25438) ({CONNECT_TRIES} tries)")
    ray = Flaky(1, then="Version mismatch: the cluster runs Python 3.12")
    with pytest.raises(ExecutorError) as refused:
        connect(ray, "ray://head:10001", None, {})
    assert ray.calls == 2 and str(refused.value).endswith("Python 3.12 (2 tries)")
    ray = Flaky(1)  # a GCS address: no client server, nothing to try again
    with pytest.raises(ExecutorError):
        connect(ray, "head:6379", None, {})
    assert ray.calls == 1


# -- hung agents under process isolation ---------------------------------------------------


def pids(store: Store, run_id: str, task_id: str, trial: int) -> list[str]:
    trace, _, _ = store.trace(run_id, task_id, trial)
    return [e.data["text"] for e in trace.events if e.kind == "note"]


@pytest.mark.parametrize(
    "name",
    [
        "Wedges",  # blocks its event loop: the worker times it out with its partial trace
        "Spins",  # a sync agent spinning in a thread: the worker reports the timeout
    ],
)
def test_a_hung_agent_is_killed_and_its_worker_replaced(tmp_path: Path, name: str) -> None:
    suite = SUITE.select(ids=["read-item"])
    store = Store(tmp_path / "p.db")
    runner = Runner(
        suite,
        load(name),
        trials=3,
        concurrency=1,  # one lane, one worker at a time
        timeout_s=0.5,
        store=store,
        agent_ref=agent_ref(name),
        executor=ProcessExecutor(grace_s=0.5),
    )
    report = runner.run()
    by_trial = {r.trial: r for r in report.results}
    assert {t: r.status for t, r in by_trial.items()} == {0: "passed", 1: "timeout", 2: "passed"}
    assert "0.5 s" in (by_trial[1].error or "")
    assert report.summary.status == "completed"  # a timeout is the agent's failure
    first, stuck, last = (pids(store, report.run_id, "read-item", t) for t in range(3))
    assert first and last and first != last  # the hung worker was replaced
    # what the agent did before it hung is kept and graded, as in-process
    assert stuck == first


def test_process_isolation_needs_files_and_an_agent_reference() -> None:
    from proctor.env.domain_finder import load_module_from_path

    task = Task.model_validate({"id": "t", "domain": "mini", "prompt": "hi"})
    domain = load_module_from_path(MINI / "domain.py").domain  # type: ignore[attr-defined]
    in_memory = Suite.from_tasks("mem", [task], [domain])
    with pytest.raises(ExecutorError, match="not loaded from files"):
        Runner(in_memory, load("flaky"), agent_ref="x.py:a", executor=ProcessExecutor())
    with pytest.raises(ExecutorError, match="agent as a reference"):
        Runner(SUITE, load("flaky"), executor=ProcessExecutor())


# -- the local executor: lazy specs, bounded lanes, pooled threads -------------------------


class Counting:
    """Records how many trials run at once."""

    def __init__(self) -> None:
        self.running = 0
        self.most = 0

    async def run(self, input: AgentInput, toolbox: Toolbox) -> str:
        self.running += 1
        self.most = max(self.most, self.running)
        await asyncio.sleep(0.001)
        self.running -= 1
        return "done"


class Drawn:
    """A runner's trial specs, drawn lazily, counting how many were drawn so far."""

    def __init__(self, runner: Runner) -> None:
        self.runner, self.count = runner, 0

    def __iter__(self) -> Iterator[Any]:
        for spec in self.runner.specs():
            self.count += 1
            yield spec


def test_specs_are_drawn_lazily_and_lanes_are_bounded() -> None:
    agent = Counting()
    drawn = Drawn(Runner(SUITE.select(ids=["read-item"]), agent, trials=200, concurrency=4))

    async def consume() -> tuple[int, int]:
        ctx = RunContext(agent, 5.0, 4)
        seen: list[int] = []  # how many specs were drawn when each record came

        async def put(_: Any) -> None:
            seen.append(drawn.count)

        await drive_lanes(LocalExecutor(), ctx, iter(drawn), put)
        return seen[0], len(seen)

    at_first, seen = asyncio.run(consume())
    assert seen == drawn.count == 200
    # each lane's trial and the one handed ahead (no queue of records): not the 200 trials
    assert at_first <= 2 * 4 + 1
    assert agent.most == 4


def test_agent_threads_are_reused_and_a_stuck_one_is_replaced() -> None:
    pool = DaemonThreads("test")
    used: list[threading.Thread] = []
    release = threading.Event()

    def job(stick: bool = False) -> None:
        used.append(threading.current_thread())
        if stick:
            release.wait(30)

    def until_idle() -> None:  # a thread counts itself idle just after its job returns
        for _ in range(500):
            if pool._idle:
                return
            threading.Event().wait(0.01)

    for _ in range(10):
        pool.submit(job)
        until_idle()
    assert len(used) == 10 and len(set(used)) == 1  # one thread served ten trials
    pool.submit(lambda: job(stick=True))
    later = threading.Event()
    pool.submit(lambda: (job(), later.set()))
    assert later.wait(5)  # not queued behind the stuck job
    assert len(set(used)) == 2 and all(t.daemon for t in used)
    release.set()


def test_worker_agent_references_are_absolute_except_chat_models(tmp_path: Path) -> None:
    from proctor.run.worker_source import _absolute_ref

    assert _absolute_ref("chat:openai/gpt-4o:free?temperature=0") == (
        "chat:openai/gpt-4o:free?temperature=0"
    )
    assert _absolute_ref("examples/support/agents.py:scripted") == (
        f"{Path('examples/support/agents.py').resolve()}:scripted"
    )
    assert _absolute_ref("mypkg.agents:build") == "mypkg.agents:build"


# -- local lanes: a stuck agent's thread or loop is left behind, its lane goes on ----------


RELEASE = threading.Event()


class StuckOnce:
    """Trial 1 never returns on its own: a sync agent blocks its thread, an async one its
    whole loop. Each trial notes the thread it ran on."""

    def __init__(self, is_async: bool, stuck: tuple[int, ...] = (1,)) -> None:
        self.is_async = is_async
        self.stuck = stuck
        self.name = "stuck-once"

    def play(self, input: AgentInput, toolbox: Any) -> str:
        toolbox.note(f"thread {threading.get_ident()}")
        if input.trial in self.stuck:
            RELEASE.wait(30)  # blocks: no await, so an async agent blocks its loop too
        return "done"

    @property
    def run(self) -> Any:
        if not self.is_async:
            return self.play

        async def run(input: AgentInput, toolbox: Toolbox) -> str:
            return self.play(input, toolbox)

        return run


def threads_of(store: Store, run_id: str, trial: int) -> list[str]:
    trace, _, _ = store.trace(run_id, "read-item", trial)
    return [e.data["text"] for e in trace.events if e.kind == "note"]


@pytest.mark.parametrize("is_async", [False, True])
def test_a_stuck_agent_is_left_behind_and_the_trial_handed_ahead_runs_elsewhere(
    tmp_path: Path, is_async: bool
) -> None:
    """The lane had handed trial 2 to the stuck agent's side already: the harness takes it
    back and plays it on a fresh thread or loop, and trial 1 is a timeout."""
    store = Store(tmp_path / "p.db")
    RELEASE.clear()
    try:
        runner = Runner(
            SUITE.select(ids=["read-item"]),
            StuckOnce(is_async),
            trials=3,
            concurrency=1,
            timeout_s=0.3,
            store=store,
        )
        report = runner.run()
    finally:
        RELEASE.set()
    statuses = {r.trial: r.status for r in report.results}
    assert statuses[1] == "timeout" and statuses[0] == statuses[2] != "timeout"
    first, stuck, last = (threads_of(store, report.run_id, t) for t in range(3))
    assert first == stuck  # trial 1 started where trial 0 ran...
    assert last and last != first  # ...and trial 2 ran on another thread


@pytest.mark.parametrize("is_async", [False, True])
def test_a_lane_whose_every_agent_sticks_still_ends(tmp_path: Path, is_async: bool) -> None:
    """Each trial's agent sticks: every one is a timeout, and the trials handed ahead to
    a stuck side run, in order, on the next one (not behind a later trial that sticks)."""
    RELEASE.clear()
    try:
        runner = Runner(
            SUITE.select(ids=["read-item"]),
            StuckOnce(is_async, stuck=(0, 1, 2, 3)),
            trials=4,
            concurrency=1,
            timeout_s=0.2,
        )
        report = runner.run()
    finally:
        RELEASE.set()
    assert [r.status for r in sorted(report.results, key=lambda r: r.trial)] == ["timeout"] * 4


class Gathering:
    """A sync agent whose trial meets the others: it waits up to `patience` seconds for
    `size` trials to run at once, and notes whether they did."""

    def __init__(self, size: int, patience: float = 3.0) -> None:
        self.barrier = threading.Barrier(size, timeout=patience)
        self.met: list[bool] = []

    def run(self, input: AgentInput, toolbox: Toolbox) -> str:
        try:
            self.barrier.wait()
            self.met.append(True)
        except threading.BrokenBarrierError:
            self.met.append(False)
        return "done"


class AsyncGathering(Gathering):
    async def run(self, input: AgentInput, toolbox: Toolbox) -> str:  # type: ignore[override]
        return await asyncio.to_thread(super().run, input, toolbox)


@pytest.mark.parametrize("kind", [Gathering, AsyncGathering])
def test_as_many_trials_as_lanes_all_run_at_once(kind: type[Gathering]) -> None:
    """Every lane draws a trial before any draws a second to hand ahead: with as many
    trials as lanes, all of them play together (half of them did: the first lanes had
    taken two each)."""
    count = 5  # an async agent's waits take threads of its loop's pool: at least 6
    agent = kind(count)
    runner = Runner(
        SUITE.select(ids=["read-item"]), agent, trials=count, concurrency=count, timeout_s=30
    )
    runner.run()
    assert agent.met == [True] * count


class QuickThenSlow:
    """Trial 0 ends at once, the others take 0.2 s; each slow one notes, as it ends, how
    many trials the run had drawn."""

    def __init__(self) -> None:
        self.drawn = 0
        self.at_end: dict[int, int] = {}

    async def run(self, input: AgentInput, toolbox: Toolbox) -> str:
        if input.trial:
            await asyncio.sleep(0.2)
            self.at_end[input.trial] = self.drawn
        return "done"


def test_a_lane_stops_handing_ahead_once_its_trials_are_slow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After a quick trial the lane hands the next ahead; once one is slow it takes back
    what it handed before drawing again, so no trial waits behind a slow one while
    another lane could play it."""
    monkeypatch.setattr(lanes, "HAND_AHEAD_BELOW_S", 0.1)  # far from both kinds of trial
    agent = QuickThenSlow()
    runner = Runner(SUITE.select(ids=["read-item"]), agent, trials=5, concurrency=1)

    def counted() -> Iterator[Any]:
        for spec in runner.specs():
            agent.drawn += 1
            yield spec

    async def consume() -> None:
        async def put(_: Any) -> None:
            pass

        await drive_lanes(LocalExecutor(), RunContext(agent, 5.0, 1), counted(), put)

    asyncio.run(consume())
    # trial 2 was handed while trial 1 (the first slow one) ran; nothing after it was
    assert agent.at_end == {1: 3, 2: 3, 3: 4, 4: 5}


def test_quick_trials_are_handed_several_ahead_up_to_the_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While its trials are quick a lane hands more of them ahead after each one (one,
    then two, four...), so that the agent's side plays a run of them without waiting for
    the harness; never more than HAND_AHEAD_MAX, and none before the first trial. Once
    that many are handed, it takes records back until a quarter (at least one) is left,
    then hands the next run at once: one wake-up of the agent's side a run, not a trial."""
    monkeypatch.setattr(lanes, "HAND_AHEAD_BELOW_S", 1.0)  # every trial here is quick
    monkeypatch.setattr(lanes, "HAND_AHEAD_MAX", 4)
    agent = load("flaky")
    drawn = Drawn(Runner(SUITE.select(ids=["read-item"]), agent, trials=12, concurrency=1))

    async def consume() -> list[int]:
        handed: list[int] = []  # as each record is taken: trials handed and not taken

        async def put(_: Any) -> None:
            handed.append(drawn.count - len(handed) - 1)

        await drive_lanes(LocalExecutor(), RunContext(agent, 5.0, 1), iter(drawn), put)
        return handed

    assert asyncio.run(consume()) == [0, 1, 2, 1, 4, 3, 2, 1, 3, 2, 1, 0]


def test_a_lane_that_finds_its_records_ready_still_lets_a_cancel_land(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With quick trials handed ahead the harness finds their records ready and never
    waits; it still lets its loop turn (here after every record), so a run cancelled as a
    record is stored (Ctrl-C) stops there: no trial after it is stored."""
    monkeypatch.setattr(lanes, "HAND_AHEAD_BELOW_S", 1.0)  # every trial here is quick
    monkeypatch.setattr(lanes, "HOLD_LOOP_S", 0.0)
    store = Store(tmp_path / "cancel.db")
    runner = Runner(
        SUITE.select(ids=["read-item"]), load("flaky"), trials=30, concurrency=1, store=store
    )

    run_cancelled_at(runner, 5)
    assert store.run(runner.run_id)["status"] == "interrupted"
    assert len(store.trial_keys(runner.run_id)) == 5


@pytest.mark.parametrize(
    ("depth", "took", "after"),
    [
        (0, None, 0),  # the harness ended it
        (8, 0.01, 0),  # as slow as the bound: take back before drawing again
        (0, 0.009, 1),  # quick, but only one fits in the bound
        (0, 0.0001, 1),  # after a slow one, one ahead again, as a first quick trial
        (1, 0.0001, 2),
        (16, 0.0001, 32),
        (32, 0.0, 32),  # too quick to time: the cap
        (32, 0.004, 2),  # slower: as many as fit
    ],
)
def test_how_many_trials_a_lane_hands_ahead(depth: int, took: float | None, after: int) -> None:
    assert (lanes.HAND_AHEAD_BELOW_S, lanes.HAND_AHEAD_MAX) == (0.01, 32)
    assert lanes._depth(depth, took) == after


class CountingLoop:
    """Stands for the harness's loop as the agent's side sees it: counts the wake-ups."""

    def __init__(self) -> None:
        self.calls = 0

    def call_soon_threadsafe(self, fn: Any, *args: Any) -> None:
        self.calls += 1
        fn(*args)


def test_a_harness_waiting_for_quick_trials_is_woken_once_a_run() -> None:
    """A harness that finds its next record not ready waits for the one a quarter of its
    depth on: the agent's side plays in order, so the seven before it settle without a
    wake-up and the eighth wakes it once; then it reads the first."""
    played: Any = object()
    unused: Any = None

    async def main() -> None:
        loop: Any = CountingLoop()
        lane = LocalLane(lambda input, toolbox: "done", None)  # its side is never made
        slots = [_Slot(unused, unused) for _ in range(20)]
        lane.ahead.extend(slots)
        lane.depth = 32
        taking = asyncio.ensure_future(lane._played())
        await asyncio.sleep(0)
        assert [i for i, s in enumerate(slots) if s.waiter is not None] == [7]
        for slot in slots[:7]:
            slot.settle(played, loop)
        await asyncio.sleep(0)
        assert loop.calls == 0 and not taking.done()
        slots[7].settle(played, loop)
        assert await asyncio.wait_for(taking, 5) is played and loop.calls == 1

    asyncio.run(main())


def test_a_played_trial_wakes_the_harness_only_when_it_waits() -> None:
    """A record the harness finds ready costs no cross-thread call; one it waits for wakes
    it once; a harness error left in the slot is raised where the record is read."""
    played: Any = object()
    unused: Any = None  # a slot only holds its spec and side

    async def main() -> None:
        loop: Any = CountingLoop()
        ready = _Slot(unused, unused)
        ready.settle(played, loop)
        assert loop.calls == 0 and ready.result() is played
        awaited = _Slot(unused, unused)
        waiting = asyncio.ensure_future(awaited.wait(None))
        await asyncio.sleep(0)  # the harness is now waiting for it
        awaited.settle(played, loop)
        await asyncio.wait_for(waiting, 5)
        assert loop.calls == 1 and awaited.result() is played
        awaited.settle(RuntimeError("late"), loop)
        assert awaited.result() is played  # settled once
        broken = _Slot(unused, unused)
        broken.settle(RuntimeError("harness bug"), loop)
        with pytest.raises(RuntimeError, match="harness bug"):
            broken.result()

    asyncio.run(main())

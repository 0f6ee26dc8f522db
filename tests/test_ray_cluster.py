"""`--executor ray` on a real two-node Ray cluster: a head and a worker node on loopback.

Same verdicts as the local executor for the same seeds, trials on both nodes (each trace
notes its node), a `ray://` client address, suite and agent files shipped to the workers,
a worker node killed mid-run, and a killed driver resumed. Skipped, with the reason, only
where Ray cannot run (not installed, or a node will not start); CI sets
PROCTOR_REQUIRE_RAY=1 so that there it fails instead. The cluster is torn down by
session id however the tests end (tests/ray_cluster.py).
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from proctor import Runner, Store, load_agent, load_suite
from proctor.run.regrade import regrade
from ray_cluster import (
    HEAD_IP,
    REQUIRE,
    START_TIMEOUT_S,
    STARTS,
    WORKER_IP,
    ClusterError,
    RayCluster,
    session_pids,
    state,
    sweep,
    tag_of,
    unavailable,
)
from store_sql import sql

FIXTURES = Path(__file__).parent / "fixtures"
MINI = FIXTURES / "mini"
AGENTS = FIXTURES / "exec_agents.py"
PROCTOR = Path(sys.executable).parent / "proctor"
SEED = 4
RUN_TIMEOUT_S = 300
#: Every test here: its own limit (the first one's setup starts both nodes, and a test
#: waits for up to two driver runs). One module: one xdist worker (`make test`), one cluster.
pytestmark = pytest.mark.timeout(2 * START_TIMEOUT_S + 2 * RUN_TIMEOUT_S)


def give_up(why: str) -> None:
    if REQUIRE:
        pytest.fail(f"PROCTOR_REQUIRE_RAY=1 but {why}")
    pytest.skip(why)


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayCluster]:
    why = unavailable()
    if why is not None:
        give_up(why)
    made = RayCluster()
    made.env[STARTS] = str(made.root / "starts.log")
    try:
        made.start()
    except ClusterError as exc:
        give_up(f"Ray cannot start a cluster here: {exc}")
    try:
        yield made
    finally:
        made.stop()
    assert made.alive() == []


def proctor(cluster: RayCluster, *args: str, cwd: Path | None = None) -> subprocess.Popen[str]:
    """A driver: `proctor ARGS`, in the cluster's environment (its auth token)."""
    return cluster.driver([str(PROCTOR), *args], cwd=cwd)


def run_args(db: Path, address: str, agent: str, trials: int, *extra: str) -> list[str]:
    return [
        "run",
        str(MINI),
        "--agent",
        agent,
        "-k",
        str(trials),
        "-j",
        "4",
        "--seed",
        str(SEED),
        "--executor",
        "ray",
        "--address",
        address,
        "--store",
        str(db),
        "--quiet",
        *extra,
    ]


def finished(proc: subprocess.Popen[str], cluster: RayCluster) -> str:
    out, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 0, f"{out}\n{err}\n{cluster.logs()}"
    return out


def verdicts(results: Any) -> dict[tuple[str, int], tuple[Any, ...]]:
    return {
        (r.task_id, r.trial): (r.status, r.seed, [(c.name, c.passed) for c in r.checks])
        for r in results
    }


def local_verdicts(agent: str, trials: int) -> dict[tuple[str, int], tuple[Any, ...]]:
    """The same agent and seeds run by the local executor."""
    runner = Runner(load_suite(MINI), load_agent(agent), trials=trials, seed=SEED)
    return verdicts(runner.run().results)


def notes(store: Store, run_id: str, key: tuple[str, int]) -> tuple[dict[str, Any], str]:
    """The worker note of a stored trial, and the agent file its agent noted."""
    trace, _, _ = store.trace(run_id, *key)
    (worker,) = [e.data["worker"] for e in trace.events if "worker" in e.data]
    (text,) = [e.data["text"] for e in trace.events if "agent file" in e.data.get("text", "")]
    return worker, text.removeprefix("agent file ")


def stored(db: Path) -> tuple[Store, str]:
    store = Store(db)
    return store, store.run("latest")["run_id"]


@pytest.mark.parametrize("client", [False, True], ids=["address", "ray-client"])
def test_both_nodes_run_the_trials_with_the_local_verdicts(
    cluster: RayCluster, tmp_path: Path, client: bool
) -> None:
    agent = f"{AGENTS}:quick"
    address = cluster.client_address if client else cluster.address
    finished(proctor(cluster, *run_args(tmp_path / "p.db", address, agent, 6)), cluster)
    store, run_id = stored(tmp_path / "p.db")
    row = store.run(run_id)
    assert row["status"] == "completed" and row["manifest"]["executor"] == "ray"
    results = list(store.trial_results(run_id))
    assert verdicts(results) == local_verdicts(agent, 6)
    placed = {key: notes(store, run_id, key)[0] for key in verdicts(results)}
    assert {w["node_ip"] for w in placed.values()} == {HEAD_IP, WORKER_IP}
    assert len({w["node_id"] for w in placed.values()}) == 2


def test_suite_and_agent_files_are_shipped_to_the_workers(
    cluster: RayCluster, tmp_path: Path
) -> None:
    laptop = tmp_path / "laptop"  # what the driver has; the workers get a copy
    shutil.copytree(MINI, laptop / "mini")
    shutil.copy(AGENTS, laptop / "agents.py")
    db = tmp_path / "p.db"
    args = run_args(db, cluster.address, "agents.py:quick", 3, "--working-dir", ".")
    args[1] = "mini"
    finished(proctor(cluster, *args, cwd=laptop), cluster)
    store, run_id = stored(db)
    results = list(store.trial_results(run_id))
    assert verdicts(results) == local_verdicts(f"{AGENTS}:quick", 3)
    for key in verdicts(results):
        _, agent_file = notes(store, run_id, key)
        # loaded from the copy Ray unpacked on the node, never from the driver's path
        assert not agent_file.startswith(str(laptop)), agent_file
        assert agent_file.startswith(str(cluster.root)) and "working_dir_files" in agent_file
    # A path outside the shipped folder is refused before the run is created.
    args = run_args(db, cluster.address, f"{AGENTS}:quick", 1, "--working-dir", str(laptop))
    refused = proctor(cluster, *args)
    out, err = refused.communicate(timeout=RUN_TIMEOUT_S)
    assert refused.returncode == 2, out + err
    assert "is outside the working directory" in err and "Traceback" not in err
    assert len(store.runs()) == 1


def test_regrade_on_the_cluster_matches_regrading_here(cluster: RayCluster, tmp_path: Path) -> None:
    """`regrade --executor ray` from a laptop through `ray://`: the workers grade the
    share rows they are sent with the task as changed in the shipped folder."""
    db, laptop = tmp_path / "p.db", tmp_path / "laptop"
    store = Store(db)
    Runner(load_suite(MINI), load_agent(f"{AGENTS}:flaky"), trials=5, seed=SEED, store=store).run()
    source = store.run("latest")["run_id"]
    shutil.copytree(MINI, laptop / "mini")
    task = laptop / "mini" / "tasks" / "read-item.yaml"
    task.write_text(task.read_text().replace("must_mention: [red]", "must_mention: [blue]"))
    here = regrade(store, source, load_suite(laptop / "mini"))
    assert here.flips  # the change is graded
    args = ["regrade", source, "mini", "--store", str(db), "-q", "--executor", "ray"]
    args += ["--address", cluster.client_address, "--working-dir", "."]
    out = finished(proctor(cluster, *args, cwd=laptop), cluster)
    there = store.run("latest")["run_id"]
    assert there not in (source, here.run_id), out
    assert verdicts(store.trial_results(there)) == verdicts(store.trial_results(here.run_id))
    assert len(verdicts(store.trial_results(there))) == 4 * 5


# -- Ray initialised in this process, as a library user would ----------------------------


@pytest.fixture(scope="module")
def connected(cluster: RayCluster) -> Iterator[Any]:
    with pytest.MonkeyPatch.context() as patch:
        for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH", "RAY_USAGE_STATS_ENABLED"):
            patch.setenv(name, cluster.env[name])
        import ray  # reads the authentication mode when first imported

        ray.init(address=cluster.address, configure_logging=False, log_to_driver=False)
        try:
            yield ray
        finally:
            ray.shutdown()


def run_in_process(name: str, tmp_path: Path, **options: Any) -> tuple[Any, Store]:
    from proctor.run.ray_executor import RayExecutor

    store = Store(tmp_path / "p.db")
    grace_s, trials = options.pop("grace_s", 5.0), options.pop("trials", 3)
    runner = Runner(
        load_suite(MINI).select(ids=["read-item"]),
        load_agent(f"{AGENTS}:{name}"),
        trials=trials,
        concurrency=2,
        store=store,
        agent_ref=f"{AGENTS}:{name}",
        executor=RayExecutor(grace_s=grace_s),
        **options,
    )
    return runner.run(), store


def test_a_trial_whose_worker_dies_runs_again_then_is_an_error(
    cluster: RayCluster, connected: Any, tmp_path: Path
) -> None:
    starts = Path(cluster.env[STARTS])
    starts.unlink(missing_ok=True)
    report, store = run_in_process("KillsItsWorker", tmp_path)  # trial 1 ends its process
    statuses = {r.trial: r.status for r in store.trial_results(report.run_id)}
    assert statuses == {0: "passed", 1: "error", 2: "passed"}  # none lost, none twice
    (crashed,) = [r for r in report.results if r.trial == 1]
    assert (crashed.error or "").startswith("ray: ") and "died" in (crashed.error or "")
    attempts = starts.read_text().splitlines()
    assert len(attempts) == 2 and attempts[0] != attempts[1]  # again, in a new worker
    trace, _, _ = store.trace(report.run_id, "read-item", 0)
    assert trace.events[-2].kind == "answer"  # the worker note comes after the graded events
    assert trace.events[-1].data["worker"]["node_ip"] in (HEAD_IP, WORKER_IP)
    assert connected.is_initialized()  # a Ray the caller started is left running


def test_an_agent_stopping_its_worker_is_killed_at_the_limit(
    cluster: RayCluster, connected: Any, tmp_path: Path
) -> None:
    """A stopped worker ignores cancelling and SIGTERM: it is killed from its node, and
    its CPU is free when the run reports the trial, so a second run is not kept waiting."""
    starts = Path(cluster.env[STARTS])
    starts.unlink(missing_ok=True)
    report, _ = run_in_process("Freezes", tmp_path, timeout_s=1.0, grace_s=0.5)  # trial 1
    by_trial = {r.trial: r for r in report.results}
    assert {t: r.status for t, r in by_trial.items()} == {0: "passed", 1: "timeout", 2: "passed"}
    assert "its Ray worker was killed" in (by_trial[1].error or "")
    (frozen,) = [int(line.split()[1]) for line in starts.read_text().splitlines()]
    assert state(frozen) in ("", "Z")  # gone, or exited and not yet reaped by its raylet
    assert [pid for pid in cluster.alive() if state(pid) == "T"] == []  # none stopped
    # Both CPUs schedule at once: two trials each waiting for the other (a stopped worker
    # holding a CPU would leave one of them queued, and both would time out).
    (tmp_path / "again").mkdir()
    again, _ = run_in_process("meets", tmp_path / "again", trials=2, timeout_s=RUN_TIMEOUT_S / 2)
    assert [r.status for r in again.results] == ["passed"] * 2


# -- drivers in other processes: kill and resume --------------------------------------------


def committed(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM trials").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def test_a_killed_driver_resumes_to_one_record_per_trial(
    cluster: RayCluster, tmp_path: Path
) -> None:
    db, agent, trials = tmp_path / "p.db", f"{AGENTS}:steady", 5
    driver = proctor(cluster, *run_args(db, cluster.address, agent, trials))
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while committed(db) < 4:
        assert driver.poll() is None, driver.communicate()
        assert time.monotonic() < deadline, "the run stored nothing"
        time.sleep(0.05)
    driver.send_signal(signal.SIGKILL)
    driver.communicate()
    store, run_id = stored(db)
    assert store.run(run_id)["status"] == "running" and committed(db) < 4 * trials
    args = run_args(db, cluster.address, agent, trials, "--resume", run_id)
    finished(proctor(cluster, *args), cluster)
    rows = (
        sql(store)
        .execute(
            "SELECT task_id, trial, COUNT(*) FROM trials WHERE run_id = ? GROUP BY task_id, trial",
            (run_id,),
        )
        .fetchall()
    )
    assert len(rows) == 4 * trials and {n for _, _, n in rows} == {1}
    assert verdicts(store.trial_results(run_id)) == local_verdicts(agent, trials)
    assert store.run(run_id)["status"] == "completed"


def test_a_worker_node_killed_mid_run(cluster: RayCluster, tmp_path: Path) -> None:
    """The trial in flight on the dead node runs again on the head with its seed; every
    trial has one record, and the run completes on the head alone."""
    starts = Path(cluster.env[STARTS])
    starts.unlink(missing_ok=True)
    db, agent, trials = tmp_path / "p.db", f"{AGENTS}:steady", 4
    driver = proctor(cluster, *run_args(db, cluster.address, agent, trials))
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while not (starts.exists() and WORKER_IP in starts.read_text()):
        assert driver.poll() is None, driver.communicate()
        assert time.monotonic() < deadline, "no trial started on the worker node"
        time.sleep(0.02)
    cluster.kill("w1")  # while its trial is in flight
    before = starts.read_text().splitlines()
    finished(driver, cluster)
    lines = starts.read_text().splitlines()
    assert lines[len(before) :] and all(line.endswith(HEAD_IP) for line in lines[len(before) :])
    last_on_worker = max(i for i, line in enumerate(before) if line.endswith(WORKER_IP))
    in_flight = before[last_on_worker].split()[0]
    assert f"{in_flight} {HEAD_IP}" in lines[last_on_worker:]  # started again on the head
    store, run_id = stored(db)
    results = list(store.trial_results(run_id))
    assert len(results) == 4 * trials and store.run(run_id)["status"] == "completed"
    assert verdicts(results) == local_verdicts(agent, trials)  # nothing lost or changed
    task_id, trial = in_flight.split("#")
    worker, _ = notes(store, run_id, (task_id, int(trial)))
    assert worker["node_ip"] == HEAD_IP  # its record is the retry's


def test_a_failed_start_is_torn_down() -> None:
    """A node that fails half-way (too small an object store) leaves no process."""
    why = unavailable()
    if why is not None:
        give_up(why)
    broken = RayCluster()
    try:
        with pytest.raises(ClusterError, match="ended with"):
            broken.start_node("head", HEAD_IP, "--head", "--object-store-memory", "1000")
        (session,) = broken.sessions.values()
        assert session_pids(session)  # the GCS it launched is still running
        broken.stop()
        assert session_pids(session) == [] and not broken.root.exists()
    finally:
        broken.stop()


#: A test run that starts a head node, says where, and is then ended from outside.
LEFT_RUNNING = f"""
import sys, time
sys.path.insert(0, {str(Path(__file__).parent)!r})
from ray_cluster import RayCluster
cluster = RayCluster()
cluster.start_head()
print(cluster.root, flush=True)
time.sleep({RUN_TIMEOUT_S})
"""


def tagged(root: str) -> list[int]:
    """The processes of the test cluster in folder `root`."""
    return [
        int(pid)
        for pid in os.listdir("/proc")
        if pid.isdigit() and (tag_of(int(pid)) or "").endswith(f":{root}")
    ]


@pytest.mark.parametrize("ending", [signal.SIGTERM, signal.SIGKILL], ids=["term", "kill"])
def test_a_test_run_ended_from_outside_leaves_no_cluster(ending: signal.Signals) -> None:
    """SIGTERM: the run stops its cluster itself. SIGKILL: nothing runs in it, and the
    next cluster's start sweeps what it left."""
    why = unavailable()
    if why is not None:
        give_up(why)
    run = subprocess.Popen([sys.executable, "-c", LEFT_RUNNING], stdout=subprocess.PIPE, text=True)
    try:
        root = (run.stdout.readline() if run.stdout else "").strip()
        left = tagged(root)
        assert root and left, "the head did not start"
        assert all((tag_of(pid) or "").startswith(f"{run.pid}:") for pid in left)
        sessions = {os.getsid(pid) for pid in left}
        assert run.pid not in sessions and os.getsid(0) not in sessions  # the node's own
        run.send_signal(ending)
        assert run.wait(timeout=RUN_TIMEOUT_S) == -ending
        if ending == signal.SIGKILL:
            assert tagged(root)  # still running, its test process gone
            assert set(left) <= set(sweep())
        assert tagged(root) == [] and not Path(root).exists()
        # not even a process whose title hides its tag (Ray's agents and workers)
        assert [pid for sid in sessions for pid in session_pids(sid)] == []
    finally:
        run.kill()
        run.wait()
        sweep()

"""A real two-node Ray cluster on this machine, for the tests that need one.

`ray start --head` on 127.0.0.2 and a worker node (`ray start --address`) on 127.0.0.3,
each with one CPU, its own custom resource, temp dir, ports and worker-port range.
Loopback addresses other than 127.0.0.1 keep the traffic local and give the two nodes
different IPs (Ray rewrites 127.0.0.1 to the machine's own address, where a worker node
then waits for the head forever).

Every `ray start` runs in a session of its own: all it leaves behind (GCS, raylet,
agents, task workers) keeps that session id, so a node is torn down by killing exactly
those processes, found in /proc. Never `ray stop`: it kills every Ray process on the
machine, other people's clusters too. Teardown runs when the fixture ends, at exit, on
SIGTERM and SIGHUP (a CI limit, a closed terminal), and after a failed start (a head that
failed half-way leaves its GCS running). What no handler sees (SIGKILL, a test run ended
by its watchdog) is swept by the next cluster: every process of a cluster carries a tag
naming the test process that started it (`TAG`), and a cluster whose test process is gone
is killed before a new one starts, with every process of its sessions (each node, and
each driver, runs in a session of its own).

Drivers are subprocesses (`proctor run ... --executor ray --address ...`), never
`ray.init` in the test process, whose Ray state other tests own.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: The `ray` command of this interpreter's environment: the cluster runs the same Ray,
#: Python and proctor as the drivers (they must match).
RAY = Path(sys.executable).parent / "ray"
#: Set in CI: a cluster that cannot start fails the tests instead of skipping them.
REQUIRE = os.environ.get("PROCTOR_REQUIRE_RAY") == "1"
#: The variable naming the file test agents note their starts in (fixtures/exec_agents.py).
STARTS = "PROCTOR_TEST_STARTS"
HEAD_IP, WORKER_IP = "127.0.0.2", "127.0.0.3"
START_TIMEOUT_S = 90.0
#: The GCS declares a silent node dead after 3 missed 0.5 s health checks, not ~15 s.
FAST_HEALTH_CHECK = {
    "RAY_health_check_period_ms": "500",
    "RAY_health_check_timeout_ms": "500",
    "RAY_health_check_failure_threshold": "3",
}
#: Ray's smallest object store (75 MiB): the default takes 30% of the RAM per node.
OBJECT_STORE_BYTES = 75 * 2**20
#: The variable every process of a test cluster inherits: `PID:START:ROOT` of the test
#: process that started it (its start time tells it from a later process with its pid).
TAG = "PROCTOR_TEST_CLUSTER"
#: Signals after which a test run ends without its fixtures' teardown or atexit.
ENDING = (signal.SIGTERM, signal.SIGHUP)


def unavailable() -> str | None:
    """Why this environment cannot run the cluster, or None."""
    if importlib.util.find_spec("ray") is None:
        return "Ray is not installed (pip install -e '.[dev]' installs it)"
    if importlib.util.find_spec("grpc") is None:
        return "Ray Client needs grpcio (pip install 'ray[client]')"
    if not RAY.exists():
        return f"no `ray` command beside {sys.executable}"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def session_pids(sid: int) -> list[int]:
    """Every live process of session `sid` (task workers set their own process group,
    so `killpg` would miss them; the session id they keep). Not zombies: they have
    exited, and one whose parent is this process (a `ray start` killed during its start)
    is reaped only once this process waits for it."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getsid(int(entry)) == sid and state(int(entry)) not in ("", "Z"):
                    found.append(int(entry))
            except (ProcessLookupError, PermissionError):
                continue
    return found


def state(pid: int) -> str:
    """A process's state letter (R running, S sleeping, T stopped, Z zombie...), or ""
    once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return ""


def started(pid: int) -> str | None:
    """When process `pid` started (/proc/PID/stat, field 22), or None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (FileNotFoundError, ProcessLookupError):
        return None


def tag_of(pid: int) -> str | None:
    """The `TAG` in a process's environment; None without one, or not readable (another
    user's process)."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    prefix = f"{TAG}=".encode()
    for entry in environ.split(b"\0"):
        if entry.startswith(prefix):
            return entry[len(prefix) :].decode(errors="replace")
    return None


def sweep() -> list[int]:
    """Kill every process of a test cluster whose test process is gone, until none is
    left, and remove its folder; the processes killed."""
    sessions: dict[int, str] = {}
    killed: set[int] = set()
    give_up = time.monotonic() + 30
    while time.monotonic() < give_up:
        sessions.update(_orphaned_sessions())
        left = [pid for sid in sessions for pid in session_pids(sid)]
        if not left:
            break
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        killed.update(left)
        time.sleep(0.1)
    for root in set(sessions.values()):
        shutil.rmtree(root, ignore_errors=True)
    return sorted(killed)


def _orphaned_sessions() -> dict[int, str]:
    """The sessions of clusters whose test process is gone, with their clusters'
    folders. Found by their tagged processes, the GCS and raylet; Ray's Python processes
    write their title over their environment, tag included, but keep the session."""
    sessions: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (tag := tag_of(int(entry))) is not None:
            owner, start, root = tag.split(":", 2)
            if started(int(owner)) != start:
                with contextlib.suppress(ProcessLookupError):
                    sessions[os.getsid(int(entry))] = root
    return sessions


class ClusterError(RuntimeError):
    """A node would not start; the message ends with its log."""


class RayCluster:
    """Head and worker nodes in /tmp/rcXXXX (short: Ray's socket paths live under it and
    AF_UNIX paths are limited to 107 bytes)."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="rc", dir="/tmp"))
        token = self.root / "auth_token"  # token auth, as Ray 2.5x does by default
        token.write_text(secrets.token_hex(32))
        self.env = {
            **os.environ,
            "RAY_USAGE_STATS_ENABLED": "0",
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN_PATH": str(token),
            **FAST_HEALTH_CHECK,
        }
        for name in ("RAY_ADDRESS", "RAY_AUTH_TOKEN"):
            self.env.pop(name, None)
        me = os.getpid()
        self.env[TAG] = f"{me}:{started(me)}:{self.root}"
        self.sessions: dict[str, int] = {}
        self.gcs_port, self.client_port = free_port(), free_port()
        self.address = f"{HEAD_IP}:{self.gcs_port}"
        self.client_address = f"ray://127.0.0.1:{self.client_port}"
        # Disjoint per node, and clear of Ray's own fixed ports: 10001 (client server)
        # and 23000-23999, where the head starts one Ray Client server per ray://
        # driver (a worker holding one of those ports fails that driver's init).
        self._worker_ports = 11000 + (os.getpid() % 50) * 200
        atexit.register(self.stop)
        self.drivers: list[subprocess.Popen[str]] = []
        for signum in ENDING:
            if signal.getsignal(signum) not in (_stop_all, signal.SIG_IGN):
                _before[signum] = signal.getsignal(signum)
                signal.signal(signum, _stop_all)
        _live.add(self)

    def start(self) -> None:
        """Head, then one worker node, once the leftovers of earlier test runs are gone;
        torn down again if either fails."""
        sweep()
        try:
            self.start_head()
            self.start_worker()
        except BaseException:
            self.stop()
            raise

    def start_head(self) -> None:
        self.start_node(
            "head",
            HEAD_IP,
            "--head",
            "--port",
            str(self.gcs_port),
            "--ray-client-server-port",
            str(self.client_port),
            "--include-dashboard",
            "false",
        )

    def start_worker(self) -> None:
        self.start_node("w1", WORKER_IP, "--address", self.address)

    def start_node(self, name: str, ip: str, *extra: str) -> None:
        first = self._worker_ports + 100 * len(self.sessions)
        agent_ports = [str(free_port()) for _ in range(4)]
        args = [
            str(RAY),
            "start",
            "--node-ip-address",
            ip,
            "--num-cpus",
            "1",
            "--resources",
            json.dumps({name: 1}),
            "--temp-dir",
            str(self.root / name),
            "--disable-usage-stats",
            "--object-store-memory",
            str(OBJECT_STORE_BYTES),
            "--min-worker-port",
            str(first),
            "--max-worker-port",
            str(first + 99),
            "--dashboard-agent-listen-port",
            agent_ports[0],
            "--dashboard-agent-grpc-port",
            agent_ports[1],
            "--runtime-env-agent-port",
            agent_ports[2],
            "--metrics-export-port",
            agent_ports[3],
            *extra,
        ]
        log = self.root / f"{name}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                args,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.sessions[name] = proc.pid  # before waiting: a failed start leaves daemons
        try:
            code = proc.wait(timeout=START_TIMEOUT_S)  # a worker retries a lost GCS forever
        except subprocess.TimeoutExpired:
            code = None
        if code != 0:
            tail = log.read_text(errors="replace")[-1500:]
            raise ClusterError(f"`ray start` of node {name} ended with {code}:\n{tail}")

    def kill(self, name: str) -> None:
        """SIGKILL every process of the node, until none is left."""
        sid = self.sessions.pop(name, None)
        if sid is None:
            return
        give_up = time.monotonic() + 30
        while (pids := session_pids(sid)) and time.monotonic() < give_up:
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    continue
            time.sleep(0.1)

    def driver(self, args: list[str], cwd: Path | None = None) -> subprocess.Popen[str]:
        """A driver process (`ARGS`) in the cluster's environment, killed with the cluster."""
        proc = subprocess.Popen(
            args,
            env=self.env,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its session holds only it: `sweep` may kill all of it
        )
        self.drivers.append(proc)
        return proc

    def alive(self) -> list[int]:
        """The processes of every node still running."""
        return [pid for sid in self.sessions.values() for pid in session_pids(sid)]

    def stop(self) -> None:
        """Kill the drivers, the worker nodes, then the head; remove the temp dir.
        Idempotent."""
        for proc in self.drivers:
            proc.kill()  # a no-op on one that has ended
            proc.wait()
        for name in reversed(list(self.sessions)):
            self.kill(name)
        shutil.rmtree(self.root, ignore_errors=True)
        _live.discard(self)

    def logs(self) -> str:
        """The tail of each node's start log and of the head's Ray Client server logs
        (where a `ray://` driver's failed init is explained), for a failure message."""
        client = sorted(self.root.glob("head/session_latest/logs/ray_client_server*.err"))
        return "\n".join(
            f"{log.name}: {log.read_text(errors='replace')[-800:]}"
            for log in [*sorted(self.root.glob("*.log")), *client]
        )


#: The clusters of this process not yet stopped, and the handlers `_stop_all` replaced.
_live: set[RayCluster] = set()
_before: dict[int, Any] = {}


def _stop_all(signum: int, frame: Any) -> None:
    """Stop every cluster, then end as the signal would have ended the process."""
    for cluster in list(_live):
        cluster.stop()
    previous = _before.get(signum, signal.SIG_DFL)
    if callable(previous):
        previous(signum, frame)
    else:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

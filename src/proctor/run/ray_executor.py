"""Ray (`--executor ray`): trials as Ray tasks, spread over a cluster.

Each trial is one Ray task. Its worker rebuilds the suite and the agent from the
TrialSource (once per worker process) and runs the trial under the run's timeout; the
record streams back to the driver, which alone writes the store. A task still running
`grace_s` past the timeout is cancelled with force (its worker process is killed) and
recorded as `timeout`. The suite and agent files must be at the same paths on every node
(one machine, a shared filesystem, or a `runtime_env` passed in `init`).

Ray is an optional extra (`pip install 'proctor[ray]'`), imported when this executor
opens and nowhere else: the core never imports it.
"""

from __future__ import annotations

import asyncio
import importlib.util
from typing import Any

from proctor.run.executor import Executor, Lane, RunContext
from proctor.run.source import ExecutorError, TrialItem, run_item
from proctor.run.trial import TrialRecord, TrialSpec, lost_trial

#: Seconds a Ray task gets past the trial's timeout (it may also have queued) before it
#: is cancelled.
GRACE_S = 5.0


class RayExecutor(Executor):
    name = "ray"
    needs_source = True

    def __init__(
        self,
        address: str | None = None,
        *,
        num_cpus: float = 1.0,
        grace_s: float = GRACE_S,
        init: dict[str, Any] | None = None,
    ) -> None:
        """`address`: `auto`, `ray://host:port`, or None (Ray's default: `RAY_ADDRESS`, else a
        new local instance); ignored when Ray is already initialised. `num_cpus`: what each
        trial reserves. `init`: further `ray.init` arguments.
        """
        if importlib.util.find_spec("ray") is None:  # before the run is created
            raise ExecutorError("the ray executor needs Ray: pip install 'proctor[ray]'")
        self.address = address
        self.num_cpus = num_cpus
        self.grace_s = grace_s
        self.init = dict(init or {})

    async def open(self, ctx: RunContext) -> int:
        import ray

        self.ray: Any = ray
        self.owned = not ray.is_initialized()
        if self.owned:
            try:
                ray.init(address=self.address, **self.init)
            except (ConnectionError, ValueError, RuntimeError) as exc:
                raise ExecutorError(f"ray: cannot connect to {self.address}: {exc}") from None
        self.ctx = ctx
        self.task = ray.remote(run_item).options(num_cpus=self.num_cpus, max_retries=0)
        self.source = ray.put(ctx.source)
        capacity = int(ray.cluster_resources().get("CPU", 1) / self.num_cpus)
        return max(1, min(ctx.concurrency, capacity))

    def lane(self) -> Lane:
        return _RayLane(self)

    async def close(self) -> None:
        if self.owned:
            self.ray.shutdown()


class _RayLane(Lane):
    def __init__(self, executor: RayExecutor) -> None:
        self._ex = executor

    async def run(self, spec: TrialSpec) -> TrialRecord:
        ex, ray = self._ex, self._ex.ray
        ref = ex.task.remote(ex.source, TrialItem.of(spec))
        limit = ex.ctx.timeout_s
        try:
            return await asyncio.wait_for(
                asyncio.wrap_future(ref.future()), None if limit is None else limit + ex.grace_s
            )
        except TimeoutError:
            ray.cancel(ref, force=True)
            why = f"agent ran past its {limit} s limit; its Ray worker was killed"
            return lost_trial(spec, "timeout", why, limit or 0.0)
        except ray.exceptions.RayError as exc:
            lines = str(exc).strip().splitlines()
            return lost_trial(spec, "error", f"ray: {lines[-1] if lines else type(exc).__name__}")
        except asyncio.CancelledError:
            ray.cancel(ref, force=True)
            raise

    def close(self) -> None:
        """Nothing held: Ray owns the workers."""

"""`proctor health`: can this suite support a release decision? (docs/architecture.md,
Suite health).

One check runs, in a store in memory: the agent of the noise floor twice with one seed
(proctor.health.flaky) and once per further seed; the reference agent (the noise agent's
first run when they are the same); the null and junk controls; the mutants of the
reference's passing trials (proctor.health.mutate); with a user model, the reference
with it as a control and a second one's noise (proctor.health.simulated_users). It reads the
stored runs of other
agents it is given, the simulated users in the reference's trials and the judges'
calibration records, and decides per task and for the suite (proctor.health.verdicts).
Functions return data; printing is proctor.report.health_tables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from proctor.core.results import TrialResult
from proctor.core.runs import RunData
from proctor.decide.gate import Rule
from proctor.env.suite import Suite
from proctor.health.controls import JunkAgent, NullAgent, control_findings
from proctor.health.flaky import flaky_tasks
from proctor.health.judge_standing import NamedJudge, judge_status
from proctor.health.meaning import keyword_only
from proctor.health.mutants import KINDS
from proctor.health.mutate import mutate_references, references_in
from proctor.health.noise import FLIP_THRESHOLD, gate_callouts, noise_floor
from proctor.health.population import population
from proctor.health.simulated_users import simulator_health
from proctor.health.users import users_report
from proctor.health.verdicts import suite_verdict, task_verdicts
from proctor.judge.calibration_records import CalibrationPolicy
from proctor.run.runner import Runner, task_infos
from proctor.run.simulator import UserPlayer
from proctor.store.sqlite import Store


@dataclass
class HealthOptions:
    seed: int = 0
    trials: int = 1
    #: Seeds of the noise floor: `seed` (run twice) and the ones after it.
    seeds: int = 2
    flip_threshold: float = FLIP_THRESHOLD
    kinds: Sequence[str] = KINDS
    #: Stored runs of other agents, for impossible and trivial tasks.
    runs: Sequence[RunData] = ()
    #: Gate rules to hold against the noise floor.
    rules: Sequence[Rule] = ()
    #: The store of calibration records (judges), the judge a run will use (None: any
    #: calibrated one) and the calibration it needs.
    store: Store | None = None
    judge: NamedJudge | None = None
    policy: CalibrationPolicy | None = None
    concurrency: int = 4
    timeout_s: float | None = 60.0
    #: The simulated user as a control (the reference plays the scenario tasks with
    #: it), and a second one on a `user_sample` share of them: the simulator's noise.
    user: UserPlayer | None = None
    second_user: UserPlayer | None = None
    user_sample: float = 1.0


@dataclass
class HealthReport:
    suite: str
    suite_digest: str
    task_digests: dict[str, str]
    reference: str
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        return str(self.data["suite_verdict"]["verdict"])

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "suite_digest": self.suite_digest,
            "task_digests": self.task_digests,
            "reference": self.reference,
            **self.data,
        }


def _results(store: Store, run_id: str) -> list[TrialResult]:
    return list(store.trial_results(run_id))


def check_health(
    suite: Suite,
    reference: Any,
    options: HealthOptions | None = None,
    *,
    noise_agent: Any = None,
    progress: Callable[[str], None] | None = None,
) -> HealthReport:
    """Every part of the health check on `suite`, `reference` as the reference agent."""
    o = options or HealthOptions()
    say = progress or (lambda _: None)
    store = Store(":memory:")
    try:

        def run(
            agent: Any, seed: int, trials: int, tasks: Suite = suite, user: Any = None
        ) -> tuple[str, str]:
            report = Runner(
                tasks,
                agent,
                trials=trials,
                seed=seed,
                store=store,
                concurrency=o.concurrency,
                timeout_s=o.timeout_s,
                user=user,
            ).run()
            return report.run_id, report.manifest.agent.name

        say("noise floor: two runs with one seed")
        noisy = noise_agent if noise_agent is not None else reference
        flaky = flaky_tasks(
            suite,
            noisy,
            seed=o.seed,
            trials=o.trials,
            concurrency=o.concurrency,
            store=store,
        )
        noise_runs = [_results(store, r) for r in flaky.runs]
        for extra in range(1, o.seeds):
            say(f"noise floor: seed {o.seed + extra}")
            noise_runs.append(_results(store, run(noisy, o.seed + extra, o.trials)[0]))
        if noise_agent is None:
            ref_run, ref_name = flaky.runs[0], flaky.agent
        else:
            say("reference agent")
            ref_run, ref_name = run(reference, o.seed, o.trials)
        say("controls: null and junk agents")
        null_run = run(NullAgent(), o.seed, 1)[0]
        junk_run = run(JunkAgent(), o.seed, 1)[0]
        controls = {
            "reference": _results(store, ref_run),
            "null": _results(store, null_run),
            "junk": _results(store, junk_run),
        }
        refs, failed = references_in(store, ref_run, suite)
        say(f"mutants of {len(refs)} reference trials")
        mutation = mutate_references(suite, refs, failed, ref_name, kinds=o.kinds)
        simulator = None
        if o.user is not None:

            def play(tasks: Suite, user: UserPlayer) -> list[TrialResult]:
                say(f"simulated user: the reference with {user.model.name}")
                return _results(store, run(reference, o.seed, o.trials, tasks, user)[0])

            simulator = simulator_health(
                suite, o.user, o.second_user, play, share=o.user_sample, seed=o.seed
            )
        members = {t.id: t for t in suite.tasks}
        users = users_report(
            members,
            ((s.result.task_id, s.result.trial, s.trace) for s in store.graded_trials(ref_run, ())),
        )
    finally:
        store.close()
    ids = [t.id for t in suite.tasks]
    seeds = [o.seed + i for i in range(max(o.seeds, 1))]
    noise = noise_floor(
        ids, noise_runs, flaky, seeds=seeds, trials=o.trials, threshold=o.flip_threshold
    )
    if o.rules:
        infos = task_infos(suite)
        slices = {r.source: {t for t, i in infos.items() if r.selects(i)} for r in o.rules}
        noise.callouts = gate_callouts(noise, o.rules, slices)
    findings = control_findings(suite, controls)
    pop = population(ids, o.runs, controls["null"])
    digests = {t.id: t.task.digest for t in suite.tasks}
    unread = {t.id: keyword_only(t.task) for t in suite.tasks}
    tasks = task_verdicts(list(digests.items()), findings, mutation, noise, pop, unread)
    mutation_data = mutation.to_dict()
    mutation_data.pop("mutants")  # killed and equivalent ones: `proctor mutate --json`
    data = {
        "options": {"seed": o.seed, "trials": o.trials, "seeds": seeds, "kinds": list(o.kinds)},
        "suite_verdict": suite_verdict(tasks, mutation),
        "tasks": [t.to_dict() for t in tasks],
        "controls": {
            "findings": [f.to_dict() for f in findings],
            "passed": {c: sum(r.passed for r in rs) for c, rs in controls.items()},
            "trials": {c: sum(r.valid for r in rs) for c, rs in controls.items()},
        },
        "mutation": mutation_data,
        "noise": noise.to_dict(),
        "population": pop.to_dict(),
        "users": [u.to_dict() for u in users],
        "judges": [j.to_dict() for j in judge_status(suite, o.store, o.policy, o.judge)],
        "simulator": None if simulator is None else simulator.to_dict(),
    }
    return HealthReport(suite.name, suite.digest, digests, ref_name, data)

"""The pytest plugin: a suite's tasks as pytest tests, and `proctor_evaluate` for a test.

`pytest --proctor SUITE --proctor-agent REF` collects one test per task of SUITE (marked
`proctor`, so `-m proctor` runs them alone); the first one to run evaluates every selected
task once with `proctor.evaluate` (no second runner), and each test passes when its task's
trials pass by the rules the JUnit report uses (report/junit.task_failure). A failing test
prints the failed checks of every failing trial with their evidence, made printable (agent
text cannot move the cursor or restyle the terminal).

From a test: `proctor_evaluate("examples/support", agent="...")` is `proctor.evaluate`
with `--proctor-agent`, `--proctor-trials` and `--proctor-seed` as defaults and relative
task paths read from the rootdir; the runs' stores are closed when the test ends.

Registered as the `proctor` pytest11 entry point, so every test run of a project with
proctor installed imports this module: it imports nothing of proctor until a test asks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from proctor.api.evaluation import RunResult
    from proctor.env.suite import Suite

MARKER = "proctor"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("proctor", "evaluate an agent on a proctor suite")
    group.addoption(
        "--proctor",
        action="append",
        default=[],
        metavar="SUITE",
        help="Task files or folders: one test per task (repeatable).",
    )
    group.addoption(
        "--proctor-agent",
        metavar="REF",
        help="The agent the tasks run with (FILE.py:NAME, MODULE:NAME, chat:MODEL).",
    )
    group.addoption(
        "--proctor-trials", type=int, default=1, metavar="K", help="Trials per task (1)."
    )
    group.addoption("--proctor-seed", type=int, default=0, metavar="N", help="Run seed (0).")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}: a task of a proctor suite (--proctor)")
    if config.getoption("proctor") and not config.getoption("proctor_agent"):
        raise pytest.UsageError("--proctor needs --proctor-agent REF: the agent to evaluate")
    if config.getoption("proctor_trials") < 1:
        raise pytest.UsageError("--proctor-trials must be at least 1")


@pytest.hookimpl(tryfirst=True)  # before -k and -m deselect
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """The suite's tasks join the collected tests, reported like any other collection."""
    paths = config.getoption("proctor")
    if not paths:
        return
    name = ",".join(paths)  # the tests' ids: `examples/support::cancel-eligible-order`
    node = SuiteNode.from_parent(session, name=name, nodeid=name, paths=paths)
    report = node.ihook.pytest_make_collect_report(collector=node)
    config.hook.pytest_collectreport(report=report)
    items.extend(item for item in report.result if isinstance(item, pytest.Item))


class SuiteNode(pytest.Collector):
    """The tasks under `paths`; evaluated once, on the first of their tests to run."""

    def __init__(self, *, paths: Sequence[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.paths = [_under(self.config.invocation_params.dir, p) for p in paths]
        self.suite: Suite | None = None
        self._run: RunResult | Exception | None = None

    def collect(self) -> Iterator[TaskItem]:
        from proctor.api import load_tasks

        self.suite = load_tasks(self.paths)
        for task in self.suite.tasks:
            item = TaskItem.from_parent(self, name=task.id, path=task.loaded.path)
            item.line = task.loaded.line
            item.add_marker(MARKER)
            yield item

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:  # type: ignore[override]
        """A task file's problems, `file:line` each, without pytest's traceback."""
        return _input_problem(excinfo.value) or str(super().repr_failure(excinfo))

    def run(self) -> RunResult:
        """The run of the tasks still selected (after -k and -m): made once, kept."""
        if self._run is None:
            from proctor.api import evaluate

            assert self.suite is not None
            options = self.config.option
            items = self.session.items
            ids = [i.name for i in items if isinstance(i, TaskItem) and i.parent is self]
            try:
                self._run = evaluate(
                    self.suite,
                    options.proctor_agent,
                    trials=options.proctor_trials,
                    seed=options.proctor_seed,
                    ids=ids,
                )
            except Exception as exc:  # every task's test reports it, once evaluated
                self._run = exc
        if isinstance(self._run, Exception):
            raise self._run
        return self._run

    def teardown(self) -> None:
        if self._run is not None and not isinstance(self._run, Exception):
            self._run.store.close()


class TaskFailed(AssertionError):
    """A task's trials did not pass; the message lists why."""


class TaskItem(pytest.Item):
    """One task of the suite: passes when its trials pass."""

    parent: SuiteNode
    #: The task's line in its file (1-based), for the test's location.
    line: int = 1

    def runtest(self) -> None:
        from proctor.report.junit import task_failure

        run = self.parent.run()
        failure = task_failure([r for r in run.trials if r.task_id == self.name])
        if failure is not None:
            lines = [f"{failure.kind}: {failure.message}", *failure.lines]
            raise TaskFailed("\n".join(printable(line) for line in lines))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:  # type: ignore[override]
        if isinstance(excinfo.value, TaskFailed):
            return str(excinfo.value)
        return _input_problem(excinfo.value) or str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, self.line - 1, f"proctor task {self.name}"


def _input_problem(exc: BaseException) -> str | None:
    """The one-line (or `file:line` per problem) message of input proctor cannot use."""
    from proctor.api import InputError
    from proctor.core.documents import SpecError

    if isinstance(exc, SpecError):
        return "\n".join(exc.lines())
    if isinstance(exc, InputError):
        return str(exc)
    return None


def _under(base: Path, path: str | Path) -> str:
    """`path` read from `base` (a suite source such as `agentdojo:workspace` as it is)."""
    from proctor.env.sources import source_spec

    return str(path) if source_spec(path) else str(base / path)


def printable(text: str) -> str:
    """`text` with every character that is not printable (escape sequences, bidi overrides,
    carriage returns) written as its Python escape."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


@pytest.fixture
def proctor_evaluate(request: pytest.FixtureRequest) -> Iterator[Callable[..., RunResult]]:
    """`proctor.evaluate`, with the `--proctor-*` options as defaults and task paths read
    from the rootdir: `run = proctor_evaluate("examples/support", agent="FILE.py:NAME")`."""
    from proctor.api import evaluate
    from proctor.env.suite import Suite

    config = request.config
    opened: list[RunResult] = []

    def run(
        tasks: str | Path | Sequence[str | Path] | Suite,
        agent: Any = None,
        trials: int | None = None,
        seed: int | None = None,
        **options: Any,
    ) -> RunResult:
        agent = agent if agent is not None else config.getoption("proctor_agent")
        if agent is None:
            raise pytest.UsageError("proctor_evaluate needs agent=... or --proctor-agent REF")
        if isinstance(tasks, str | Path):
            tasks = _under(config.rootpath, tasks)
        elif not isinstance(tasks, Suite):
            tasks = [_under(config.rootpath, p) for p in tasks]
        result = evaluate(
            tasks,
            agent,
            trials=config.getoption("proctor_trials") if trials is None else trials,
            seed=config.getoption("proctor_seed") if seed is None else seed,
            **options,
        )
        if "store" not in options:  # a store the test gave is the test's to close
            opened.append(result)
        return result

    yield run
    for result in opened:
        result.store.close()

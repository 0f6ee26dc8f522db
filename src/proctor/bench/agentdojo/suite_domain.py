"""An AgentDojo suite as a proctor domain: AgentDojo's tools behind proctor's gateway.

Each of the suite's functions becomes a tool with AgentDojo's name, description and
argument schema (unknown arguments refused, as every proctor tool refuses them). A call
that passed the gateway's validation, policy and faults loads the environment parts the
function depends on from the trial's JSON state, runs AgentDojo's function on them, and
writes the parts back: the gateway records the result, the state change of a write and
its ledger entry as for any tool. An exception the function raises is a tool error the
agent reads, as AgentDojo's runtime reports it.

A trial starts from the task's environment: AgentDojo's environment with the attack's
text in the injection vectors the user task's ground truth sees (docs/architecture.md,
Where to add: peer benchmarks).
"""

from __future__ import annotations

import marshal
import pickle
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic_core import to_jsonable_python

from proctor.bench.agentdojo import suites
from proctor.bench.agentdojo.codec import Codec, Kept
from proctor.env.domain import Domain, State, Tool, ToolError, ToolKind
from proctor.env.sources import SourceError
from proctor.tasks.models import Task

#: Starting points kept per domain, as bytes (~110 kB for workspace) and
#: packed (AgentDojo v1.2.1 has 1,046 tasks).
STARTS = 64
PACKED = 2048
#: AgentDojo tools named like reads; the name says whether a call can change the world.
READ_VERBS = ("get_", "search_", "list_", "read_", "check_")
#: Tools named like reads that do change it, as their docstrings say: reading unread
#: e-mails marks them read, and every page fetched is logged in `web_requests`.
CHANGING_READS = frozenset({"get_unread_emails", "get_webpage"})
#: Keys of the environment holding the user's credentials.
_SECRET_KEY = re.compile(r"password|passport|id_number|credit_card|bank_account_number", re.I)


def tool_kind(name: str) -> ToolKind:
    reads = name.startswith(READ_VERBS) and name not in CHANGING_READS
    return "read" if reads else "write"


def _args_model(function: Any) -> type[BaseModel]:
    """AgentDojo's argument model, refusing arguments it does not declare."""
    config = ConfigDict(extra="forbid")
    return type(f"{function.name}_args", (function.parameters,), {"model_config": config})


def _call(function: Any, codec: Codec) -> Callable[..., Any]:
    """The tool function: AgentDojo's, on the parts of the state it depends on."""
    needs: dict[str, str] = {}
    for param, dependency in function.dependencies.items():
        if not isinstance(dependency.env_dependency, str):
            raise SourceError(f"AgentDojo tool {function.name!r}: a computed dependency")
        needs[param] = dependency.env_dependency

    def run(state: State, **args: Any) -> Any:
        parts = {part: codec.load_part(part, state[part]) for part in set(needs.values())}
        try:
            result = function.run(**args, **{p: parts[part] for p, part in needs.items()})
        except Exception as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}") from exc
        finally:
            for part, value in parts.items():
                state[part] = codec.dump_part(part, value)
        return to_jsonable_python(result)

    return run


def credentials(value: Any) -> set[str]:
    """The user's credentials in an environment's JSON: the values (4 characters or more)
    of keys naming a password, a passport, an ID, a card or an account number."""
    found: set[str] = set()
    _credentials(value, False, found)
    return found


def _credentials(value: Any, secret: bool, found: set[str]) -> None:
    """Adds to `found` the credentials in `value`, held by a secret key if `secret`."""
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, dict | list) or _secret_key(str(key)):
                _credentials(item, _secret_key(str(key)), found)
    elif isinstance(value, list):
        for item in value:
            _credentials(item, secret, found)
    elif secret and isinstance(value, str | int) and len(str(value)) >= 4:
        found.add(str(value))


@lru_cache(maxsize=1024)
def _secret_key(key: str) -> bool:
    """Whether a key names a credential (an environment has few distinct keys)."""
    return _SECRET_KEY.search(key) is not None


@dataclass(frozen=True, eq=False)
class Start:
    """Where a task starts: the environment as JSON and as AgentDojo's model, the user
    task's ground-truth calls (computed by AgentDojo on that environment) and the user's
    credentials in it (found once per start, not on every trial's checks). Shared by the
    task's trials: read only.

    Both forms of the environment are kept as bytes (`marshal`, `pickle`): a copy is one
    load, and kept starts are bytes, which the garbage collector never walks (as JSON, a
    workspace start is ~700 dicts and lists, and each full collection walked them all)."""

    blob: bytes
    pickled: bytes
    ground_truth: tuple[Any, ...]
    credentials: frozenset[str]

    @property
    def state(self) -> State:
        """The starting environment as JSON, a copy of its own."""
        return marshal.loads(self.blob)

    def environment(self) -> Any:
        """The starting environment as AgentDojo's model, a deep copy of its own (as
        AgentDojo's runner copies its pre-task environment)."""
        return pickle.loads(self.pickled)


#: A start packed: its `blob` and `pickled` compressed, its ground truth and credentials.
Packed = tuple[bytes, bytes, tuple[Any, ...], frozenset[str]]


class AgentDojoDomain(Domain):
    """The tools and environments of one suite of one AgentDojo benchmark version."""

    def __init__(self, benchmark: str, name: str) -> None:
        task_suite = suites.suite(benchmark, name)
        super().__init__(
            f"agentdojo:{name}",
            f"AgentDojo {benchmark}, suite {name}",
            version=f"{benchmark}+agentdojo-{suites.package_version()}",
        )
        self.benchmark = benchmark
        self.suite_name = name
        self.codec = Codec(task_suite.environment_type)
        #: Starts by task, shared with this domain's snapshots (a run's copy, whose
        #: trials and checks ask for the start the agent asked the original for).
        self._starts: Kept[tuple[str, str | None, str], Start] = Kept(STARTS)
        #: Every start built, packed (its bytes compressed, ~38 kB for workspace): a run
        #: over a whole suite (each agent in turn) unpacks a start in a fraction of a
        #: millisecond instead of building it again (parse, validate, ground truth).
        self._packed: Kept[tuple[str, str | None, str], Packed] = Kept(PACKED)
        for function in task_suite.tools:
            self.tools[function.name] = Tool(
                name=function.name,
                description=function.description,
                kind=tool_kind(function.name),
                scopes=(),
                fn=_call(function, self.codec),
                args_model=_args_model(function),
                entity_arg=None,
                wants_ctx=False,
                latency_s=0.05,
            )

    def initial_state(self, task: Task) -> State:
        """AgentDojo's environment for the task, as JSON: a copy of its own per trial."""
        return self.start_of(task).state

    def starting_point(self, task: Task) -> Any:
        """The suite's environment, with the attack's text where the user task looks."""
        ref = task.metadata["agentdojo"]
        placed = ("user_task", "injection_task", "attack") if ref.get("injection_task") else ()
        return {key: ref[key] for key in ("suite", "benchmark", *placed)}

    def start_of(self, task: Task) -> Start:
        ref = task.metadata["agentdojo"]
        return self.start(ref["user_task"], ref.get("injection_task"), ref["attack"])

    def start(self, user_task: str, injection_task: str | None, attack: str) -> Start:
        """A user task's starting environment under an attack, and its ground truth; the
        last STARTS kept (each trial asks for its start three times: state, agent, checks),
        the last PACKED packed."""
        key = (user_task, injection_task, attack)
        start = self._starts.get(key)
        if start is None:
            packed = self._packed.get(key)
            if packed is None:
                start = self._start(user_task, injection_task, attack)
                blob, pickled = (zlib.compress(b, 1) for b in (start.blob, start.pickled))
                self._packed.put(key, (blob, pickled, start.ground_truth, start.credentials))
            else:
                blob, pickled, ground_truth, found = packed
                start = Start(zlib.decompress(blob), zlib.decompress(pickled), ground_truth, found)
            self._starts.put(key, start)
        return start

    def _start(self, user_task: str, injection_task: str | None, attack: str) -> Start:
        placed = suites.injections(
            self.benchmark, self.suite_name, user_task, injection_task, attack
        )
        texts = suites.environment_texts(self.benchmark, self.suite_name, placed)
        built = self.codec.build_texts(texts, suites.parse)
        if built is None:
            built = self.codec.build(suites.parse("".join(texts.values())))
        task = suites.suite(self.benchmark, self.suite_name).get_user_task_by_id(user_task)
        env = task.init_environment(built)
        pickled = pickle.dumps(env, protocol=pickle.HIGHEST_PROTOCOL)
        calls = task.ground_truth(pickle.loads(pickled))  # on a deep copy, as AgentDojo's
        state = self.codec.dump(env)
        return Start(marshal.dumps(state), pickled, tuple(calls), frozenset(credentials(state)))

    def pre_environment(self, task: Task) -> Any:
        """The environment before the agent, as AgentDojo's checks receive it."""
        return self.start_of(task).environment()

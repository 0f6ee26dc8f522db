"""AgentDojo itself: imported light, its suites by benchmark version, the environment of a
task built as AgentDojo builds it, and the injections of its attacks.

`agentdojo.task_suite` imports AgentDojo's model clients (openai, anthropic, cohere,
google-genai: about 3 s) through `agentdojo.agent_pipeline`'s package module, though none
of what proctor uses needs them. The import below lends that package, for the length of
the import, a bare module with the package's path, so its submodules load without its
`__init__`; the bare modules are then removed, and a later `import
agentdojo.agent_pipeline` by anyone runs the real one (reusing the submodules loaded
here). An environment is AgentDojo's YAML with the injections formatted in, parsed with
libyaml when present (AgentDojo's own loader parses the same text with pure Python; the
conformance test compares both on every task).
"""

from __future__ import annotations

import re
import sys
import types
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from importlib.resources import files
from typing import Any

import yaml

from proctor.env.sources import SourceError

DEFAULT_VERSION = "v1.2.1"
DEFAULT_ATTACK = "direct"
MISSING_EXTRA = "AgentDojo is not installed: pip install 'proctor[agentdojo]'"
#: The pipeline modules whose package `__init__` imports the model clients.
_BARE = ("agentdojo.agent_pipeline", "agentdojo.agent_pipeline.llms")
#: The one name AgentDojo's tool executor takes from its Google client module.
_GOOGLE = "agentdojo.agent_pipeline.llms.google_llm"
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
#: A line starting a top-level key of AgentDojo's environment YAML (keys are quoted there).
_TOP_KEY = re.compile(r'^"?([A-Za-z_]\w*)"?:', re.M)


@lru_cache(maxsize=1)
def agentdojo() -> types.SimpleNamespace:
    """The parts of AgentDojo proctor uses; SourceError naming the extra when missing."""
    try:
        import agentdojo as package
    except ImportError:
        raise SourceError(MISSING_EXTRA) from None
    lent: list[str] = []
    if "agentdojo.agent_pipeline" not in sys.modules:
        root = next(iter(package.__path__))
        for name in _BARE:
            bare = types.ModuleType(name)
            bare.__path__ = [f"{root}/{name.split('.', 1)[1].replace('.', '/')}"]
            sys.modules[name] = bare
            lent.append(name)
        google = types.ModuleType(_GOOGLE)
        google.EMPTY_FUNCTION_NAME = "<empty-function-name>"  # type: ignore[attr-defined]
        sys.modules[_GOOGLE] = google
        lent.append(_GOOGLE)
    try:
        from agentdojo.agent_pipeline.ground_truth_pipeline import GroundTruthPipeline
        from agentdojo.attacks.attack_registry import load_attack
        from agentdojo.functions_runtime import FunctionCall, FunctionsRuntime
        from agentdojo.task_suite.load_suites import get_suites
        from agentdojo.task_suite.task_suite import read_suite_file
    finally:
        for name in lent:
            del sys.modules[name]
    return types.SimpleNamespace(
        get_suites=get_suites,
        load_attack=load_attack,
        read_suite_file=read_suite_file,
        FunctionCall=FunctionCall,
        FunctionsRuntime=FunctionsRuntime,
        GroundTruthPipeline=GroundTruthPipeline,
    )


@lru_cache(maxsize=1)
def package_version() -> str:
    """AgentDojo's installed version, read once: every task of a suite records it, and
    reading a distribution's metadata scans the installed packages."""
    try:
        return version("agentdojo")
    except PackageNotFoundError:
        raise SourceError(MISSING_EXTRA) from None


@lru_cache(maxsize=32)
def suite(benchmark: str, name: str) -> Any:
    """AgentDojo's TaskSuite `name` of benchmark version `benchmark`."""
    suites = agentdojo().get_suites(benchmark)
    if not suites:
        raise SourceError(f"AgentDojo {package_version()} has no benchmark version {benchmark!r}")
    if name not in suites:
        raise SourceError(
            f"AgentDojo {benchmark} has no suite {name!r} (one of {', '.join(suites)})"
        )
    return suites[name]


def numbered(tasks: dict[str, Any]) -> list[str]:
    """Task ids (`user_task_10`) in their numeric order."""
    return sorted(tasks, key=lambda key: int(key.rsplit("_", 1)[1]))


@lru_cache(maxsize=32)
def vector_defaults(benchmark: str, name: str) -> dict[str, str]:
    return dict(suite(benchmark, name).get_injection_vector_defaults())


@lru_cache(maxsize=8)
def _attack(benchmark: str, name: str, attack: str) -> Any:
    """An attack that needs no model (AgentDojo's `direct` needs none), finding the
    vectors a user task sees on an environment parsed with libyaml (`_candidates`)."""
    found = agentdojo().load_attack(attack, suite(benchmark, name), None)
    canaries = dict(found.canary_injections)
    found.get_injection_candidates = lambda user_task: _candidates(
        benchmark, name, user_task.ID, tuple(canaries.items())
    )
    return found


@lru_cache(maxsize=256)
def _candidates(
    benchmark: str, name: str, user_task: str, canaries: tuple[tuple[str, str], ...]
) -> list[str]:
    """The injection vectors whose canary a user task's ground truth shows the agent, as
    AgentDojo's `BaseAttack.get_injection_candidates` finds them, on the environment its
    loader would build (a quarter of a second of pure-Python YAML for workspace, once per
    user task: as long as a few of proctor's trials)."""
    from agentdojo.types import get_text_content_as_str

    ad, task_suite = agentdojo(), suite(benchmark, name)
    task = task_suite.get_user_task_by_id(user_task)
    env = task_suite.environment_type.model_validate(
        environment_data(benchmark, name, dict(canaries))
    )
    runtime = ad.FunctionsRuntime(task_suite.tools)
    _, _, _, responses, _ = ad.GroundTruthPipeline(task).query(task.PROMPT, runtime, env)
    shown = [get_text_content_as_str(r["content"]) for r in responses if r["content"] is not None]
    found = [vector for vector, canary in canaries if any(canary in text for text in shown)]
    if not found:
        raise ValueError(f"{user_task} is not injectable.")
    return found


@lru_cache(maxsize=4096)
def _injections(
    benchmark: str, name: str, user_task: str, injection_task: str, attack: str
) -> dict[str, str]:
    task_suite = suite(benchmark, name)
    placed = _attack(benchmark, name, attack).attack(
        task_suite.get_user_task_by_id(user_task),
        task_suite.get_injection_task_by_id(injection_task),
    )
    return dict(placed)


def injections(
    benchmark: str, name: str, user_task: str, injection_task: str | None, attack: str
) -> dict[str, str]:
    """The attack text in every injection vector the user task's ground truth sees."""
    if injection_task is None:
        return {}
    return dict(_injections(benchmark, name, user_task, injection_task, attack))


def environment_data(benchmark: str, name: str, placed: dict[str, str]) -> Any:
    """The suite's environment with `placed` injections (the others at their defaults),
    parsed from AgentDojo's YAML as AgentDojo parses it, not yet validated."""
    return parse("".join(environment_texts(benchmark, name, placed).values()))


def environment_texts(benchmark: str, name: str, placed: dict[str, str]) -> dict[str, str]:
    """The YAML text of the suite's environment with `placed` injections (the others at
    their defaults), as AgentDojo formats it, cut at its top-level keys: key → its text.
    Joined, they are AgentDojo's text; each parses to a mapping of its key alone unless
    an injection breaks out of its value (the caller parses the whole text then)."""
    defaults = vector_defaults(benchmark, name)
    unknown = sorted(set(placed) - set(defaults))
    if unknown:
        raise ValueError(f"no injection vector {', '.join(unknown)} in suite {name}")
    values = {**defaults, **placed}
    return {key: text.format(**values) for key, text in _template(benchmark, name)}


@lru_cache(maxsize=32)
def _template(benchmark: str, name: str) -> tuple[tuple[str, str], ...]:
    """AgentDojo's environment template (before formatting) cut before each line that
    starts a top-level key (`"inbox":`); the first piece holds what precedes it."""
    text = agentdojo().read_suite_file(name, "environment.yaml", suite(benchmark, name).data_path)
    starts = [(m.start(), m.group(1)) for m in _TOP_KEY.finditer(text)]
    if not starts:
        return (("", text),)
    cuts = [0, *(at for at, _ in starts[1:]), len(text)]
    pieces = zip(starts, cuts[:-1], cuts[1:], strict=True)
    return tuple((key, text[a:b]) for (_, key), a, b in pieces)


def parse(text: str) -> Any:
    """YAML as AgentDojo reads it (`yaml.safe_load`), with libyaml when present."""
    return yaml.load(text, Loader=_Loader)


@lru_cache(maxsize=1)
def system_message() -> str:
    """AgentDojo's default system message, which its pipelines give every model."""
    text = (files("agentdojo") / "data" / "system_messages.yaml").read_text(encoding="utf-8")
    return str(yaml.safe_load(text)["default"])

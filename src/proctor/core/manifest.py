"""Manifest: every version a run involved, as a typed, versioned record (docs/architecture.md,
Verdicts: every run records a manifest).

`run/manifest_build.build_manifest` makes one when a run starts, and the parts of a run that know
more add to it with `model_copy(update=...)` (the runner's judges and user model, a
resumption, an import's or a replay's notes); `Manifest.from_json` reads any stored one (an
older one lacks keys added since: those are None or empty, never made up). `to_json` gives
back exactly the keys it was given, in their order, a key added by `model_copy` after them,
as the dict it used to be kept in did: stored runs and exports are unchanged, byte for
byte. The agent's settings, the judges' description, the user model's identity, the
currency, the filters and the import/replay notes are free-form dicts: each is written
by the part that owns it (an agent, judge/, run/simulator.py, the commands) in its own shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from pydantic import ConfigDict, Field, ModelWrapValidatorHandler, PrivateAttr, model_validator

from proctor.core.summary import Migration, Record, migrated

#: The layout `build_manifest` writes. 1: also the manifests stored before versions were
#: recorded (their layout is this one, less keys added later).
MANIFEST_VERSION = 1


class AgentInfo(Record):
    """The agent: name and version as it reports them, the reference it was loaded from."""

    name: str
    version: str | None = None
    ref: str | None = None
    #: The agent's own settings (its model, temperature, misbehaviour rates...): free-form.
    settings: dict[str, Any] = Field(default_factory=dict)


class SuiteInfo(Record):
    """The suite run: its content digest, each task's digest, where it was loaded from."""

    name: str
    paths: list[str] = Field(default_factory=list)  # what `proctor regrade` reloads
    digest: str
    tasks: int | None = None
    task_digests: dict[str, str] = Field(default_factory=dict)
    domains: dict[str, str] = Field(default_factory=dict)
    splits: list[str] = Field(default_factory=list)
    #: Digest of the holdout tasks run (None: none), so `compare` counts looks at them.
    holdout_digest: str | None = None


class Host(Record):
    name: str
    python: str | None = None
    platform: str | None = None


class Resumption(Record):
    """One resumption of an interrupted run (run/resume.py)."""

    at: str
    host: str
    executor: str


class Manifest(Record):
    """A run's manifest: agent, model, prompts, tools, policy, suite, graders, judges,
    user model, seed, trials and host."""

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)

    run_id: str | None = None
    created_at: str | None = None
    agent: AgentInfo
    model: str | None = None
    prompt_hash: str | None = None  # the system prompt and every task's prompt
    #: The agent's own system prompt (None: a manifest from before it was recorded).
    system_prompt_hash: str | None = None
    tool_schema_hash: str | None = None
    policy_hash: str | None = None
    suite: SuiteInfo
    holdout: bool = False
    grader_versions: dict[str, str] = Field(default_factory=dict)
    judge_model: str | None = None
    #: The judge panel's description (judge/: rubrics, models, calibration): free-form.
    judges: dict[str, Any] | None = None
    #: The model playing the users (run/simulator.py's identity): free-form.
    user_model: dict[str, Any] | None = None
    #: The judge of the simulated user's fidelity (proctor.run.fidelity), its standing.
    user_fidelity: dict[str, Any] | None = None
    #: The currency reports and gates convert costs to (decide/: its own dict).
    currency: dict[str, Any] | None = None
    proctor_version: str | None = None
    seed: int | None = None
    trials: int  # per task
    timeout_s: float | None = None
    concurrency: int | None = None
    executor: str | None = None
    #: The selection as the command was given it (tags, ids; an import's source): free-form.
    filters: dict[str, Any] = Field(default_factory=dict)
    run_faults: list[dict[str, Any]] = Field(default_factory=list)
    host: Host | None = None
    resumes: list[Resumption] = Field(default_factory=list)
    regraded_from: str | None = None  # the run `proctor regrade` graded again
    #: `proctor replay`'s and `proctor import`'s notes (sessions, skipped checks): free-form.
    replay: dict[str, Any] | None = None
    import_: dict[str, Any] | None = Field(None, alias="import")
    manifest_version: int = MANIFEST_VERSION
    #: The JSON keys in the order given, then added: the order `to_json` writes them in.
    _order: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _keep_order(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        manifest = handler(data)
        if isinstance(data, Mapping):
            manifest._order = tuple(_json_key(str(key)) for key in data)
        return manifest

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with `update` (field names, typed values): a key it adds goes after the
        others, a key it changes keeps its place."""
        copied = super().model_copy(update=update, deep=deep)
        added = [_json_key(name) for name in update or {}]
        copied._order = (*self._order, *(key for key in added if key not in self._order))
        return copied

    def __eq__(self, other: object) -> bool:
        """Equal when they say the same: the key order (`_order`) is how a manifest was
        written, not what it records."""
        if not isinstance(other, Manifest):
            return NotImplemented
        return (
            self.__dict__ == other.__dict__ and self.__pydantic_extra__ == other.__pydantic_extra__
        )

    __hash__ = Record.__hash__

    def to_json(self) -> dict[str, Any]:
        """The JSON form: the keys this manifest was made from (and given since), in order."""
        dumped = super().to_json()
        ordered = {key: dumped[key] for key in self._order if key in dumped}
        return {**ordered, **dumped}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Manifest:
        """A stored manifest of any version, migrated to this one."""
        return cls.model_validate(
            migrated(data, "manifest_version", MANIFEST_VERSION, MIGRATIONS, "manifest")
        )


def _json_key(name: str) -> str:
    """A field's JSON key (`import_` is `import`); other keys are their own."""
    field = Manifest.model_fields.get(name)
    return field.alias if field is not None and field.alias else name


#: version → the step that turns a manifest of that version into the next (none yet).
MIGRATIONS: dict[int, Migration] = {}


def manifest_schema() -> dict[str, Any]:
    """JSON Schema of a run manifest (`proctor run --json`'s `manifest`)."""
    schema = Manifest.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "proctor run manifest"
    return schema


__all__ = ["MANIFEST_VERSION", "AgentInfo", "Manifest", "SuiteInfo", "manifest_schema"]

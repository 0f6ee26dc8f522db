"""AgentDojo environments as JSON and back, exactly.

A trial's state is JSON (docs/architecture.md, Verdicts: isolation); an AgentDojo
environment is a pydantic model whose fields (`inbox`, `bank_account`, ...) are the parts
its tools depend on. Dumping a part is exact. Loading one is not quite: AgentDojo's
Inbox, Calendar and CloudDrive rebuild their live dicts (`emails`, `events`, `files`)
from their initial lists whenever they are validated, so sent, created and deleted items
would vanish. After validation those dicts (and the trash) are restored from the JSON and
each initial item pointed at its live twin, as in an environment AgentDojo loaded itself.

Validating an inbox checks every e-mail address, most of the time a workspace load takes.
A part is therefore kept by its JSON text when it is dumped or loaded, and whoever loads
that text again gets a deep copy (as AgentDojo copies its pre-task environment). It is
kept pickled: a copy is then one `pickle.loads`, and the kept parts are bytes, which the
garbage collector never walks (kept as models, they made each full collection of a run
twice AgentDojo's).
"""

from __future__ import annotations

import hashlib
import marshal
import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Generic, TypeVar, cast

from pydantic import BaseModel, TypeAdapter

from proctor.core.jsonvalues import canonical

#: AgentDojo's containers that rebuild a live dict from an initial list when validated:
#: class name -> (initial list, live dict, other dicts an initial item may have moved to).
_REBUILT = {
    "Inbox": ("initial_emails", "emails", ("trash",)),
    "Calendar": ("initial_events", "events", ()),
    "CloudDrive": ("initial_files", "files", ()),
}
K = TypeVar("K")
V = TypeVar("V")
#: Parts kept by their JSON text (a workspace part is about a megabyte in memory).
KEPT = 128


class Kept(Generic[K, V]):
    """The last `size` values put, by key (least recently used out); thread-safe."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.items: OrderedDict[K, V] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self.lock:
            found = self.items.get(key)
            if found is not None:
                self.items.move_to_end(key)
            return found

    def put(self, key: K, value: V) -> None:
        with self.lock:
            self.items[key] = value
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)


#: Decoded parts, pickled, by (environment type, part, digest of their JSON text).
_kept: Kept[tuple[str, str, bytes], bytes] = Kept(KEPT)


def _pickled(part: BaseModel) -> bytes:
    """A part as bytes that load to a deep copy keeping shared items shared, as
    `model_copy(deep=True)` copies; pickle does it in C, twice as fast."""
    return pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL)


def _key(kind: str, part: str, data: Any) -> tuple[str, str, bytes]:
    """A part's data by content: `marshal` bytes (fast, for JSON; version 0, which has no
    back-references or interned strings, so equal data gives equal bytes), else
    canonical text; hashed by SHA-256, which OpenSSL computes in hardware where the CPU
    can (twice blake2b's speed here, on a workspace part of about a megabyte)."""
    try:
        blob = marshal.dumps(data, 0)
    except ValueError:  # YAML data holds dates
        blob = canonical(data).encode()
    return kind, part, hashlib.sha256(blob).digest()


@lru_cache(maxsize=64)
def _adapter(annotation: Any) -> TypeAdapter[Any]:
    return TypeAdapter(annotation)


def _restore(model: BaseModel, data: Any) -> None:
    """Undo the rebuilding validators of AgentDojo's containers, anywhere in `model`."""
    if not isinstance(data, dict):
        return
    cls = type(model)
    spec = _REBUILT.get(cls.__name__) if cls.__module__.startswith("agentdojo.") else None
    if spec is not None:
        initial_name, live_name, others = spec
        pools = []
        for name in (live_name, *others):
            adapter = _adapter(cast(Any, cls.model_fields[name].annotation))
            pool = adapter.validate_python(data.get(name, {}))
            setattr(model, name, pool)
            pools.append(pool)
        initial = getattr(model, initial_name)
        for i, item in enumerate(initial):
            twin = next((pool[item.id_] for pool in pools if item.id_ in pool), None)
            if twin is not None:
                initial[i] = twin
    for name in cls.model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            _restore(value, data.get(name))


class Codec:
    """Dumps and loads the environments of one AgentDojo environment type."""

    def __init__(self, env_type: type[BaseModel]) -> None:
        self.env_type = env_type
        self.name = f"{env_type.__module__}.{env_type.__qualname__}"
        self.parts: dict[str, Any] = {n: f.annotation for n, f in env_type.model_fields.items()}

    def _part(self, kind: str, part: str, data: Any) -> Any:
        """A part of its own (a deep copy) validated from `data`; JSON (`kind` "json")
        has the rebuilt containers restored, AgentDojo's YAML data ("yaml") does not."""
        key = _key(f"{self.name}:{kind}", part, data)
        found = _kept.get(key)
        if found is not None:
            return pickle.loads(found)
        value = _adapter(self.parts[part]).validate_python(data)
        if isinstance(value, BaseModel):
            if kind == "json":
                _restore(value, data)
            _kept.put(key, _pickled(value))
        return value

    def dump_part(self, part: str, value: Any) -> Any:
        """The JSON of one part (the part is kept, as it is now, unless a part with the
        same JSON is: after a call that read it, say)."""
        data = _adapter(self.parts[part]).dump_python(value, mode="json")
        if isinstance(value, BaseModel):
            key = _key(f"{self.name}:json", part, data)
            if _kept.get(key) is None:
                _kept.put(key, _pickled(value))
        return data

    def load_part(self, part: str, data: Any) -> Any:
        """A part of its own from its JSON."""
        return self._part("json", part, data)

    def dump(self, env: BaseModel) -> dict[str, Any]:
        """The JSON of a whole environment (its parts kept, as they are now)."""
        return {part: self.dump_part(part, getattr(env, part)) for part in self.parts}

    def load(self, state: dict[str, Any]) -> Any:
        """An environment of its own from a trial's state; ValueError when the state is not
        one (an imported session that recorded no final state)."""
        missing = [part for part in self.parts if part not in state]
        if missing:
            raise ValueError(f"the state holds no AgentDojo environment (no {', '.join(missing)})")
        return self._construct({part: self.load_part(part, state[part]) for part in self.parts})

    def build(self, data: dict[str, Any]) -> Any:
        """An environment from AgentDojo's parsed YAML, as validating it would give; the
        parts an injection did not touch are the ones validated before, copied."""
        return self._construct({part: self._part("yaml", part, data[part]) for part in self.parts})

    def build_texts(self, texts: dict[str, str], parse: Callable[[str], Any]) -> Any:
        """`build` from the YAML text of each part (`{"inbox": 'inbox: ...'}`), parsing
        only the parts whose text was not seen before (those an injection touched); None
        when a text is not its part alone (an injection broke out of its value)."""
        if set(texts) != set(self.parts):
            return None
        parts = {}
        for part, text in texts.items():
            key = (f"{self.name}:yaml-text", part, hashlib.blake2b(text.encode()).digest())
            found = _kept.get(key)
            if found is not None:
                parts[part] = pickle.loads(found)
                continue
            data = parse(text)
            if not isinstance(data, dict) or list(data) != [part]:
                return None
            parts[part] = self._part("yaml", part, data[part])
            if isinstance(parts[part], BaseModel):
                _kept.put(key, _pickled(parts[part]))
        return self._construct(parts)

    def _construct(self, parts: dict[str, Any]) -> Any:
        return self.env_type.model_construct(**parts)  # validating would rebuild the parts

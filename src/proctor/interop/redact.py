"""Redaction: secrets and personal data never reach the store, the exports or the reports.

A `Redactor` is applied where a trial is written (`Store(path, redactor=...)`) and where
traces are exported; reports and exports read what was stored. Grading has already run
on the real values. Three kinds of rule, each replacing what it finds by a mask
(`[REDACTED:email]`) or a salted hash (`[email:3f2a9c01b7e4]`, equal values hash equal;
the salt must be a secret of MIN_SALT characters or more, since without one a hash of a
low-entropy value such as a card or an SSN is reversed by hashing every candidate):

- `paths`: tool arguments, `TOOL:ARG.PATH` (`payments.charge:card.number`, `*:password`;
  `*` matches one path segment or any tool). A value found this way is also replaced
  wherever else it appears in the same trial (the state it was written to, the answer,
  a state key it became).
- `detectors`: `email`, `card` (Luhn-valid), `national_id`, `key` (API keys and tokens),
  `iban`, `private_key`, `password`:
  the safety grader's own detectors, so what it would flag is what gets redacted.
- `patterns`: regular expressions of your own, in RE2 syntax and matched by RE2 like a
  task's regexes (proctor.tasks.regex): time linear in the text, so a pattern that
  backtracks cannot hang the store's writer; one RE2 refuses is a load error.

Every text is redacted: strings, mapping keys, and numbers (a card stored as a JSON number
becomes the redacted text). Two keys masked alike keep both entries (`#` suffixes).

Config (YAML/JSON, the mapping itself or under a `redact:` key):

    mode: mask            # or hash
    salt: ...             # for hash: a secret of 16 characters or more (refused without)
    detectors: [email, card, key]
    patterns: ['ACME-\\d{6}']
    paths: ['*:password', 'payments.charge:card_number']
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from proctor.core.documents import SpecError, issues_from_validation, read_document
from proctor.core.outcome import Outcome
from proctor.core.results import Check, TrialResult
from proctor.core.trace import Trace, TraceEvent
from proctor.grade.safety import find_secrets
from proctor.tasks.regex import compile_pattern

REDACT_ENV = "PROCTOR_REDACT"
Detector = Literal["email", "card", "national_id", "key", "iban", "private_key", "password"]
#: Detector names in configs → the names `find_secrets` reports.
DETECTORS: dict[Detector, str] = {
    "email": "email",
    "card": "card",
    "national_id": "national_id",
    "key": "api_key",
    "iban": "iban",
    "private_key": "private_key",
    "password": "password",
}
#: Values found by a path rule shorter than this are not hunted for elsewhere (a `2`
#: would blank every other 2 in the trial).
MIN_PROPAGATED = 4
#: The fewest digits a detector can find a secret in (a card number has 13 to 19).
MIN_SECRET_DIGITS = 13
#: The shortest salt hash mode takes: without a secret salt of some length, a hash of a
#: 16-digit card (a few billion valid numbers per issuer prefix) is found by trying them.
MIN_SALT = 16
#: What a boolean argument looks like as text: never a secret to hunt for.
BOOLEANS = frozenset({"True", "False"})


class RedactConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["mask", "hash"] = "mask"
    salt: Annotated[str, Field(validate_default=True)] = ""
    detectors: list[Detector] = Field(default_factory=lambda: list(DETECTORS))
    patterns: list[str] = Field(default_factory=list)
    paths: list[str] = Field(default_factory=list)

    @field_validator("salt")
    @classmethod
    def _secret_salt(cls, salt: str, info: ValidationInfo) -> str:
        if info.data.get("mode") == "hash" and len(salt) < MIN_SALT:
            raise ValueError(
                f"hash mode needs a secret salt of at least {MIN_SALT} characters: a hash of "
                "a value with few possibilities (a card, an SSN, an e-mail) is reversed by "
                "hashing every candidate; give `salt` (random, kept out of the repository) "
                "or use mode: mask"
            )
        return salt

    @field_validator("patterns")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for p in patterns:
            try:
                compile_pattern(p)
            except ValueError as exc:
                raise ValueError(f"pattern {p!r} does not compile: {exc}") from None
        return patterns

    @field_validator("paths")
    @classmethod
    def _tool_and_path(cls, paths: list[str]) -> list[str]:
        for p in paths:
            tool, sep, arg = p.partition(":")
            if not sep or not tool or not arg:
                raise ValueError(f"path {p!r}: expected TOOL:ARG.PATH (TOOL may be *)")
        return paths


class Redactor:
    def __init__(self, config: RedactConfig | None = None) -> None:
        self.config = config or RedactConfig()
        self._detectors = {DETECTORS[d] for d in self.config.detectors}
        self._patterns = [compile_pattern(p) for p in self.config.patterns]
        self._paths = [
            (tool, arg.split(".")) for tool, _, arg in (p.partition(":") for p in self.config.paths)
        ]

    @classmethod
    def load(cls, path: str | Path) -> Redactor:
        """From a YAML/JSON file; a bad file is a ValueError: its first `file:line: message`."""
        path = Path(path)
        try:
            data, lines = read_document(path)
        except SpecError as exc:
            raise ValueError(exc.lines()[0]) from None
        prefix: tuple[str, ...] = ()
        if isinstance(data, dict) and "redact" in data:
            data, prefix = data["redact"] or {}, ("redact",)
        try:
            return cls(RedactConfig.model_validate(data))
        except ValidationError as exc:
            problems = issues_from_validation(path, exc, data, lines, prefix)
            raise ValueError(SpecError(problems).lines()[0]) from None

    @classmethod
    def from_env(cls) -> Redactor | None:
        path = os.environ.get(REDACT_ENV)
        return cls.load(path) if path else None

    # -- replacing -----------------------------------------------------------------

    def _token(self, label: str, value: str) -> str:
        if self.config.mode == "hash":
            h = hashlib.sha256((self.config.salt + value).encode()).hexdigest()[:12]
            return f"[{label}:{h}]"
        return f"[REDACTED:{label}]"

    def text(self, text: str, literals: frozenset[str] = frozenset()) -> str:
        """`text` with every literal, pattern match and detector hit replaced."""
        for literal in sorted(literals, key=len, reverse=True):
            if literal in text:
                text = text.replace(literal, self._token("path", literal))
        for pattern in self._patterns:
            text = pattern.sub(lambda m: self._token("pattern", m.group(0)), text)
        for hit in find_secrets(text, []):
            if hit["detector"] in self._detectors:
                text = text.replace(hit["match"], self._token(hit["detector"], hit["match"]))
        return text

    def value(self, value: Any, literals: frozenset[str] = frozenset()) -> Any:
        """A JSON value redacted throughout, keys and numbers included; a `{tool, args}`
        mapping (a proposal, a ledger entry, a call in check evidence) has its path rules
        applied first."""
        if isinstance(value, str):
            return self.text(value, literals)
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, int | float):
            return self._number(value, literals)
        if isinstance(value, list):
            return [self.value(v, literals) for v in value]
        if isinstance(value, dict):
            tool, args = value.get("tool"), value.get("args")
            if isinstance(tool, str) and isinstance(args, dict):
                value = {**value, "args": self._masked_args(tool, args)}
            out: dict[Any, Any] = {}
            for k, v in value.items():
                key = self.value(k, literals) if isinstance(k, str | int | float) else k
                while key in out:  # two secrets masked alike: both entries stay
                    key = f"{key}#"
                out[key] = self.value(v, literals)
            return out
        return value

    def _number(self, number: float, literals: frozenset[str]) -> Any:
        """A number whose digits are a secret (a card stored as a JSON number, a path
        value written into the state) becomes the redacted text; others stay numbers."""
        digits = _scalar_text(number)
        if digits in literals:
            return self._token("path", digits)
        if self._patterns or len(digits) >= MIN_SECRET_DIGITS:  # detectors need 13 digits
            redacted = self.text(digits, literals)
            if redacted != digits:
                return redacted
        return number

    def _rules_for(self, tool: str) -> list[list[str]]:
        return [path for pattern, path in self._paths if pattern in ("*", tool)]

    def _masked_args(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        out = args
        for path in self._rules_for(tool):
            out = _at_path(out, path, lambda v: self._token("path", str(v)))
        return out

    def _literals(self, trace: Trace) -> frozenset[str]:
        """Values at argument paths in this trial, to be hunted for everywhere else."""
        found = [
            value
            for e in trace.of_kind("tool_proposal")
            for path in self._rules_for(str(e.data.get("tool")))
            for value in _values_at(e.data.get("args"), path)
        ]
        texts = (_scalar_text(v) for v in found if isinstance(v, str | int | float))
        return frozenset(t for t in texts if len(t) >= MIN_PROPAGATED and t not in BOOLEANS)

    def path_values(self, trace: Trace) -> frozenset[str]:
        """The values at argument paths in a trial: redacted wherever else they appear
        in it (and in what is made from it, such as a promoted task)."""
        return self._literals(trace)

    # -- whole trials ----------------------------------------------------------------

    def trace(self, trace: Trace, literals: frozenset[str] | None = None) -> Trace:
        lit = self._literals(trace) if literals is None else literals
        events = [TraceEvent(e.seq, e.t, e.kind, self.value(e.data, lit)) for e in trace.events]
        return Trace(trace.trial_id, trace.trace_id, events)

    def outcome(self, outcome: Outcome, literals: frozenset[str] = frozenset()) -> Outcome:
        ledger = [
            replace(
                entry,
                args=self.value({"tool": entry.tool, "args": entry.args}, literals)["args"],
                entity=None if entry.entity is None else self.text(entry.entity, literals),
            )
            for entry in outcome.ledger
        ]
        return Outcome(self.value(outcome.final_state, literals), ledger)

    def trial(
        self, result: TrialResult, trace: Trace, answer: str, outcome: Outcome | None
    ) -> tuple[Trace, str, Outcome | None]:
        """A trial as it may be stored. `result` is redacted in place (its checks' names
        and evidence, its error), so summaries and reports built from it carry no secret."""
        literals = self._literals(trace)
        result.checks = [
            Check(
                self.text(c.name, literals),  # `not_mentions:PHRASE` names its phrase
                c.kind,
                c.passed,
                c.score,
                c.severity,
                self.value(c.evidence, literals),
            )
            for c in result.checks
        ]
        if result.error:
            result.error = self.text(result.error, literals)
        return (
            self.trace(trace, literals),
            self.text(answer, literals),
            None if outcome is None else self.outcome(outcome, literals),
        )


def _scalar_text(value: str | float) -> str:
    """A string, or a number as written in text (`4111111111111111.0` as its digits)."""
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e19:
        return str(int(value))
    return str(value)


def _at_path(node: Any, path: list[str], fn: Any) -> Any:
    """A copy of `node` with `fn` applied to the values at `path` (`*`: any key or index)."""
    if not path:
        return fn(node)
    head, rest = path[0], path[1:]
    if isinstance(node, dict):
        return {k: _at_path(v, rest, fn) if head in ("*", k) else v for k, v in node.items()}
    if isinstance(node, list):
        return [_at_path(v, rest, fn) if head in ("*", str(i)) else v for i, v in enumerate(node)]
    return node


def _values_at(node: Any, path: list[str]) -> list[Any]:
    if not path:
        return [node]
    head, rest = path[0], path[1:]
    if isinstance(node, dict):
        children = [v for k, v in node.items() if head in ("*", k)]
    elif isinstance(node, list):
        children = [v for i, v in enumerate(node) if head in ("*", str(i))]
    else:
        return []
    return [found for child in children for found in _values_at(child, rest)]

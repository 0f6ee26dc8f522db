"""Argument and value predicates: expectations are predicates, not bytes.

Every place a task file states a value (call arguments, `equals`, `where`, `count`,
fault selectors, reference trajectories) holds a predicate, parsed and validated once
when the task loads (docs/architecture.md, Verdicts); graders only call `test`.

- A **literal** means equality after normalisation: strings trimmed and case-folded,
  `true` never equal to `1`, numbers by value within a relative tolerance of 1e-9 (and
  1e-12 absolute, so a sum that should be 0 is 0). Inside a literal list or mapping each
  item is a predicate again; a literal mapping has exactly the keys it names.
- A mapping with a `$` key holds **operators** only, which must all hold: `$regex`
  (RE2 syntax, searched), `$in`, `$nin`, `$gte`, `$gt`, `$lte`, `$lt`, `$ne`,
  `$contains`, `$any` (present or not), `$approx` (with `tol`, absolute, and/or `rel`,
  relative) and `$eq` (its operand compared literally, `$` keys included).

An unknown operator, an operand of the wrong type, a bad regex or a NaN is a
`PredicateError` at load: a typo must never turn a rule into a literal that never matches.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema

from proctor.core.jsonvalues import MISSING, canonical
from proctor.tasks.regex import compile_pattern

#: Default tolerance of numbers compared for equality.
REL_TOL = 1e-9
ABS_TOL = 1e-12


class PredicateError(ValueError):
    """A predicate that cannot be parsed; the message says where inside it and why."""


def normalize(value: Any) -> Any:
    """Normal form for literal comparison: trimmed, case-folded strings."""
    if isinstance(value, str):
        return " ".join(value.split()).casefold()
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [normalize(v) for v in value]
    return value


def number(value: Any) -> int | float | None:
    """`value` when it is a number (booleans are not), else None."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    return None


def numbers_close(a: float, b: float, rel: float = REL_TOL, abs_: float = ABS_TOL) -> bool:
    """Equal numbers: integers exactly, anything else within the tolerance."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


def _scalar_equal(actual: Any, expected: Any) -> bool:
    if isinstance(expected, str):
        return isinstance(actual, str) and normalize(actual) == normalize(expected)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(actual, bool) and isinstance(expected, bool) and actual == expected
    a, e = number(actual), number(expected)
    if a is not None and e is not None:
        return numbers_close(a, e)
    return expected is None and actual is None


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Predicate:
    """A parsed predicate; `source` is the value as written (what the task file holds)."""

    source: Any

    def test(self, actual: Any) -> bool:
        """Does `actual` (MISSING when absent) satisfy this predicate?"""
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Predicate) or type(other) is not type(self):
            return NotImplemented
        return canonical(self.source) == canonical(other.source)

    def __hash__(self) -> int:
        return hash(canonical(self.source))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.source!r})"

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            parse_predicate,
            serialization=core_schema.plain_serializer_function_ser_schema(lambda p: p.source),
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {"description": "a value (compared after normalisation) or {$operator: operand}"}


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Equal(Predicate):
    """A scalar literal: a string, a number, a boolean or null."""

    def test(self, actual: Any) -> bool:
        source = self.source
        if type(actual) is type(source):
            if actual == source:
                return True  # the same value, of the same type: the same after normalising
            if type(source) in _EXACT:
                return False  # an int, a bool, a null: no normal form or tolerance
        return actual is not MISSING and _scalar_equal(actual, source)


#: The types whose values `_scalar_equal` finds equal to a value of the same type only
#: when `==` does (integers are compared exactly: `numbers_close`).
_EXACT = frozenset({int, bool, type(None)})


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Items(Predicate):
    """A literal list: as many items, each satisfying its predicate."""

    items: list[Predicate]

    def test(self, actual: Any) -> bool:
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(self.items)
            and all(p.test(a) for p, a in zip(self.items, actual, strict=True))
        )


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Fields(Predicate):
    """A literal mapping: exactly these keys, each value satisfying its predicate."""

    fields: dict[str, Predicate]

    def test(self, actual: Any) -> bool:
        return (
            isinstance(actual, dict)
            and actual.keys() == self.fields.keys()
            and all(p.test(actual[k]) for k, p in self.fields.items())
        )


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class AllOf(Predicate):
    """An operator mapping: every operator holds."""

    operators: list[Predicate]

    def test(self, actual: Any) -> bool:
        return all(op.test(actual) for op in self.operators)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Present(Predicate):
    """`$any: true` (the value is there, even null) or `$any: false` (it is absent)."""

    flag: bool

    def test(self, actual: Any) -> bool:
        return (actual is not MISSING) == self.flag


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Regex(Predicate):
    """`$regex`: a string in which the pattern is found (RE2, linear time)."""

    pattern: str

    def test(self, actual: Any) -> bool:
        return isinstance(actual, str) and compile_pattern(self.pattern).search(actual) is not None


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class OneOf(Predicate):
    """`$in` (some option holds) and `$nin` (none does; an absent value is in none)."""

    options: list[Predicate]
    negate: bool

    def test(self, actual: Any) -> bool:
        found = actual is not MISSING and any(o.test(actual) for o in self.options)
        return found != self.negate


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Not(Predicate):
    """`$ne`: the value does not satisfy the operand (an absent value differs from any)."""

    inner: Predicate

    def test(self, actual: Any) -> bool:
        return actual is MISSING or not self.inner.test(actual)


_ORDER: dict[str, Callable[[float, float], bool]] = {
    "$gte": lambda a, b: a >= b,
    "$gt": lambda a, b: a > b,
    "$lte": lambda a, b: a <= b,
    "$lt": lambda a, b: a < b,
}


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Compare(Predicate):
    """`$gte`, `$gt`, `$lte`, `$lt` on numbers; a value equal to the bound within the
    tolerance is equal (so 0.1 + 0.2 satisfies `$lte: 0.3`)."""

    op: str
    bound: float

    def test(self, actual: Any) -> bool:
        a = number(actual)
        if a is None:
            return False
        if numbers_close(a, self.bound):
            return self.op in ("$gte", "$lte")
        return _ORDER[self.op](a, self.bound)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Approx(Predicate):
    """`$approx: X` with `tol` (absolute) and/or `rel` (relative); neither: the default.

    A value at the edge is in, as `$gte`/`$lte` take their bound: 0.8 is within 0.1 of
    0.7 though the float difference is 0.10000000000000009."""

    target: float
    tol: float
    rel: float

    def test(self, actual: Any) -> bool:
        a = number(actual)
        if a is None:
            return False
        gap = abs(a - self.target)
        bound = max(self.tol, self.rel * max(abs(a), abs(self.target)))
        return gap <= bound or numbers_close(gap, bound)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Contains(Predicate):
    """`$contains`: a substring of a string (normalised), an item of a list satisfying
    the operand, or a key of a mapping (a string operand)."""

    item: Predicate

    def test(self, actual: Any) -> bool:
        text = self.item.source if isinstance(self.item, Equal) else None
        if isinstance(actual, str):
            return isinstance(text, str) and normalize(text) in normalize(actual)
        if isinstance(actual, list):
            return any(self.item.test(x) for x in actual)
        if isinstance(actual, dict):
            return isinstance(text, str) and text in actual
        return False


OPERATORS = (
    "$regex",
    "$in",
    "$nin",
    "$gte",
    "$gt",
    "$lte",
    "$lt",
    "$ne",
    "$contains",
    "$any",
    "$approx",
    "$eq",
)
#: Plain keys allowed beside an operator: they qualify it.
MODIFIERS = {"tol": "$approx", "rel": "$approx"}


def _finite(op: str, value: Any, *, nonnegative: bool = False) -> float:
    n = number(value)
    if n is None or not math.isfinite(n):
        raise PredicateError(f"`{op}` takes a finite number, not {value!r}")
    if nonnegative and n < 0:
        raise PredicateError(f"`{op}` takes a number >= 0, not {value!r}")
    return n


def _inside(where: str, parse: Callable[[Any], Predicate], value: Any) -> Predicate:
    """Parse a nested value, naming where it sits when it fails."""
    try:
        return parse(value)
    except PredicateError as exc:
        raise PredicateError(f"in {where}: {exc}") from None


def _options(op: str, value: Any) -> list[Predicate]:
    if not isinstance(value, list | tuple):
        raise PredicateError(f"`{op}` takes a list of values, not {value!r}")
    return [_inside(f"`{op}`[{i}]", parse_predicate, v) for i, v in enumerate(value)]


def _operator(op: str, arg: Any, mapping: Mapping[str, Any]) -> Predicate:
    source = {op: arg}
    if op == "$any":
        if not isinstance(arg, bool):
            raise PredicateError(f"`$any` takes true or false, not {arg!r}")
        return Present(source, arg)
    if op == "$regex":
        if not isinstance(arg, str):
            raise PredicateError(f"`$regex` takes a pattern (a string), not {arg!r}")
        try:
            compile_pattern(arg)
        except ValueError as exc:
            raise PredicateError(str(exc)) from None
        return Regex(source, arg)
    if op in ("$in", "$nin"):
        return OneOf(source, _options(op, arg), negate=op == "$nin")
    if op == "$ne":
        return Not(source, _inside("`$ne`", parse_predicate, arg))
    if op == "$eq":
        return _inside("`$eq`", literal_predicate, arg)
    if op in _ORDER:
        return Compare(source, op, _finite(op, arg))
    if op == "$approx":
        tol = _finite("tol", mapping.get("tol", ABS_TOL), nonnegative=True)
        rel = _finite("rel", mapping.get("rel", REL_TOL), nonnegative=True)
        extra = {k: mapping[k] for k in MODIFIERS if k in mapping}
        return Approx({op: arg, **extra}, _finite(op, arg), tol, rel)
    # $contains
    if isinstance(arg, list | tuple):
        raise PredicateError(
            f"`$contains` takes one item (a string, a number or a mapping), not a list {arg!r}"
        )
    if isinstance(arg, str) and not arg.strip():
        raise PredicateError("`$contains` takes a non-empty string: an empty one is everywhere")
    return Contains(source, _inside("`$contains`", parse_predicate, arg))


def _operators(value: dict[Any, Any]) -> Predicate:
    ops: list[Predicate] = []
    for key in value:
        if key in MODIFIERS:
            if MODIFIERS[key] not in value:
                raise PredicateError(f"`{key}` qualifies `{MODIFIERS[key]}`, which is missing")
            continue
        if key not in OPERATORS:
            hint = difflib.get_close_matches(str(key), OPERATORS, n=1)
            known = f"did you mean `{hint[0]}`?" if hint else f"operators: {', '.join(OPERATORS)}"
            if not str(key).startswith("$"):
                raise PredicateError(
                    f"`{key}` beside an operator: a mapping with `$` keys holds operators "
                    "only (compare a mapping with `$` keys literally with `$eq`)"
                )
            raise PredicateError(f"unknown operator `{key}` ({known})")
        ops.append(_operator(key, value[key], value))
    return AllOf(value, ops)


def _check_keys(value: dict[Any, Any]) -> None:
    for key in value:
        if not isinstance(key, str):
            raise PredicateError(f"mapping keys are strings, not {key!r}")


def _scalar(value: Any) -> Predicate:
    if isinstance(value, float) and math.isnan(value):
        raise PredicateError("NaN equals nothing, itself included: use `$any` or a comparison")
    if value is None or isinstance(value, str | int | float | bool):
        return Equal(value)
    raise PredicateError(f"not a JSON value: {type(value).__name__}")


def literal_predicate(value: Any) -> Predicate:
    """A value compared literally: `$` keys are data here (the operand of `$eq`)."""
    if isinstance(value, dict):
        _check_keys(value)
        return Fields(value, {k: _inside(f"`{k}`", literal_predicate, v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return Items(value, [_inside(f"[{i}]", literal_predicate, v) for i, v in enumerate(value)])
    return _scalar(value)


def parse_predicate(value: Any) -> Predicate:
    """Parse a value as written in a task file into a Predicate (PredicateError if bad)."""
    if isinstance(value, Predicate):
        return value
    if isinstance(value, dict):
        _check_keys(value)
        if any(k.startswith("$") for k in value):
            return _operators(value)
        return Fields(value, {k: _inside(f"`{k}`", parse_predicate, v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        items = [_inside(f"[{i}]", parse_predicate, v) for i, v in enumerate(value)]
        return Items(value, items)
    return _scalar(value)


def matches(actual: Any, expected: Any) -> bool:
    """Does `actual` satisfy `expected` (a Predicate, or a value as a task file writes it)?"""
    return parse_predicate(expected).test(actual)


def args_match(actual: dict[str, Any], expected: Mapping[str, Any] | None) -> bool:
    """Each named argument satisfies its predicate; arguments not named are free."""
    if expected:
        for k, v in expected.items():
            predicate = v if isinstance(v, Predicate) else parse_predicate(v)  # parsed at load
            if not predicate.test(actual.get(k, MISSING)):
                return False
    return True


def written(args: Mapping[str, Predicate] | None) -> dict[str, Any] | None:
    """Argument predicates as the task file wrote them, for evidence (JSON)."""
    return None if args is None else {k: p.source for k, p in args.items()}


def mismatched_args(actual: dict[str, Any], expected: Mapping[str, Any] | None) -> list[str]:
    """Names of the expected arguments that `actual` does not satisfy, for evidence."""
    if not expected:
        return []
    return [k for k, v in expected.items() if not parse_predicate(v).test(actual.get(k, MISSING))]

"""The gate rule language: comparisons over named metrics, parsed by a small grammar.

Rules come from files a pull request can change, so they are never handed to `eval`:
a tokenizer and a recursive-descent parser accept only this grammar, and anything else
(attribute access, calls, strings, unknown characters) is a syntax error with a column.

    rule    := or
    or      := and ("or" and)*
    and     := not ("and" not)*
    not     := "not" not | compare
    compare := sum (("==" | "!=" | "<=" | ">=" | "<" | ">") sum)?
    sum     := product (("+" | "-") product)*
    product := unary (("*" | "/") unary)*
    unary   := "-" unary | atom
    atom    := NUMBER | NAME ("[" INTEGER "]")? | "(" rule ")"

Operands of `and`/`or`/`not` must be tests and operands of arithmetic and comparisons
must be numbers, so `not task_success_rate` is an error rather than a truthiness puzzle.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

MAX_LENGTH = 500
MAX_DEPTH = 40
KEYWORDS = {"and", "or", "not"}

_TOKEN = re.compile(
    r"\s*(?:(?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op>==|!=|<=|>=|[<>+\-*/()\[\]]))"
)
COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<=": operator.le,
    ">=": operator.ge,
    "<": operator.lt,
    ">": operator.gt,
}
_ARITH: dict[str, Callable[[float, float], float]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
}


class ExprError(ValueError):
    """A rule that is not in the grammar; the message names the column."""


@dataclass(frozen=True)
class Num:
    value: float


@dataclass(frozen=True)
class Name:
    """A metric, with its index folded into the name: `pass_hat_k[5]`."""

    name: str


@dataclass(frozen=True)
class Op:
    """A unary (`-`, `not`: `right` is None) or binary operation."""

    op: str
    left: Node
    right: Node | None = None


Node = Num | Name | Op


def _tokens(text: str) -> list[tuple[str, str, int]]:
    """(kind, text, column) triples; a character outside the grammar becomes a `bad` token
    so the parser reports the first problem in reading order (`open(` before `"os"`)."""
    out = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            pos = len(text) - len(text[pos:].lstrip())
            if pos < len(text):
                out.append(("bad", text[pos], pos + 1))
                pos += 1
            continue
        kind = match.lastgroup or ""
        out.append((kind, match.group(kind), match.start(kind) + 1))
        pos = match.end()
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.i = 0
        self.depth = 0

    def peek(self) -> tuple[str, str, int]:
        return self.tokens[self.i] if self.i < len(self.tokens) else ("end", "", 0)

    def take(self, *values: str) -> str | None:
        kind, value, _ = self.peek()
        if value in values and (kind == "op" or value in KEYWORDS):
            self.i += 1
            return value
        return None

    def fail(self, what: str) -> ExprError:
        kind, value, column = self.peek()
        if kind == "bad":
            hint = " (attribute access is not allowed)" if value == "." else ""
            return ExprError(f"unexpected {value!r} at column {column}{hint}")
        found = "end of rule" if kind == "end" else repr(value)
        where = f" at column {column}" if column else ""
        return ExprError(f"expected {what}, found {found}{where}")

    def parse(self) -> Node:
        node = self.or_()
        if self.peek()[0] != "end":
            raise self.fail("an operator or the end of the rule")
        return node

    def binary(self, ops: tuple[str, ...], operand: Callable[[], Node]) -> Node:
        node = operand()
        while (op := self.take(*ops)) is not None:
            node = Op(op, node, operand())
        return node

    def or_(self) -> Node:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExprError(f"rule nested deeper than {MAX_DEPTH} levels")
        node = self.binary(("or",), lambda: self.binary(("and",), self.not_))
        self.depth -= 1
        return node

    def not_(self) -> Node:
        if self.take("not"):
            return Op("not", self.not_())
        left = self.binary(("+", "-"), lambda: self.binary(("*", "/"), self.unary))
        op = self.take(*COMPARE)
        if op is None:
            return left
        right = self.binary(("+", "-"), lambda: self.binary(("*", "/"), self.unary))
        if self.peek()[1] in COMPARE:
            raise self.fail("'and' between comparisons (chained comparisons are ambiguous)")
        return Op(op, left, right)

    def unary(self) -> Node:
        if self.take("-"):
            return Op("-", self.unary())
        return self.atom()

    def atom(self) -> Node:
        kind, value, column = self.peek()
        if kind == "number":
            self.i += 1
            return Num(float(value))
        if kind == "name" and value not in KEYWORDS:
            self.i += 1
            if self.peek()[1] == "(":
                raise ExprError(f"calls are not allowed ({value}( at column {column})")
            if self.take("["):
                index_kind, index, _ = self.peek()
                if index_kind != "number" or not index.isdigit():
                    raise self.fail("an integer index")
                self.i += 1
                if not self.take("]"):
                    raise self.fail("']'")
                return Name(f"{value}[{int(index)}]")
            return Name(value)
        if self.take("("):
            node = self.or_()
            if not self.take(")"):
                raise self.fail("')'")
            return node
        raise self.fail("a number, a metric name or '('")


def _kind(node: Node) -> str:
    """`test` or `number`; a test where a number belongs (or back) is an error."""
    if not isinstance(node, Op):
        return "number"
    operands = [node.left] if node.right is None else [node.left, node.right]
    want = "test" if node.op in KEYWORDS else "number"
    for operand in operands:
        if _kind(operand) != want:
            raise ExprError(f"{node.op!r} needs {'tests' if want == 'test' else 'numbers'}")
    return "test" if node.op in KEYWORDS or node.op in COMPARE else "number"


def parse(text: str) -> Node:
    """Parse one rule; it must be a test (a comparison, or tests joined by and/or/not)."""
    if len(text) > MAX_LENGTH:
        raise ExprError(f"rule longer than {MAX_LENGTH} characters")
    node = _Parser(text).parse()
    if _kind(node) != "test":
        raise ExprError("a rule must be a test, e.g. `task_success_rate >= 0.85`")
    return node


def names(node: Node) -> set[str]:
    """The metric names a rule reads."""
    if isinstance(node, Name):
        return {node.name}
    if isinstance(node, Op):
        return names(node.left) | (names(node.right) if node.right is not None else set())
    return set()


def evaluate(node: Node, values: Mapping[str, float]) -> Any:
    """A test's truth, or an arithmetic value; every name must have a number."""
    if isinstance(node, Num):
        return node.value
    if isinstance(node, Name):
        return values[node.name]
    left = evaluate(node.left, values)
    if node.right is None:
        return (not left) if node.op == "not" else -left
    if node.op == "and":
        return left and evaluate(node.right, values)
    if node.op == "or":
        return left or evaluate(node.right, values)
    right = evaluate(node.right, values)
    if node.op in COMPARE:
        return COMPARE[node.op](left, right)
    if node.op == "/" and right == 0:
        raise ExprError("division by zero")
    return _ARITH[node.op](left, right)

"""Reference-trajectory matching: did the agent make the tool calls a reference expects?

A trajectory is a list of calls ``{"name": str, "args": dict}``. Graders compare an agent's
actual calls with a hand-written reference along two independent axes, chosen per check:
*order* (how the sequences must line up) and *args* (how much of each call must agree).

``order`` -- how the reference and actual call sequences must correspond:

=============  =====================================================================
mode           passes when
=============  =====================================================================
``exact``      same length; call ``i`` of actual matches call ``i`` of reference
``in_order``   reference is a subsequence of actual (extra calls allowed in between)
``any_order``  each reference call matches a distinct actual call; extras allowed
``superset``   same as ``any_order``: actual ⊇ reference as multisets of calls
``unordered``  a one-to-one matching of all calls, order ignored; lengths equal
``subset``     each actual call matches a distinct reference call (actual ⊆ reference):
               the agent made no call outside the reference but may have skipped some
=============  =====================================================================

``any_order`` and ``superset`` coincide on purpose: the first name reads naturally in a
trajectory ("the reference calls, in any order"), the second from the set viewpoint,
paired with ``subset``.

``args`` -- when one actual call matches one reference call (names must always be equal):

============  =========================================================================
mode          passes when
============  =========================================================================
``exact``     the same keys, each actual value matching the reference's
``ignore``    always (only names are compared)
``superset``  actual args ⊇ reference args: every reference key is in actual, matching
              (the reference lists only the args that matter)
``subset``    actual args ⊆ reference args: every actual key is in reference, matching
============  =========================================================================

"subset"/"superset" always describe *actual* relative to *reference*, on both axes.
Reference values are expectations, parsed and compared as every expectation is, through
proctor.tasks.predicates: strings trimmed and case-folded, numbers by value within a
tolerance (``1`` matches ``1.0``, ``true`` never matches ``1``), and a reference value may
be an operator (``{"$gte": 3}``; an unknown operator is a ``ValueError``). A reference
read from a ``Trace`` holds recorded data, compared literally. Tool names compare exactly.

A ``Trace`` contributes the calls that reached the tool, as every trajectory grader counts
them (``ToolCall.attempted``): a proposal denied by the policy, rejected by validation or
stopped by an injected fault is not a call the agent made. A task file states a reference
as ``expect.trajectory.reference`` (docs/architecture.md, Verdicts).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, get_args

from proctor.core.trace import Trace
from proctor.grade.context import calls_from_trace
from proctor.tasks.models import ArgsMode, OrderMode
from proctor.tasks.predicates import Predicate, literal_predicate, parse_predicate

ORDER_MODES: tuple[str, ...] = get_args(OrderMode)
ARGS_MODES: tuple[str, ...] = get_args(ArgsMode)

Call = tuple[str, dict[str, Any]]
Expected = tuple[str, dict[str, Predicate]]


@dataclass(frozen=True)
class MatchReport:
    """The verdict of a match and, for evidence, what stayed without a partner:
    reference calls (by index) no actual call matched, and actual calls (by index) that
    matched no reference call where the mode forbids extras."""

    passed: bool
    unmatched_reference: list[int] = field(default_factory=list)
    unexpected_actual: list[int] = field(default_factory=list)


def match_trajectory(
    actual: Trace | Iterable[Any],
    reference: Trace | Iterable[Any],
    order: str = "in_order",
    args: str = "exact",
) -> bool:
    """Does `actual` match `reference` under the `order` and `args` modes (module docstring)?

    Each side is a `Trace` (the calls that reached the tool) or a list of calls: dicts
    with ``name`` (or ``tool``) and ``args``, or objects with those attributes.
    """
    if order not in ORDER_MODES:
        raise ValueError(f"unknown order mode {order!r}; expected one of {', '.join(ORDER_MODES)}")
    if args not in ARGS_MODES:
        raise ValueError(f"unknown args mode {args!r}; expected one of {', '.join(ARGS_MODES)}")
    literal = isinstance(reference, Trace)
    parse = literal_predicate if literal else parse_predicate
    refs = [(name, {k: parse(v) for k, v in a.items()}) for name, a in _calls(reference)]
    return match_calls(_calls(actual), refs, order, args).passed


def match_calls(acts: list[Call], refs: list[Expected], order: str, args: str) -> MatchReport:
    """Match actual calls against parsed reference calls; the report says what failed."""

    def same(a: Call, r: Expected) -> bool:
        return a[0] == r[0] and _args_match(a[1], r[1], args)

    if order == "exact":
        wrong = [i for i, (a, r) in enumerate(zip(acts, refs, strict=False)) if not same(a, r)]
        n = min(len(acts), len(refs))
        return MatchReport(
            len(acts) == len(refs) and not wrong,
            wrong + list(range(n, len(refs))),
            list(range(n, len(acts))),
        )
    if order == "in_order":
        embedded = _embedded(refs, acts, same)
        return MatchReport(embedded == len(refs), list(range(embedded, len(refs))))
    owner = _max_matching(acts, refs, same)
    lonely_refs = [j for j, i in enumerate(owner) if i is None]
    lonely_acts = sorted(set(range(len(acts))) - {i for i in owner if i is not None})
    if order == "subset":
        return MatchReport(not lonely_acts, [], lonely_acts)
    if order == "unordered":
        return MatchReport(not lonely_refs and not lonely_acts, lonely_refs, lonely_acts)
    return MatchReport(not lonely_refs, lonely_refs)  # any_order, superset


def _calls(source: Trace | Iterable[Any]) -> list[Call]:
    """Normalise either input form to ``(name, args)`` pairs, so matching sees one shape."""
    if isinstance(source, Trace):
        return [(c.tool, c.arg_dict) for c in calls_from_trace(source) if c.attempted]
    return [_call(item) for item in source]


def _call(item: Any) -> Call:
    if isinstance(item, dict):
        name, args = item.get("name", item.get("tool")), item.get("args")
    else:
        name = getattr(item, "name", None)
        name = getattr(item, "tool", None) if name is None else name
        args = getattr(item, "args", None)
    if not isinstance(name, str):
        raise ValueError(f"call without a string 'name' or 'tool': {item!r}")
    return name, args if isinstance(args, dict) else {}


def _args_match(actual: dict[str, Any], ref: dict[str, Predicate], mode: str) -> bool:
    if mode == "ignore":
        return True
    if mode == "exact" and actual.keys() != ref.keys():
        return False
    keys = actual if mode == "subset" else ref
    return all(key in actual and key in ref and ref[key].test(actual[key]) for key in keys)


def _embedded(
    refs: list[Expected], acts: list[Call], same: Callable[[Call, Expected], bool]
) -> int:
    """How many reference calls, from the first, embed in order: greedy earliest match,
    which is optimal, not just a heuristic.

    Proof (exchange argument): let any embedding put reference call ``j`` at position
    ``p_j``, and greedy at ``g_j``. By induction ``g_j <= p_j``: ``g_0 <= p_0`` since greedy
    takes the first match; if ``g_{j-1} <= p_{j-1} < p_j`` then position ``p_j`` is a match
    for call ``j`` after ``g_{j-1}``, so greedy's earliest choice ``g_j <= p_j``. Hence greedy
    never runs out of positions while some embedding exists. Unlike the unordered modes,
    each reference call here competes only for positions after the previous one, so taking
    the earliest leaves a superset of the options any other choice would.
    """
    pos = 0
    for j, ref in enumerate(refs):
        while pos < len(acts) and not same(acts[pos], ref):
            pos += 1
        if pos == len(acts):
            return j
        pos += 1
    return len(refs)


def _max_matching(
    acts: list[Call], refs: list[Expected], same: Callable[[Call, Expected], bool]
) -> list[int | None]:
    """A maximum actual↔reference matching (Kuhn's augmenting paths): for each reference
    call, the index of its actual partner or None.

    Greedy first-fit is wrong here: with loose args one actual call can match several
    reference calls, and taking the first may steal the only partner of a later one.
    Trajectories are short, so O(V·E) is ample.
    """
    edges = [[j for j, r in enumerate(refs) if same(a, r)] for a in acts]
    owner: list[int | None] = [None] * len(refs)  # reference index -> actual index

    def augment(i: int, seen: set[int]) -> bool:
        for j in edges[i]:
            if j not in seen:
                seen.add(j)
                prev = owner[j]
                if prev is None or augment(prev, seen):
                    owner[j] = i
                    return True
        return False

    for i in range(len(acts)):
        augment(i, set())
    return owner

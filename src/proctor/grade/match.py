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
Reference values are expectations, so they compare as every expectation does, through
proctor.tasks.predicates: strings trimmed and case-folded, numbers by value (``1`` matches
``1.0``, ``true`` never matches ``1``), and a reference value may be an operator
(``{"$gte": 3}``). Tool names compare exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from proctor.tasks.predicates import literal_equal, matches

if TYPE_CHECKING:
    from proctor.core.trace import Trace

ORDER_MODES = ("exact", "in_order", "any_order", "unordered", "subset", "superset")
ARGS_MODES = ("exact", "ignore", "subset", "superset")

Call = tuple[str, dict[str, Any]]


def match_trajectory(
    actual: Trace | Iterable[Any],
    reference: Trace | Iterable[Any],
    order: str = "in_order",
    args: str = "exact",
) -> bool:
    """Does `actual` match `reference` under the `order` and `args` modes (module docstring)?

    Each side is a `Trace` (its ``tool_proposal`` events) or a list of calls: dicts with
    ``name`` (or ``tool``) and ``args``, or objects with those attributes.
    """
    if order not in ORDER_MODES:
        raise ValueError(f"unknown order mode {order!r}; expected one of {', '.join(ORDER_MODES)}")
    if args not in ARGS_MODES:
        raise ValueError(f"unknown args mode {args!r}; expected one of {', '.join(ARGS_MODES)}")
    acts, refs = _calls(actual), _calls(reference)

    def same(a: Call, r: Call) -> bool:
        return a[0] == r[0] and _args_match(a[1], r[1], args)

    if order == "exact":
        return len(acts) == len(refs) and all(map(same, acts, refs))
    if order == "in_order":
        return _is_subsequence(refs, acts, same)
    if order == "unordered" and len(acts) != len(refs):
        return False
    matched = _max_matching(acts, refs, same)
    if order == "subset":
        return matched == len(acts)
    return matched == len(refs)  # any_order, superset, unordered (lengths already equal)


def _calls(source: Trace | Iterable[Any]) -> list[Call]:
    """Normalise either input form to ``(name, args)`` pairs, so matching sees one shape."""
    if hasattr(source, "events"):
        return [
            (e.data["tool"], e.data.get("args") or {})
            for e in source.events
            if e.kind == "tool_proposal"
        ]
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
    return name, args or {}


def _args_match(actual: dict[str, Any], ref: dict[str, Any], mode: str) -> bool:
    if mode == "ignore":
        return True
    if mode == "exact":
        return literal_equal(actual, ref)
    keys, other = (ref, actual) if mode == "superset" else (actual, ref)
    return all(key in other and matches(actual[key], ref[key]) for key in keys)


def _is_subsequence(refs: list[Call], acts: list[Call], same: Callable[[Call, Call], bool]) -> bool:
    """Greedy earliest match, which is optimal, not just a heuristic.

    Proof (exchange argument): let any embedding put reference call ``j`` at position
    ``p_j``, and greedy at ``g_j``. By induction ``g_j <= p_j``: ``g_0 <= p_0`` since greedy
    takes the first match; if ``g_{j-1} <= p_{j-1} < p_j`` then position ``p_j`` is a match
    for call ``j`` after ``g_{j-1}``, so greedy's earliest choice ``g_j <= p_j``. Hence greedy
    never runs out of positions while some embedding exists. Unlike the unordered modes,
    each reference call here competes only for positions after the previous one, so taking
    the earliest leaves a superset of the options any other choice would.
    """
    pos = 0
    for ref in refs:
        while pos < len(acts) and not same(acts[pos], ref):
            pos += 1
        if pos == len(acts):
            return False
        pos += 1
    return True


def _max_matching(acts: list[Call], refs: list[Call], same: Callable[[Call, Call], bool]) -> int:
    """Size of a maximum actual↔reference matching (Kuhn's augmenting paths).

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

    return sum(augment(i, set()) for i in range(len(acts)))

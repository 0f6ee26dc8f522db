"""The Recorder: events numbered 1..n, each stamped with the clock's time as it emits."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from proctor.core.trace import Recorder, SimClock

MOVES = st.lists(
    st.one_of(
        st.tuples(st.just("advance"), st.floats(0, 10)),
        st.tuples(st.just("set"), st.floats(0, 1e6)),  # a clock moved from outside
        st.tuples(st.just("emit"), st.just(0.0)),
    ),
    max_size=30,
)


@given(MOVES)
def test_every_event_carries_the_clocks_time_when_it_was_emitted(
    moves: list[tuple[str, float]],
) -> None:
    """The recorder keeps the last time's rounding: an event after the clock moved, by
    `advance` or set directly (back as well), must never carry a time gone by."""
    clock = SimClock()
    recorder = Recorder(clock)
    expected = []
    for move, seconds in moves:
        if move == "advance":
            clock.advance(seconds)
        elif move == "set":
            clock.now = seconds
        else:
            recorder.emit("note", {})
            expected.append(round(clock.now, 6))
    assert [e.t for e in recorder.events] == expected
    assert [e.seq for e in recorder.events] == list(range(1, len(expected) + 1))

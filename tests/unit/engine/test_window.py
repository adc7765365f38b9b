"""The burn rate's sliding sum is the window's exact sum rounded once, whatever came and went before."""
from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from service.engine.window import SlidingSum, rounded_sum

finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6)
tiny_or_huge = st.sampled_from([5e-324, 1e-300, 0.1, 1e300, -1e300, 2.0 ** 52, -0.0])
odd = st.sampled_from([math.inf, -math.inf, math.nan])
op = st.one_of(
    st.tuples(st.just("append"), st.one_of(finite, tiny_or_huge)),
    st.tuples(st.just("append"), odd),
    st.tuples(st.just("revise"), st.integers(0, 200), st.one_of(finite, odd)),
    st.tuples(st.just("forward"), st.integers(0, 5)),
    st.tuples(st.just("anywhere"), st.integers(0, 200)),
)


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


@settings(max_examples=300, deadline=None)
@given(st.lists(op, max_size=120))
def test_the_sliding_sum_is_the_windows_fsum(ops):
    window = SlidingSum()
    first = 0
    for o in ops:
        if o[0] == "append":
            window.append(o[1])
        elif o[0] == "revise" and window.values:
            window[o[1] % len(window.values)] = o[2]
        elif o[0] == "forward":
            first = min(len(window.values), first + o[1])
        elif o[0] == "anywhere":
            first = o[1] % (len(window.values) + 1)
        got = window.sum_from(first)
        assert same(got, rounded_sum(window.values[first:])), (first, window.values)


def test_rounded_once_not_in_call_order():
    values = [1e16, 1.0, -1e16, 1.0]
    assert sum(values) == 1.0  # left to right, the first 1.0 is lost
    window = SlidingSum()
    for v in values:
        window.append(v)
    assert window.sum_from(0) == 2.0 == math.fsum(values)
    assert window.sum_from(1) == -1e16 + 2  # exact here; left to right gives -1e16 + 1 + 1 = -1e16
    assert sum(values[1:]) == -1e16

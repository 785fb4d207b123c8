"""The search's arithmetic: the largest count that passes, by doubling then bisection, each
count tried once; a count decided by a majority of its repeats, stopping once decided."""
import pytest

from dlio_mpi.acceptance import bisection


def tried(low, high, limit):
    """(answer, counts tried) when every count up to limit passes."""
    order = []

    def passes(n):
        order.append(n)
        return n <= limit

    return bisection.largest_passing(low, high, passes), order


@pytest.mark.parametrize("low,high", [(1, 1), (1, 3), (1, 8), (2, 13), (3, 40)])
def test_the_answer_is_the_largest_passing_count(low, high):
    for limit in range(0, high + 2):
        answer, order = tried(low, high, limit)
        want = min(limit, high) if limit >= low else 0
        assert answer == want, (low, high, limit, order)
        assert len(order) == len(set(order)), order          # no count run twice
        assert all(low <= n <= high for n in order)
        if 0 < answer < high:       # the count above the answer was tried, and failed
            assert answer + 1 in order


def test_doubling_then_bisection():
    assert tried(1, 64, 20) == (20, [1, 2, 4, 8, 16, 32, 24, 20, 22, 21])
    assert tried(1, 3, 3) == (3, [1, 2, 3])
    assert tried(2, 10, 1) == (0, [2])


def test_counts_below_one_or_reversed_are_refused():
    with pytest.raises(ValueError):
        bisection.largest_passing(0, 3, lambda n: True)
    with pytest.raises(ValueError):
        bisection.largest_passing(3, 2, lambda n: True)


@pytest.mark.parametrize("values,repeats,passed,runs", [
    ([95, 95, 10], 3, True, 2),            # two of three pass: the third not run
    ([10, 10, 95], 3, False, 2),
    ([95, 10, 95], 3, True, 3),
    ([95, 10], 2, False, 2),                # a tie is not a majority
    ([10, 95, 95, 95], 4, True, 4),         # 3 of 4
    ([10, 95, 10, 95], 4, False, 3),        # two failures of four: 3 cannot be reached
    ([89.99], 1, False, 1),
    ([90.0], 1, True, 1),
])
def test_a_majority_of_repeats_decides(values, repeats, passed, runs):
    calls = []

    def measure(n, repeat):
        calls.append(repeat)
        return values[repeat - 1]

    ok, seen = bisection.decide(measure, 4, repeats, 90.0)
    assert (ok, len(seen)) == (passed, runs)
    assert calls == list(range(1, len(seen) + 1))

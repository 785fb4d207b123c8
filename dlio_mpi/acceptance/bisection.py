"""The largest count in [low, high] that passes a test, on the assumption that a count passes
when a larger one does: the count doubled from low until one fails (or high passes), then
bisection between the last count that passed and the first that failed. A count is decided
by a majority of its repeats, the repeats stopping as soon as the majority is reached either
way. Pure: the runs are the caller's `measure`."""


def majority(repeats):
    """Passing repeats a count needs: more than half."""
    return repeats // 2 + 1


def decide(measure, count, repeats, threshold):
    """(passed, values): measure(count, repeat) for repeat 1, 2, ... until a majority of
    `repeats` is at or above threshold, or cannot be any more."""
    need = majority(repeats)
    values = []
    good = bad = 0
    for repeat in range(1, repeats + 1):
        value = measure(count, repeat)
        values.append(value)
        if value >= threshold:
            good += 1
        else:
            bad += 1
        if good >= need or bad > repeats - need:
            break
    return good >= need, values


def largest_passing(low, high, passes):
    """The largest count in [low, high] for which passes(count) is true, 0 when low fails;
    passes is called once per count tried, in the search's order."""
    if low < 1 or high < low:
        raise ValueError(f"counts {low}..{high}: need 1 <= low <= high")
    good, bad, count = 0, None, low
    while True:
        if passes(count):
            good = count
            if count == high:
                return good
            count = min(2 * count, high)
        else:
            bad = count
            break
    while bad - good > 1 and good >= low:
        middle = (good + bad) // 2
        if passes(middle):
            good = middle
        else:
            bad = middle
    return good

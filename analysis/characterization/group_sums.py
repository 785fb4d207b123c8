"""Sums of values per group of rows, added as pandas' groupby adds them: in row order, floats
with Kahan's compensated summation. The figures of files and ranks that were pandas sums keep
their last bits, and so the order of files ranked by them."""

import numpy as np


def groups_in_order(keys):
    """(distinct keys in the order of their first row, each row's group index)."""
    keys = np.asarray(keys)
    distinct, first, of = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    position = np.empty(len(order), np.int64)
    position[order] = np.arange(len(order))
    return distinct[order], position[of.reshape(-1)]


def group_sum(of, values, n):
    """``values`` summed per group (``of``: each row's group index, 0..n-1), in row order:
    integers exactly, floats with Kahan's compensation as pandas' groupby sum does."""
    values = np.asarray(values)
    of = np.asarray(of, np.int64)
    if values.dtype.kind in "iub":
        out = np.zeros(n, np.int64)
        np.add.at(out, of, values.astype(np.int64))
        return out
    total, compensation = np.zeros(n), np.zeros(n)
    # the k-th row of every group at once: one compensated step per group and row
    order = np.argsort(of, kind="stable")
    grouped = of[order]
    starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]]) if len(of) else \
        np.zeros(0, np.int64)
    place = np.arange(len(of)) - np.repeat(starts, np.diff(np.r_[starts, len(of)]))
    step_values = values[order].astype(np.float64)
    for k in range(int(place.max()) + 1 if len(place) else 0):
        at = place == k
        g, v = grouped[at], step_values[at]
        y = v - compensation[g]
        t = total[g] + y
        c = t - total[g] - y
        compensation[g] = np.where(np.isnan(c), 0.0, c)
        total[g] = t
    return total

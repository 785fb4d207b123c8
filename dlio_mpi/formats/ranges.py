"""Cutting byte ranges into transfer-size pieces, as an application's reads would be."""
import numpy as np


def cut_ranges(offsets, lengths, transfer_size, *, aligned=False, return_index=False):
    """Cut ranges [offsets[i], offsets[i]+lengths[i]) into pieces of at most transfer_size bytes,
    in order; 0 leaves every range whole. Pieces start at each range's start (aligned=False, as
    the engines' xfer does) or break at multiples of transfer_size in the file (aligned=True, as
    a buffered reader streaming a file does). Empty ranges give no piece. Returns (offsets,
    lengths) of the pieces, plus with return_index the range each piece belongs to."""
    offs = np.ascontiguousarray(offsets, dtype=np.int64).ravel()
    lens = np.ascontiguousarray(lengths, dtype=np.int64).ravel()
    if offs.shape != lens.shape:
        raise ValueError(f"cut_ranges: {offs.size} offsets but {lens.size} lengths")
    if (offs < 0).any() or (lens < 0).any():
        raise ValueError("cut_ranges: negative offset or length")
    t = int(transfer_size)
    if t < 0:
        raise ValueError(f"cut_ranges: transfer_size={t} must be >= 0")
    if t == 0:
        keep = np.flatnonzero(lens > 0)
        out = offs[keep].copy(), lens[keep].copy()
        return out + (keep,) if return_index else out
    if aligned:
        first = offs // t
        count = np.where(lens > 0, (offs + lens + t - 1) // t - first, 0)
    else:
        count = (lens + t - 1) // t
    which = np.repeat(np.arange(offs.size, dtype=np.int64), count)
    k = np.arange(which.size, dtype=np.int64) - np.repeat(np.cumsum(count) - count, count)
    if aligned:
        lo = np.maximum(offs[which], (first[which] + k) * t)
        hi = np.minimum(offs[which] + lens[which], (first[which] + k + 1) * t)
        out = lo, hi - lo
    else:
        start = offs[which] + k * t
        out = start, np.minimum(t, lens[which] - k * t)
    return out + (which,) if return_index else out

"""Sample sizes and deterministic sample content, cheap to make and to check.

A sample's bytes are made of pieces of at most BLOCK bytes; piece j of sample s of file f is a
window of a seeded random block (one per seed, made once), starting at a place given by a hash of
(seed, f, s, j). Making content is therefore a memory copy, any sample's bytes can be rebuilt
alone, and a read from the wrong file, sample or offset does not match.

A block of fill f (Content, dataset.content_fill) has in each PAGE bytes f of them random, the
rest zeros: a compressor (gzip, zip) stores it in about f of its bytes, as real data that
compresses (images, simulation fields on a grid) is stored, where random bytes hardly
compress."""
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

BLOCK = 1 << 20
PAGE = 4096
_U = np.uint64


@dataclass(frozen=True)
class Content:
    """What a dataset's content is made from: its seed and the share of each page that is
    random (the rest zeros)."""
    seed: int
    fill: float = 1.0


def _key(content):
    """(seed, fill) of a Content or of a bare seed (fill 1)."""
    if isinstance(content, Content):
        return int(content.seed), float(content.fill)
    return int(content), 1.0


def _mix(x):
    """A 64-bit finalizer (splitmix64's), on uint64 arrays (wrapping arithmetic)."""
    x = x + _U(0x9E3779B97F4A7C15)
    x = (x ^ (x >> _U(30))) * _U(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> _U(27))) * _U(0x94D049BB133111EB)
    return x ^ (x >> _U(31))


def piece_starts(seed, file_index, samples, pieces):
    """Start, in the block, of the given pieces (arrays of equal length) of a file's samples."""
    samples = np.atleast_1d(np.asarray(samples, dtype=np.uint64))
    pieces = np.atleast_1d(np.asarray(pieces, dtype=np.uint64))
    h = _mix(np.full(samples.shape, seed, dtype=np.uint64))
    h = _mix(h ^ _U(file_index))
    h = _mix(h ^ samples)
    h = _mix(h ^ pieces)
    return (h % _U(BLOCK)).astype(np.int64)


@lru_cache(maxsize=4)
def _block(seed, fill=1.0):
    """The seed's random block, twice over, so that any window of BLOCK bytes is one slice;
    with fill < 1 each page's bytes past its fill share are zeros."""
    rng = np.random.default_rng([seed, 0xB10C])
    half = rng.integers(0, 256, BLOCK, dtype=np.uint8)
    if fill < 1.0:
        pages = half.reshape(-1, PAGE)
        pages[:, max(1, int(round(fill * PAGE))):] = 0
    out = np.concatenate([half, half])
    out.setflags(write=False)
    return out


def sample_sizes(spec, file_index):
    """Bytes of each sample of file file_index (int64, one per sample), as drawn for spec."""
    n = spec.samples_per_file
    if spec.record_length_stdev == 0:
        raw = np.full(n, spec.record_length, dtype=np.int64)
    else:
        rng = np.random.default_rng([spec.seed, file_index, 0x512E])
        draws = rng.normal(spec.record_length, spec.record_length_stdev,
                           1 if spec.rows_share_size else n)
        raw = np.maximum(np.rint(draws), 1).astype(np.int64)
        if spec.rows_share_size:
            raw = np.repeat(raw, n)
    if spec.square_images:          # a whole square of pixels
        side = np.maximum(np.rint(np.sqrt(raw)), 1).astype(np.int64)
        return side * side
    k = spec.itemsize
    extra = spec.field_bytes        # a row's own bytes in whole elements, then its fields'
    return np.maximum((raw - extra + k // 2) // k, 1) * k + extra


def fill(seed, file_index, samples, nbytes, out):
    """Write the content of the given samples (nbytes[i] bytes of sample samples[i]) one after
    another into the uint8 array out; returns the number of bytes written. seed: a seed, or a
    Content (a spec's .content)."""
    seed, share = _key(seed)
    samples = np.atleast_1d(np.asarray(samples, dtype=np.int64))
    nbytes = np.atleast_1d(np.asarray(nbytes, dtype=np.int64))
    total = int(nbytes.sum())
    if total > len(out):
        raise ValueError(f"content of {total} bytes does not fit a buffer of {len(out)}")
    count = np.maximum((nbytes + BLOCK - 1) // BLOCK, 0)
    which = np.repeat(np.arange(len(samples)), count)
    first = np.cumsum(count) - count
    piece = np.arange(len(which), dtype=np.int64) - first[which]
    lens = np.minimum(BLOCK, nbytes[which] - piece * BLOCK)
    starts = piece_starts(seed, file_index, samples[which], piece)
    block = _block(seed, share)
    pos = 0
    for st, ln in zip(starts.tolist(), lens.tolist()):
        out[pos:pos + ln] = block[st:st + ln]
        pos += ln
    return total


def sample_content(seed, file_index, sample_index, nbytes):
    """The nbytes content bytes of one sample as a new uint8 array."""
    out = np.empty(nbytes, dtype=np.uint8)
    fill(seed, file_index, [sample_index], [nbytes], out)
    return out


def batches(sizes, limit=64 << 20):
    """Split samples 0..n-1 into consecutive [lo, hi) runs of at most limit bytes (at least one
    sample each), to make and write content in bounded memory."""
    ends = np.cumsum(sizes)
    lo, n = 0, len(sizes)
    while lo < n:
        base = int(ends[lo - 1]) if lo else 0
        hi = int(np.searchsorted(ends, base + limit, side="right"))
        hi = max(hi, lo + 1)
        yield lo, hi
        lo = hi


def sample_data(spec, file_index, sample_index):
    """Sample sample_index of file file_index of spec: its size as drawn, its content bytes."""
    n = int(sample_sizes(spec, file_index)[sample_index])
    return sample_content(spec.content, file_index, sample_index, n)

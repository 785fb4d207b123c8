"""Metrics of a DXT trace (DXT_POSIX or DXT_MPIIO): one row per read or write operation.

Definitions, all on the operations the trace holds (a partial trace holds the first ones only):

- Transfer sizes: min / mean / median / max of the operations' lengths in bytes. Zero-length
  operations are included (Darshan's size histograms count them too) and counted apart.
- Per-operation bandwidth: length / (end - start) in bytes/s. Operations of zero length, and
  operations whose end is not after their start (zero duration at the timer's resolution), are
  left out, and the number of each is given.
- Timeline: per rank, the number of reads and writes, the bytes they moved, the start of the
  first operation and the end of the last one, in seconds since the job start.
- Read at start or on demand: ``early_read_fraction`` is the fraction of the bytes read by
  operations that start within the first 10% of the job's run time; a job whose fraction is at
  least 0.8, or whose reads form one busy burst followed by at least as long without reads
  (reads in progress at least half of the time from the first read's start to the last one's
  end: a load that takes a good part of the run, as CANDLE's 17% of it, then training), reads
  its input "at start"; any other job that reads reads it "on demand" (reads between compute
  steps leave the time between them idle).
- Write bursts (checkpoints): the write operations of all ranks, in order of start, grouped so
  that an operation starting less than ``BURST_GAP`` of the run time (at least 1 ms) after the
  end of the burst so far joins it. Each burst: first start, last end, operations, bytes, ranks
  writing, and bandwidth = bytes / (last end - first start) (None for a zero-length span).
"""

from dataclasses import dataclass

import numpy as np

from dlio_mpi_analysis.loading.table import as_table
from dlio_mpi_analysis.loading.trace_ops import READ_OP, WRITE_OP, as_trace_table

EARLY_PERIOD = 0.10  # the "start" of a run: this fraction of its run time
AT_START_THRESHOLD = 0.8  # early_read_fraction from which input counts as read at start
LOAD_BUSY = 0.5  # or: one busy burst of reads (in progress this fraction of it), then none
BURST_GAP = 0.01  # write bursts: a pause of this fraction of the run time ends one


@dataclass
class SizeStats:
    """Lengths in bytes of one kind of traced operation (see the module docstring)."""

    operations: int
    zero_length: int
    min: int
    mean: float
    median: float
    max: int


@dataclass
class BandwidthStats:
    """Per-operation bandwidth in bytes/s over ``operations`` operations, with the number of
    zero-length and of zero-duration (but non-zero-length) operations left out."""

    operations: int
    zero_length_excluded: int
    zero_duration_excluded: int
    min: float | None
    median: float | None
    mean: float | None
    max: float | None


@dataclass
class RankSpan:
    """One rank's traced I/O: operation counts, bytes, first start and last end (s)."""

    rank: int
    reads: int
    writes: int
    bytes_read: int
    bytes_written: int
    first_start: float
    last_end: float


@dataclass
class WriteBurst:
    """Writes close together in time, of any ranks (see the module docstring)."""

    start: float
    end: float
    operations: int
    bytes: int
    ranks: int
    bandwidth: float | None


@dataclass
class DxtMetrics:
    """The characterization of one DXT module's trace (see the module docstring)."""

    module: str
    partial: bool
    operations: int
    read_sizes: SizeStats | None
    write_sizes: SizeStats | None
    read_bandwidth: BandwidthStats | None
    write_bandwidth: BandwidthStats | None
    early_read_fraction: float | None
    read_pattern: str | None
    timeline: list
    write_bursts: list


def dxt_metrics(module, segments, run_time, partial, timeline=True):
    """Characterize one DXT module's segments (a loader Table, or a DataFrame of its columns
    with the op's name) per :class:`DxtMetrics`; ``timeline=False`` leaves its per-rank
    timeline empty."""
    segments = as_trace_table(segments)
    reads = segments[segments["op"] == READ_OP]
    writes = segments[segments["op"] == WRITE_OP]
    early = _early_read_fraction(reads, run_time)
    return DxtMetrics(
        module=module,
        partial=partial,
        operations=len(segments),
        read_sizes=_size_stats(reads),
        write_sizes=_size_stats(writes),
        read_bandwidth=_bandwidth_stats(reads),
        write_bandwidth=_bandwidth_stats(writes),
        early_read_fraction=early,
        read_pattern=None if early is None else
        ("at start" if early >= AT_START_THRESHOLD or load_burst(reads, run_time)
         else "on demand"),
        timeline=_timeline(segments) if timeline else [],
        write_bursts=_write_bursts(writes, run_time),
    )


def load_burst(reads, run_time):
    """True when the reads (a DXT Table) form one busy burst (reads in progress on any rank at
    least LOAD_BUSY of the time from the first read's start to the last one's end) followed
    by at least as long without reads before the run's end."""
    if not run_time or reads.empty:
        return False
    reads = as_table(reads)
    start, end = float(reads["start"].min()), float(reads["end"].max())
    if end <= start or run_time - end < end - start:
        return False
    busy, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(zip(reads["start"].tolist(), reads["end"].tolist())):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                busy += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    busy += cur_e - cur_s
    return busy >= LOAD_BUSY * (end - start)


def _write_bursts(writes, run_time):
    writes = as_table(writes)
    if writes.empty:
        return []
    gap = max(BURST_GAP * (run_time or 0.0), 1e-3)
    w = writes.rows(np.argsort(writes["start"], kind="quicksort"))
    start, end = w["start"], w["end"]
    length, rank = w["length"], w["rank"]
    bursts, first, reach = [], 0, end[0]
    for i in range(1, len(w) + 1):
        if i < len(w) and start[i] < reach + gap:
            reach = max(reach, end[i])
            continue
        sl = slice(first, i)
        span = float(reach - start[first])
        nbytes = int(length[sl].sum())
        bursts.append(WriteBurst(start=float(start[first]), end=float(reach),
                                 operations=i - first, bytes=nbytes,
                                 ranks=int(len(np.unique(rank[sl]))),
                                 bandwidth=nbytes / span if span > 0 else None))
        if i < len(w):
            first, reach = i, end[i]
    return bursts


def _size_stats(ops):
    if ops.empty:
        return None
    length = ops["length"]
    return SizeStats(
        operations=len(length),
        zero_length=int((length == 0).sum()),
        min=int(length.min()),
        mean=float(length.mean()),
        median=float(np.median(length)),
        max=int(length.max()),
    )


def _bandwidth_stats(ops):
    if ops.empty:
        return None
    length = ops["length"]
    duration = ops["end"] - ops["start"]
    zero_length = length == 0
    zero_duration = ~zero_length & (duration <= 0)
    used = ~zero_length & ~zero_duration
    bandwidth = length[used] / duration[used]
    return BandwidthStats(
        operations=int(used.sum()),
        zero_length_excluded=int(zero_length.sum()),
        zero_duration_excluded=int(zero_duration.sum()),
        min=float(bandwidth.min()) if used.any() else None,
        median=float(np.median(bandwidth)) if used.any() else None,
        mean=float(bandwidth.mean()) if used.any() else None,
        max=float(bandwidth.max()) if used.any() else None,
    )


def _early_read_fraction(reads, run_time):
    total = int(reads["length"].sum())
    if total == 0:
        return None
    early = reads["start"] < EARLY_PERIOD * run_time
    return int(reads["length"][early].sum()) / total


def _timeline(segments):
    if segments.empty:
        return []
    is_read = segments["op"] == READ_OP
    ranks, of = np.unique(segments["rank"], return_inverse=True)
    of = of.reshape(-1)
    n = len(ranks)
    length = segments["length"].astype(np.int64)
    reads = np.bincount(of, weights=is_read, minlength=n)
    bytes_read = np.zeros(n, np.int64)
    np.add.at(bytes_read, of[is_read], length[is_read])
    bytes_written = np.zeros(n, np.int64)
    np.add.at(bytes_written, of[~is_read], length[~is_read])
    first_start = np.full(n, np.inf)
    np.minimum.at(first_start, of, segments["start"])
    last_end = np.full(n, -np.inf)
    np.maximum.at(last_end, of, segments["end"])
    counts = np.bincount(of, minlength=n)
    return [RankSpan(rank=int(ranks[i]), reads=int(reads[i]), writes=int(counts[i] - reads[i]),
                     bytes_read=int(bytes_read[i]), bytes_written=int(bytes_written[i]),
                     first_start=float(first_start[i]), last_end=float(last_end[i]))
            for i in range(n)]

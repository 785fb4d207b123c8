"""Metrics of one Darshan counter module (POSIX, MPI-IO, STDIO, H5F, H5D), from its records.

Every metric is computed from the module's counter records as the loader gives them (one row
per record; rank -1 for a record Darshan reduced over all ranks). The definitions are in the
docstrings of the dataclasses below.
"""

from dataclasses import dataclass

import numpy as np

from dlio_mpi_analysis.characterization.counters import SIZE_BUCKETS, counter_sum, counter_totals


@dataclass
class Files:
    """Files a module touched, counted by Darshan record id (one id per file name).

    ``shared``: files covered by a record reduced over all ranks (rank -1) or by records of two
    or more ranks; ``unique``: files only one rank touched. ``read`` / ``written``: files with
    at least one byte read / written (None for a module without byte counters).
    """

    total: int
    shared: int
    unique: int
    read: int | None
    written: int | None


@dataclass
class TransferSizes:
    """Transfer sizes of one kind of operation, from Darshan's size-histogram counters.

    ``histogram``: operations per size bucket (bytes: 0-100, 100-1K, ... 1G+; Darshan's
    buckets, for MPI-IO and H5D the size of the whole access). ``min_bucket`` /
    ``max_bucket``: the smallest / largest bucket holding operations; ``median_bucket``: the
    bucket holding the ceil(N/2)-th smallest of the N operations in the histogram (all three
    None when N = 0). ``mean``: bytes over operations, from the byte and operation counters
    (None without operations).
    """

    histogram: dict
    operations: int
    min_bucket: str | None
    median_bucket: str | None
    max_bucket: str | None
    mean: float | None


@dataclass
class IOTime:
    """Time spent in I/O calls, in seconds, from Darshan's F_READ_TIME + F_WRITE_TIME +
    F_META_TIME counters (F_META_TIME: metadata calls such as open, close, stat and seek; H5F
    has only F_META_TIME). Negative values, found in some old logs, count as 0 (with a warning).

    ``slowest_rank``: Darshan's estimate of the slowest process's I/O time: the largest sum,
    over the ranks, of the times of the records that belong to one rank, plus for every record
    reduced over all ranks the time of the slowest rank on that file (F_SLOWEST_RANK_TIME). It
    overestimates when different ranks are the slowest on different shared files. A module
    without a slowest-rank counter (H5F) adds a reduced record's time divided by the process
    count. ``mean_per_rank``: the time of all records (a reduced record holds the sum over its
    ranks) divided by the process count. ``*_share``: each over the job's run time (None when
    the run time is 0).
    """

    slowest_rank: float
    mean_per_rank: float
    slowest_rank_share: float | None
    mean_per_rank_share: float | None


@dataclass
class RankBalance:
    """Bytes read + written per rank, over all the job's ranks, from the records that belong to
    one rank; a rank without such records counts 0 bytes. The bytes of records reduced over all
    ranks cannot be attributed to a rank and are given apart as ``shared_bytes``.
    """

    ranks: int
    ranks_with_io: int
    min_bytes: int
    mean_bytes: float
    max_bytes: int
    shared_bytes: int


@dataclass
class ModuleMetrics:
    """The characterization of one module. A quantity the module does not count is None.

    ``ops``: operation counts (reads, writes, opens, stats, seeks, syncs where the module counts
    them; syncs are fsync + fdatasync for POSIX, MPI_File_sync for MPI-IO; MPI-IO adds
    independent_* (blocking + nonblocking) and collective_* (blocking + split) reads and
    writes). ``sequential_*_pct``: the share of operations at a higher offset than where the
    previous one on the file ended (Darshan's SEQ counters), ``consecutive_*_pct``: the share
    starting exactly where the previous one ended (CONSEC counters), both in % of the reads or
    writes, POSIX only. ``rank_balance`` is None when no record belongs to a single rank.
    ``alignment``: see :func:`_alignment`.
    """

    module: str
    records: int
    files: Files
    bytes_read: int | None
    bytes_written: int | None
    ops: dict
    read_sizes: TransferSizes | None
    write_sizes: TransferSizes | None
    sequential_read_pct: float | None
    consecutive_read_pct: float | None
    sequential_write_pct: float | None
    consecutive_write_pct: float | None
    io_time: IOTime
    rank_balance: RankBalance | None
    alignment: dict | None = None


def module_metrics(spec, frame, nprocs, run_time):
    """Characterize one module's records (a loader Table) per :class:`ModuleMetrics`."""
    ops = {name: counter_sum(frame, counters) for name, counters in spec.ops.items()}
    bytes_read = counter_sum(frame, [spec.bytes_read]) if spec.bytes_read else None
    bytes_written = counter_sum(frame, [spec.bytes_written]) if spec.bytes_written else None
    return ModuleMetrics(
        module=spec.name,
        records=len(frame),
        files=file_counts([(spec, frame)]),
        bytes_read=bytes_read,
        bytes_written=bytes_written,
        ops=ops,
        read_sizes=_transfer_sizes(spec, frame, "read", bytes_read, ops.get("reads")),
        write_sizes=_transfer_sizes(spec, frame, "write", bytes_written, ops.get("writes")),
        sequential_read_pct=_pct(frame, spec.seq_reads, ops.get("reads")),
        consecutive_read_pct=_pct(frame, spec.consec_reads, ops.get("reads")),
        sequential_write_pct=_pct(frame, spec.seq_writes, ops.get("writes")),
        consecutive_write_pct=_pct(frame, spec.consec_writes, ops.get("writes")),
        io_time=io_time([(spec, frame)], nprocs, run_time),
        rank_balance=rank_balance(spec, frame, nprocs),
        alignment=_alignment(spec, frame, ops),
    )


def _alignment(spec, frame, ops):
    """POSIX only, where the log knows the alignments (Darshan's POSIX_FILE_ALIGNMENT, the
    file system's block or stripe size, and POSIX_MEM_ALIGNMENT): the share of reads and
    writes starting off the file alignment, and of those whose buffer is off the memory
    alignment (POSIX_FILE_NOT_ALIGNED, POSIX_MEM_NOT_ALIGNED), with the largest alignments
    seen. None elsewhere, and for the op log, which records no alignment."""
    names = ("POSIX_FILE_ALIGNMENT", "POSIX_MEM_ALIGNMENT", "POSIX_FILE_NOT_ALIGNED",
             "POSIX_MEM_NOT_ALIGNED")
    if spec.name != "POSIX" or not set(names) <= set(frame.columns) or frame.empty:
        return None
    file_align = int(frame["POSIX_FILE_ALIGNMENT"].max())
    if file_align <= 0:
        return None
    accesses = (ops.get("reads") or 0) + (ops.get("writes") or 0)
    off_file, off_mem = counter_sum(frame, [names[2]]), counter_sum(frame, [names[3]])
    return {"file_alignment": file_align,
            "mem_alignment": int(frame["POSIX_MEM_ALIGNMENT"].max()),
            "file_not_aligned_pct": 100.0 * off_file / accesses if accesses else None,
            "mem_not_aligned_pct": 100.0 * off_mem / accesses if accesses else None}


def file_counts(parts):
    """Files over the (spec, frame) pairs in ``parts``, per :class:`Files`; a file that
    several modules touched counts once."""
    has_bytes = any(spec.bytes_read for spec, _ in parts)
    files, file_of = np.unique(_pooled(parts, lambda spec, frame: frame["id"]),
                               return_inverse=True)
    ranks = _pooled(parts, lambda spec, frame: frame["rank"])
    several_ranks = np.bincount(np.unique(np.stack([file_of, ranks]), axis=1)[0],
                                minlength=len(files)) > 1
    reduced = np.bincount(file_of[ranks < 0], minlength=len(files)) > 0
    shared = int((several_ranks | reduced).sum())

    def files_with(counter):
        moved = _pooled(parts, lambda spec, frame: _counter(frame, getattr(spec, counter)))
        return int((np.bincount(file_of, weights=moved, minlength=len(files)) > 0).sum())

    return Files(
        total=len(files),
        shared=shared,
        unique=len(files) - shared,
        read=files_with("bytes_read") if has_bytes else None,
        written=files_with("bytes_written") if has_bytes else None,
    )


def io_time(parts, nprocs, run_time):
    """I/O time over the (spec, frame) pairs in ``parts``, per :class:`IOTime`."""
    times = _pooled(parts, _record_times)
    ranks = _pooled(parts, lambda spec, frame: frame["rank"])
    own = ranks >= 0
    reduced = _pooled(parts, lambda spec, frame: _reduced_slowest_times(spec, frame, nprocs))
    per_rank = np.bincount(ranks[own], weights=times[own])
    slowest = float((per_rank.max() if len(per_rank) else 0.0) + reduced.sum())
    mean = float(times.sum() / nprocs)
    return IOTime(
        slowest_rank=slowest,
        mean_per_rank=mean,
        slowest_rank_share=slowest / run_time if run_time > 0 else None,
        mean_per_rank_share=mean / run_time if run_time > 0 else None,
    )


def negative_time_messages(spec, frame):
    """One message per time counter that holds negative values (which count as 0)."""
    return [f"{spec.name}: {int((frame[counter] < 0).sum())} record(s) hold a negative "
            f"{counter} (down to {frame[counter].min():.6g} s); counted as 0"
            for counter in spec.time_counters if (frame[counter] < 0).any()]


def _record_times(spec, frame):
    """Read + write + metadata time of every record; negative values count as 0."""
    times = np.column_stack([frame[name] for name in spec.time_counters]) \
        if len(frame) else np.zeros((0, len(spec.time_counters)))
    return np.maximum(times, 0.0).sum(axis=1)


def _reduced_slowest_times(spec, frame, nprocs):
    """For every record reduced over all ranks, the time it adds to the slowest rank's
    (see IOTime)."""
    reduced = frame["rank"] < 0
    if spec.slowest_rank_time is None:
        return _record_times(spec, frame)[reduced] / nprocs
    return np.maximum(frame[spec.slowest_rank_time][reduced], 0.0)


def _counter(frame, counter):
    """A counter's values with negatives as 0; zeros for a counter the module does not have."""
    if counter is None:
        return np.zeros(len(frame), dtype=np.int64)
    return np.maximum(frame[counter], 0)


def _pooled(parts, values):
    """``values(spec, frame)`` of every part, concatenated into one array."""
    arrays = [values(spec, frame) for spec, frame in parts]
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)


def _transfer_sizes(spec, frame, op, nbytes, nops):
    counters = spec.size_counters(op)
    if counters is None:
        return None
    counts = counter_totals(frame, counters)
    total = sum(counts)
    used = [bucket for bucket, n in zip(SIZE_BUCKETS, counts) if n > 0]
    cumulative = np.cumsum(counts)
    median = SIZE_BUCKETS[int(np.searchsorted(cumulative, (total + 1) // 2))] if total else None
    return TransferSizes(
        histogram=dict(zip(SIZE_BUCKETS, counts)),
        operations=total,
        min_bucket=used[0] if used else None,
        median_bucket=median,
        max_bucket=used[-1] if used else None,
        mean=nbytes / nops if nops else None,
    )


def _pct(frame, counter, nops):
    if counter is None or not nops:
        return None
    return 100.0 * counter_sum(frame, [counter]) / nops


def rank_balance(spec, frame, nprocs):
    """Bytes per rank of one module's records (:class:`RankBalance`; None without bytes or
    without a record of one rank)."""
    if not spec.bytes_read:
        return None
    moved = _counter(frame, spec.bytes_read) + _counter(frame, spec.bytes_written)
    rank = frame["rank"]
    own = rank >= 0
    if not own.any():
        return None
    per_rank = np.zeros(max(nprocs, int(rank.max()) + 1), dtype=np.int64)
    np.add.at(per_rank, rank[own], moved[own])
    return RankBalance(
        ranks=nprocs,
        ranks_with_io=int((per_rank > 0).sum()),
        min_bytes=int(per_rank.min()),
        mean_bytes=int(per_rank.sum()) / nprocs,
        max_bytes=int(per_rank.max()),
        shared_bytes=int(moved[~own].sum()),
    )

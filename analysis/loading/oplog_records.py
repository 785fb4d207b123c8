"""Darshan counter records computed from a sequence of operations, as the Darshan runtime would
have counted them: one record per (rank, file), every counter the characterization reads.

Input is an :class:`Ops` table (one row per call, in the order the calls completed on each
rank, which is the order in which Darshan's wrappers update a record). The definitions follow
the Darshan runtime (3.x):

- Operation counts and bytes: every call counts once; a call that moved 0 bytes counts too.
- Size histograms: the byte count of each read or write in Darshan's ten buckets (0-100,
  101-1024, ..., 1 GiB+, upper bounds included).
- SEQ / CONSEC (POSIX only): per record, the end of the previous read (write) is kept as
  ``last = offset + bytes - 1`` (0 before the first); a read at an offset above ``last`` is
  sequential, one at exactly ``last + 1`` is consecutive. Reads and writes keep separate ends.
  As Darshan does, an open or a close of the file by the rank sets ``last`` back to 0.
- ``MAX_BYTE_READ`` / ``WRITTEN``: the highest ``offset + bytes - 1`` (0 without access).
- ``RW_SWITCHES``: changes between reading and writing, in call order.
- ``ACCESS1..4``: the four most frequent access sizes (reads and writes together), most
  frequent first (ties: the larger size first), with their counts.
- Times: ``F_READ_TIME`` adds, per call, its end minus the later of its start and the latest
  end of the record's earlier reads (Darshan's "no overlap" timer: calls of concurrent threads
  are not counted twice; a call ending inside an earlier one subtracts, as in Darshan).
  ``F_WRITE_TIME`` does the same over writes and fsync/fdatasync (Darshan counts syncs as write
  time), ``F_META_TIME`` over open, close, seek, stat and mmap calls. An MPI_File_set_view
  counts in ``MPIIO_VIEWS`` and adds no time: Darshan times a view only when it passes hints
  (MPIIO_HINTS), and the engines' views pass none. ``*_START_TIMESTAMP`` is
  the first start and ``*_END_TIMESTAMP`` the last end of the kind (0 if none);
  ``F_MAX_READ_TIME`` the longest read, with its size in ``MAX_READ_TIME_SIZE``.
- Records are never reduced over ranks (Darshan reduces a file every rank opened into one
  rank -1 record): every record keeps its rank, so ``F_SLOWEST_RANK_TIME`` and the
  FASTEST/SLOWEST/VARIANCE counters, which only reduced records carry, stay 0.
Counters a module has that are not listed here stay 0.
"""

from dataclasses import dataclass

import numpy as np
from dlio_mpi.run.oplog_format import OP

from dlio_mpi_analysis.characterization.counters import SIZE_BUCKETS
from dlio_mpi_analysis.loading import darshan_util
from dlio_mpi_analysis.loading.table import Table

# op codes of dlio_mpi's op log
READ, WRITE, OPEN, CLOSE, FSYNC, FDATASYNC, SEEK, STAT, MMAP, VIEW = (
    OP[name] for name in ("read", "write", "open", "close", "fsync", "fdatasync", "seek", "stat",
                          "mmap", "view"))
META_OPS = (OPEN, CLOSE, SEEK, STAT, MMAP)
SYNC_OPS = (FSYNC, FDATASYNC)
# upper bounds (inclusive) of Darshan's size buckets but the last
BUCKET_BOUNDS = np.array([100, 1024, 10240, 102400, 1048576, 4194304, 10485760, 104857600,
                          1073741824], dtype=np.int64)
PREFIX = {"POSIX": "POSIX", "STDIO": "STDIO", "MPI-IO": "MPIIO", "H5F": "H5F", "H5D": "H5D"}


@dataclass
class Ops:
    """Calls of one module: parallel arrays, one element per call, in completion order per
    rank. Times are seconds since the job's start. ``collective`` marks MPI-IO collective
    calls (opens on a communicator of several ranks, read_at_all / write_at_all)."""

    rank: np.ndarray
    id: np.ndarray  # Darshan record id (uint64) of the file (or HDF5 dataset)
    op: np.ndarray
    start: np.ndarray
    end: np.ndarray
    offset: np.ndarray
    length: np.ndarray
    collective: np.ndarray

    def __len__(self):
        return len(self.op)

    def select(self, mask):
        return Ops(**{name: value[mask] for name, value in self.__dict__.items()})

    @classmethod
    def concat(cls, parts):
        parts = [part for part in parts if len(part)]
        if not parts:
            return cls.empty()
        return cls(**{name: np.concatenate([getattr(p, name) for p in parts])
                      for name in cls.__dataclass_fields__})

    @classmethod
    def empty(cls):
        return cls(rank=np.zeros(0, np.int64), id=np.zeros(0, np.uint64),
                   op=np.zeros(0, np.uint8), start=np.zeros(0), end=np.zeros(0),
                   offset=np.zeros(0, np.int64), length=np.zeros(0, np.int64),
                   collective=np.zeros(0, bool))


def size_buckets(lengths):
    """Darshan's size-bucket index (0..9) of each byte count."""
    return np.searchsorted(BUCKET_BOUNDS, lengths, side="left")


def module_records(module, ops, extra=None):
    """The records of ``module`` (POSIX, STDIO, MPI-IO, H5F or H5D) for ``ops``: a Table
    shaped like the loader's (id, rank, every counter and fcounter of the module by name),
    one row per (rank, id), sorted by rank then id. ``extra`` maps counter names to values
    set on every record (e.g. H5D_USE_MPIIO_COLLECTIVE)."""
    p = PREFIX[module]
    counter_names = list(darshan_util.counter_names(module))
    fcounter_names = list(darshan_util.fcounter_names(module))
    ids, id_index = np.unique(ops.id, return_inverse=True)
    combined = ops.rank.astype(np.int64) * len(ids) + id_index.reshape(-1)
    keys, group = np.unique(combined, return_inverse=True)  # sorted by rank, then id
    group = group.reshape(-1)
    n = len(keys)
    order = np.argsort(group, kind="stable")  # calls of a record together, in call order
    ops, group = ops.select(order), group[order]
    counters = {name: np.zeros(n, np.int64) for name in counter_names}
    fcounters = {name: np.zeros(n, np.float64) for name in fcounter_names}

    def count(mask):
        return np.bincount(group[mask], minlength=n).astype(np.int64)

    def put(name, values):
        target = counters if name in counters else fcounters
        if name in target:
            target[name] = values

    reads, writes = ops.op == READ, ops.op == WRITE
    coll = ops.collective
    if module == "MPI-IO":
        put("MPIIO_INDEP_OPENS", count((ops.op == OPEN) & ~coll))
        put("MPIIO_COLL_OPENS", count((ops.op == OPEN) & coll))
        put("MPIIO_INDEP_READS", count(reads & ~coll))
        put("MPIIO_COLL_READS", count(reads & coll))
        put("MPIIO_INDEP_WRITES", count(writes & ~coll))
        put("MPIIO_COLL_WRITES", count(writes & coll))
        put("MPIIO_SYNCS", count(np.isin(ops.op, SYNC_OPS)))
        put("MPIIO_VIEWS", count(ops.op == VIEW))
    else:
        put(f"{p}_OPENS", count(ops.op == OPEN))
        put(f"{p}_READS", count(reads))
        put(f"{p}_WRITES", count(writes))
    if module == "POSIX":
        put("POSIX_SEEKS", count(ops.op == SEEK))
        put("POSIX_STATS", count(ops.op == STAT))
        put("POSIX_MMAPS", count(ops.op == MMAP))
        put("POSIX_FSYNCS", count(ops.op == FSYNC))
        put("POSIX_FDSYNCS", count(ops.op == FDATASYNC))
    elif module == "STDIO":
        put("STDIO_SEEKS", count(ops.op == SEEK))
        put("STDIO_FLUSHES", count(np.isin(ops.op, SYNC_OPS)))
    elif module == "H5F":
        put("H5F_FLUSHES", count(np.isin(ops.op, SYNC_OPS)))
    if module != "H5F":
        _data_counters(p, module, ops, group, n, reads, writes, put)
    _times(p, module, ops, group, n, reads, writes, put)
    for name, value in (extra or {}).items():
        put(name, np.full(n, value, dtype=np.int64 if name in counters else np.float64))
    columns = {"id": ids[keys % max(len(ids), 1)].astype(np.uint64),
               "rank": keys // max(len(ids), 1)}
    columns.update((name, counters[name]) for name in counter_names)
    columns.update((name, fcounters[name]) for name in fcounter_names)
    return Table(columns, length=n)


def _data_counters(p, module, ops, group, n, reads, writes, put):
    for kind, mask, word in (("READ", reads, "READ"), ("WRITE", writes, "WRITTEN")):
        lengths = ops.length[mask]
        put(f"{p}_BYTES_{word}", np.bincount(group[mask], weights=lengths,
                                            minlength=n).astype(np.int64))
        last = np.zeros(n, np.int64)
        np.maximum.at(last, group[mask], ops.offset[mask] + lengths - 1)
        put(f"{p}_MAX_BYTE_{word}", last)
        if module in ("POSIX", "MPI-IO", "H5D"):
            agg = "_AGG" if module != "POSIX" else ""
            cells = np.bincount(group[mask] * 10 + size_buckets(lengths), minlength=n * 10)
            for b, bucket in enumerate(SIZE_BUCKETS):
                put(f"{p}_SIZE_{kind}{agg}_{bucket}", cells[b::10].astype(np.int64))
        if module == "POSIX":
            # Darshan forgets a record's last offset at every open and close of it
            handle = np.isin(ops.op, (OPEN, CLOSE))
            era = np.cumsum(handle)[mask]
            seq, consec = sequential_flags(group[mask], ops.offset[mask], lengths, era)
            put(f"POSIX_SEQ_{kind}S", np.bincount(group[mask][seq], minlength=n))
            put(f"POSIX_CONSEC_{kind}S", np.bincount(group[mask][consec], minlength=n))
    rw = reads | writes
    if module in ("POSIX", "MPI-IO", "H5D"):
        g, is_write = group[rw], writes[rw]
        switch = (g[1:] == g[:-1]) & (is_write[1:] != is_write[:-1])
        put(f"{p}_RW_SWITCHES", np.bincount(g[1:][switch], minlength=n).astype(np.int64))
    if module in ("POSIX", "MPI-IO"):
        _common_accesses(p, group[rw], ops.length[rw], n, put)


def sequential_flags(group, offset, length, era=None):
    """(sequential, consecutive) flags of accesses grouped by record (in call order within a
    record), with Darshan's definitions (see the module docstring). ``era`` (optional): a
    number that changes where the record was opened or closed between two accesses; Darshan
    forgets the last offset there, as at a record's first access."""
    last = offset + length - 1
    previous = np.zeros(len(offset), np.int64)
    if len(offset):
        previous[1:] = last[:-1]
        first = np.ones(len(offset), bool)
        first[1:] = group[1:] != group[:-1]
        if era is not None:
            first[1:] |= era[1:] != era[:-1]
        previous[first] = 0
    return offset > previous, offset == previous + 1


def _common_accesses(p, group, lengths, n, put):
    if not len(group):
        return
    group, lengths = np.asarray(group, np.int64), np.asarray(lengths, np.int64)
    # each (record, size) pair once, with its count
    order = np.lexsort((lengths, group))
    g, size = group[order], lengths[order]
    new = np.r_[True, (g[1:] != g[:-1]) | (size[1:] != size[:-1])]
    starts = np.flatnonzero(new)
    g, size = g[starts], size[starts]
    count = np.diff(np.r_[starts, len(order)])
    # per record, the most frequent first, ties the larger size first
    order = np.lexsort((-size, -count, g))
    g, size, count = g[order], size[order], count[order]
    first_of_record = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    slot = np.arange(len(g)) - np.repeat(first_of_record, np.diff(np.r_[first_of_record, len(g)]))
    for k in range(4):
        rows = slot == k
        sizes, counts = np.zeros(n, np.int64), np.zeros(n, np.int64)
        sizes[g[rows]] = size[rows]
        counts[g[rows]] = count[rows]
        put(f"{p}_ACCESS{k + 1}_ACCESS", sizes)
        put(f"{p}_ACCESS{k + 1}_COUNT", counts)


def no_overlap_time(group, start, end, n):
    """Darshan's no-overlap timer summed per record over calls grouped by record (call order
    within a record)."""
    if not len(group):
        return np.zeros(n)
    first = np.ones(len(end), bool)
    first[1:] = group[1:] != group[:-1]
    latest = _cummax_by_run(end, first)
    previous = np.zeros(len(end))
    previous[1:] = latest[:-1]
    previous[first] = 0.0
    return np.bincount(group, weights=end - np.maximum(start, previous), minlength=n)


def _cummax_by_run(values, first):
    """The running maximum of ``values`` restarted at every ``first`` (runs of a record):
    exact, through each value's rank among the sorted distinct values, the run number above
    it, so that one running maximum of integers serves every run."""
    distinct, rank = np.unique(values, return_inverse=True)
    run = np.cumsum(first) - 1
    keyed = run.astype(np.int64) * (len(distinct) + 1) + rank.reshape(-1)
    return distinct[np.maximum.accumulate(keyed) - run * (len(distinct) + 1)]


def _times(p, module, ops, group, n, reads, writes, put):
    kinds = {"READ": reads, "WRITE": writes | np.isin(ops.op, SYNC_OPS),
             "META": np.isin(ops.op, META_OPS)}
    for kind, mask in kinds.items():
        put(f"{p}_F_{kind}_TIME", no_overlap_time(group[mask], ops.start[mask], ops.end[mask], n))
    for kind, mask in (("OPEN", ops.op == OPEN), ("CLOSE", ops.op == CLOSE),
                       ("READ", reads), ("WRITE", writes)):
        first = np.full(n, np.inf)
        np.minimum.at(first, group[mask], ops.start[mask])
        last = np.zeros(n)
        np.maximum.at(last, group[mask], ops.end[mask])
        put(f"{p}_F_{kind}_START_TIMESTAMP", np.where(np.isinf(first), 0.0, first))
        put(f"{p}_F_{kind}_END_TIMESTAMP", last)
    for kind, mask in (("READ", reads), ("WRITE", writes)):
        if not mask.any():
            continue
        g, t, length = group[mask], ops.end[mask] - ops.start[mask], ops.length[mask]
        # per record the longest call, the first of equally long ones
        order = np.lexsort((-t, g))
        head = order[np.r_[True, g[order][1:] != g[order][:-1]]]
        time, size = np.zeros(n), np.zeros(n, np.int64)
        time[g[head]] = t[head]
        size[g[head]] = length[head]
        put(f"{p}_F_MAX_{kind}_TIME", time)
        put(f"{p}_MAX_{kind}_TIME_SIZE", size)

"""Diagnosis rules that need only a job's Darshan counters and traces: every problem Drishti
detects, and the training problems it cannot see (see dlio_mpi_analysis.diagnosis.finding_kinds for the ids and
docs/diagnose.md for each rule's definition).

Every rule looks at the job's data and checkpoint files (:mod:`dlio_mpi_analysis.characterization.file_roles`): a
configuration file's small reads or a log's small writes are not the job's. A job without any
such file is looked at whole, but for its standard streams and the MPI library's own files.
Severity, as in dlio_mpi_analysis.diagnosis.diagnose, is the share of the run at stake: the slowest rank's I/O
share of the run time, times the share of the operations (or bytes, or time) the finding is
about.
"""

import numpy as np

from dlio_mpi.display import units

from dlio_mpi_analysis.characterization.counters import SIZE_BUCKETS
from dlio_mpi_analysis.characterization.file_roles import DATA_IO, keep_roles
from dlio_mpi_analysis.characterization.group_sums import group_sum
from dlio_mpi_analysis.characterization.unseen_io import opened_without_io, unseen_io_line
from dlio_mpi_analysis.loading.trace_ops import READ_OP
from dlio_mpi_analysis.diagnosis.findings import Finding

# the upper edge in bytes of each of Darshan's size buckets (the last has none)
BUCKET_EDGES = dict(zip(SIZE_BUCKETS, (100, 1024, 10240, 102400, 1 << 20, 4 << 20, 10 << 20,
                                       100 << 20, 1 << 30, None)))
TOP_FILES = 5
TRACE_MODULES = ("DXT_POSIX", "DXT_MPIIO")
RUN_GAP_S = 0.001         # a pause longer than this between two reads ends a run


class LogJob:
    """The parts of a characterization the log rules read: the data files' records (module ->
    frame), their names, the traces of their reads, ranks, run time and I/O share."""

    def __init__(self, char, thresholds, log=None):
        self.char, self.t = char, thresholds
        self.hints = tuple(getattr(log, "hints", ()) or ())
        self.workers = dict(getattr(log, "workers", {}) or {})
        roles = getattr(char, "roles", None) or {}
        records = getattr(char, "records", None) or {}
        wanted = DATA_IO
        if not any(not keep_roles(f, roles, DATA_IO).empty for f in records.values()):
            wanted = ("data", "checkpoint", "other")
        self.roles = roles
        self.records = {m: keep_roles(f, roles, wanted) for m, f in records.items()}
        self.traces = {m: keep_roles(f, roles, wanted)
                       for m, f in (getattr(char, "dxt_segments", None) or {}).items()}
        self.names = getattr(char, "names", None) or {}
        self.nprocs = max(1, int(getattr(char, "nprocs", 1) or 1))
        self.run_time = float(getattr(char, "run_time", 0.0) or 0.0)
        share = char.totals.io_time.slowest_rank_share
        self.io_share = min(1.0, share) if share is not None else 0.0

    def frame(self, module):
        frame = self.records.get(module)
        return frame if frame is not None and not frame.empty else None

    def name(self, record_id):
        return self.names.get(int(record_id), str(record_id))

    def top(self, ids_values):
        """File names of the (id, value) pairs, largest value first, at most TOP_FILES."""
        ranked = sorted(ids_values, key=lambda p: -p[1])
        return [self.name(i) for i, v in ranked[:TOP_FILES] if v > 0]


def _col(frame, name):
    if name not in frame:
        return np.zeros(len(frame), dtype=np.int64)
    return np.maximum(frame[name], 0)


def _small(frame, op, limit):
    """Operations of ``op`` below ``limit`` bytes, per record (Darshan's size buckets whose
    upper edge is at most ``limit``)."""
    buckets = [b for b in SIZE_BUCKETS if BUCKET_EDGES[b] is not None and BUCKET_EDGES[b] <= limit]
    out = np.zeros(len(frame), dtype=np.int64)
    for b in buckets:
        out = out + _col(frame, f"POSIX_SIZE_{op.upper()}_{b}")
    return out


def _shared(frame):
    """The rows of files shared by ranks: reduced over all ranks (rank -1) or of ids that
    several ranks hold."""
    files, of = np.unique(frame["id"], return_inverse=True)
    of = of.reshape(-1)
    pairs = np.unique(np.stack([of, frame["rank"].astype(np.int64)]), axis=1)
    ranks = np.bincount(pairs[0], minlength=len(files))
    return frame[(frame["rank"] < 0) | (ranks[of] > 1)]


class PerFile:
    """Values summed per file (record id), the files in ascending id order, as pairs."""

    def __init__(self, ids, values):
        self.ids, of = np.unique(ids, return_inverse=True)
        self.values = group_sum(of.reshape(-1), values, len(self.ids))

    def __len__(self):
        return len(self.ids)

    def items(self):
        return zip(self.ids.tolist(), self.values.tolist())


def _per_file(frame, values):
    return PerFile(frame["id"], values)


def _ranks(frame, mask):
    return sorted({int(r) for r in frame["rank"][mask] if r >= 0})


def _small_requests(job, op, shared):
    frame = job.frame("POSIX")
    if frame is None:
        return None
    if shared:
        frame = _shared(frame)
        if frame.empty:
            return None
    count = "POSIX_READS" if op == "read" else "POSIX_WRITES"
    total = int(_col(frame, count).sum())
    small = _small(frame, op, job.t.small_bytes)
    n_small = int(small.sum())
    if not total or n_small / total <= job.t.small_share or n_small <= job.t.small_count:
        return None
    share = n_small / total
    key = f"small_{op}s" + ("_shared" if shared else "")
    per_file = _per_file(frame, small)
    files = job.top(per_file.items())
    where = f" of {int((per_file.values > 0).sum())} shared file(s)" if shared else ""
    return Finding(
        key, ("small reads" if op == "read" else "small writes") +
        (" of shared files" if shared else ""),
        f"{n_small:,} of {total:,} POSIX {op}s{where} below {units.size(job.t.small_bytes)} "
        f"({100 * share:.0f} %; thresholds {100 * job.t.small_share:.0f} % and "
        f"{job.t.small_count:,} {op}s; POSIX_SIZE_{op.upper()}_* buckets)",
        f"small_{op}_share", share, job.t.small_share, job.io_share * share,
        files=files, ranks=_ranks(frame, small > 0))


def small_reads(job):
    return _small_requests(job, "read", False)


def small_writes(job):
    return _small_requests(job, "write", False)


def small_reads_shared(job):
    return _small_requests(job, "read", True)


def small_writes_shared(job):
    return _small_requests(job, "write", True)


def _misaligned(job, counter, key, title, what):
    frame = job.frame("POSIX")
    if frame is None or counter not in frame:
        return None
    ops = _col(frame, "POSIX_READS") + _col(frame, "POSIX_WRITES")
    off = _col(frame, counter)
    total, n_off = int(ops.sum()), int(off.sum())
    if not total or n_off / total <= job.t.misaligned_share:
        return None
    share = n_off / total
    align = "POSIX_FILE_ALIGNMENT" if counter == "POSIX_FILE_NOT_ALIGNED" else \
        "POSIX_MEM_ALIGNMENT"
    alignment = int(frame[align].max()) if align in frame else 0
    return Finding(
        key, title,
        f"{n_off:,} of {total:,} POSIX reads and writes {what} of {alignment} B "
        f"({counter}; {100 * share:.0f} %, threshold {100 * job.t.misaligned_share:.0f} %)",
        f"{counter.lower()}_share", share, job.t.misaligned_share, job.io_share * share / 2,
        files=job.top(_per_file(frame, off).items()), ranks=_ranks(frame, off > 0))


def misaligned_file(job):
    return _misaligned(job, "POSIX_FILE_NOT_ALIGNED", "misaligned",
                       "accesses off the file alignment", "start off the file alignment")


def misaligned_memory(job):
    return _misaligned(job, "POSIX_MEM_NOT_ALIGNED", "misaligned_memory",
                       "buffers off the memory alignment", "use a buffer off the alignment")


def _redundant(job, op):
    """Bytes moved beyond a file's extent (the highest byte accessed + 1): the same bytes
    read (or written) more than once."""
    frame = job.frame("POSIX")
    if frame is None:
        return None
    moved = _per_file(frame, _col(frame, f"POSIX_BYTES_{'READ' if op == 'read' else 'WRITTEN'}"))
    files_of = np.searchsorted(moved.ids, frame["id"])
    extent = np.full(len(moved), np.iinfo(np.int64).min)
    np.maximum.at(extent, files_of,
                  _col(frame, f"POSIX_MAX_BYTE_{'READ' if op == 'read' else 'WRITTEN'}") + 1)
    touched = moved.values > 0
    if not touched.any():
        return None
    over = np.maximum(moved.values[touched] - extent[touched], 0)
    extra, total = int(over.sum()), int(moved.values[touched].sum())
    if not extra or extra / total <= job.t.small_share:
        return None
    ratio = total / (total - extra)
    files = job.top(zip(moved.ids[touched].tolist(), over.tolist()))
    verb = "read" if op == "read" else "written"
    return Finding(
        f"redundant_{op}s", f"bytes {verb} more than once",
        f"{units.size(total)} {verb} from files whose extents hold {units.size(total - extra)} "
        f"({ratio:.2f}x; POSIX_BYTES_{'READ' if op == 'read' else 'WRITTEN'} over "
        f"POSIX_MAX_BYTE_{'READ' if op == 'read' else 'WRITTEN'} + 1 per file; threshold "
        f"{100 * job.t.small_share:.0f} % of the bytes beyond the extent)"
        + ("; a training job reads its data once per epoch" if op == "read" else ""),
        f"{verb}_over_extent", ratio, 1.0, job.io_share * extra / total / 2, files=files)


def redundant_reads(job):
    return _redundant(job, "read")


def redundant_writes(job):
    return _redundant(job, "write")


def _random(job, op):
    frame = job.frame("POSIX")
    if frame is None:
        return None
    kind = "READS" if op == "read" else "WRITES"
    ops = _col(frame, f"POSIX_{kind}")
    rand = np.maximum(ops - _col(frame, f"POSIX_SEQ_{kind}"), 0)
    total, n_rand = int(ops.sum()), int(rand.sum())
    if not total or n_rand / total <= job.t.random_share or n_rand <= job.t.random_count:
        return None
    share = n_rand / total
    return Finding(
        "random_access" if op == "read" else "random_writes",
        "random reads" if op == "read" else "random writes",
        f"{n_rand:,} of {total:,} POSIX {op}s not sequential ({100 * share:.0f} %; "
        f"POSIX_{kind} - POSIX_SEQ_{kind}; thresholds {100 * job.t.random_share:.0f} % and "
        f"{job.t.random_count:,} {op}s)", f"random_{op}_share", share, job.t.random_share,
        job.io_share * share / 2, files=job.top(_per_file(frame, rand).items()),
        ranks=_ranks(frame, rand > 0))


def random_reads(job):
    return _random(job, "read")


def random_writes(job):
    return _random(job, "write")


def metadata_time(job):
    frame = job.frame("POSIX")
    if frame is None or "POSIX_F_META_TIME" not in frame:
        return None
    meta = np.maximum(frame["POSIX_F_META_TIME"], 0.0)
    slow = meta > job.t.metadata_seconds
    if not slow.any():
        return None
    worst = float(meta.max())
    return Finding(
        "metadata_time", "high metadata time",
        f"{int(slow.sum())} record(s) spent more than {job.t.metadata_seconds:g} s in metadata "
        f"calls (POSIX_F_META_TIME; the most {worst:.1f} s)", "meta_seconds", worst,
        job.t.metadata_seconds,
        min(1.0, worst / job.run_time) if job.run_time else job.io_share,
        files=job.top(_per_file(frame, meta * slow).items()), ranks=_ranks(frame, slow))


def _stragglers(job, key, title, spread, whole, what):
    frame = job.frame("POSIX")
    if frame is None:
        return None
    shared = frame[frame["rank"] < 0]
    if shared.empty or not all(c in shared for c in spread + whole):
        return None
    gap = np.abs(shared[spread[0]] - shared[spread[1]])
    total = sum(np.maximum(shared[c], 0) for c in whole)
    ratio = np.divide(gap, total, out=np.zeros(len(gap), dtype=float), where=total > 0)
    hit = ratio > job.t.straggler_share
    if not hit.any():
        return None
    worst = float(ratio.max())
    return Finding(
        key, title,
        f"{int(hit.sum())} shared file(s) where the slowest and the fastest rank differ by "
        f"{100 * worst:.0f} % of the file's {what} at most ({spread[0]} - {spread[1]} over "
        f"{' + '.join(whole)}; threshold {100 * job.t.straggler_share:.0f} %)",
        f"{key}_share", worst, job.t.straggler_share, job.io_share * min(1.0, worst) / 2,
        files=job.top(zip(shared["id"][hit], ratio[hit])))


def straggler_bytes(job):
    return _stragglers(job, "straggler_bytes", "ranks move unequal bytes of a shared file",
                       ("POSIX_SLOWEST_RANK_BYTES", "POSIX_FASTEST_RANK_BYTES"),
                       ("POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN"), "bytes")


def straggler_time(job):
    return _stragglers(job, "straggler_time", "ranks spend unequal time on a shared file",
                       ("POSIX_F_SLOWEST_RANK_TIME", "POSIX_F_FASTEST_RANK_TIME"),
                       ("POSIX_F_READ_TIME", "POSIX_F_WRITE_TIME", "POSIX_F_META_TIME"),
                       "I/O time")


def stdio_heavy(job):
    stdio, posix = job.frame("STDIO"), job.frame("POSIX")
    if stdio is None:
        return None
    moved = int(_col(stdio, "STDIO_BYTES_READ").sum() + _col(stdio, "STDIO_BYTES_WRITTEN").sum())
    whole = moved + (0 if posix is None else int(_col(posix, "POSIX_BYTES_READ").sum()
                                                 + _col(posix, "POSIX_BYTES_WRITTEN").sum()))
    if not whole or moved / whole <= job.t.stdio_share:
        return None
    share = moved / whole
    per = _per_file(stdio, _col(stdio, "STDIO_BYTES_READ") + _col(stdio, "STDIO_BYTES_WRITTEN"))
    return Finding(
        "stdio_heavy", "heavy STDIO use",
        f"STDIO moves {units.size(moved)} of the {units.size(whole)} the job's files moved through "
        f"STDIO and POSIX ({100 * share:.0f} %; threshold {100 * job.t.stdio_share:.0f} %; "
        "standard streams not counted)", "stdio_byte_share", share, job.t.stdio_share,
        job.io_share * share / 2, files=job.top(per.items()))


def _independent(job, op):
    frame = job.frame("MPI-IO")
    if frame is None:
        return None
    kind = "READS" if op == "read" else "WRITES"
    shared = _shared(frame)
    if shared.empty:
        return None
    indep = _col(shared, f"MPIIO_INDEP_{kind}") + _col(shared, f"MPIIO_NB_{kind}")
    coll = _col(shared, f"MPIIO_COLL_{kind}") + _col(shared, f"MPIIO_SPLIT_{kind}")
    per_indep, per_coll = _per_file(shared, indep), _per_file(shared, coll)
    chosen = (per_coll.values == 0) & (per_indep.values > job.t.collective_count)
    if not chosen.any():
        return None
    hit = list(zip(per_indep.ids[chosen].tolist(), per_indep.values[chosen].tolist()))
    n = int(per_indep.values[chosen].sum())
    return Finding(
        "shared_independent" if op == "read" else "shared_independent_writes",
        f"shared file {'read' if op == 'read' else 'written'} independently",
        f"{n:,} independent MPI-IO {op}s and no collective one on {len(hit)} file(s) "
        f"shared by ranks (MPIIO_INDEP_{kind} + MPIIO_NB_{kind}, MPIIO_COLL_{kind} = 0; "
        f"threshold {job.t.collective_count:,} {op}s per file)", f"independent_{op}s",
        float(n), float(job.t.collective_count), job.io_share / 2,
        files=job.top(hit))


def shared_independent_reads(job):
    return _independent(job, "read")


def shared_independent_writes(job):
    return _independent(job, "write")


def _blocking(job, op):
    frame = job.frame("MPI-IO")
    if frame is None:
        return None
    kind = "READS" if op == "read" else "WRITES"
    calls = sum(_col(frame, f"MPIIO_{k}_{kind}") for k in ("INDEP", "COLL", "SPLIT", "NB"))
    nb = int(_col(frame, f"MPIIO_NB_{kind}").sum())
    total = int(calls.sum())
    if not total or nb:
        return None
    time = _col(frame, f"MPIIO_F_{'READ' if op == 'read' else 'WRITE'}_TIME").sum() \
        if f"MPIIO_F_{'READ' if op == 'read' else 'WRITE'}_TIME" in frame else 0.0
    return Finding(
        f"blocking_mpiio_{op}s", f"blocking MPI-IO {op}s",
        f"{total:,} MPI-IO {op}s, none nonblocking (MPIIO_NB_{kind} = 0), {time:.2f} s in "
        f"them over all ranks: the process waits for each", f"nonblocking_{op}s", 0.0, 1.0,
        job.io_share / 4, files=job.top(_per_file(frame, calls).items()))


def blocking_mpiio_reads(job):
    return _blocking(job, "read")


def blocking_mpiio_writes(job):
    return _blocking(job, "write")


def mpiio_aggregators(job):
    """cb_nodes of the hints the log records against the job's node count (given: a Darshan
    log does not record it)."""
    frame = job.frame("MPI-IO")
    if frame is None or not job.t.nodes:
        return None
    coll = sum(_col(frame, c).sum() for c in ("MPIIO_COLL_READS", "MPIIO_COLL_WRITES"))
    cb = None
    for hints in job.hints:
        for pair in hints.split(";"):
            key, _, value = pair.partition("=")
            if key.strip() == "cb_nodes" and value.strip().isdigit():
                cb = int(value)
    if not coll or cb is None or cb == job.t.nodes:
        return None
    where = "more than one per node (inter-node traffic)" if cb > job.t.nodes else \
        "fewer than one per node"
    return Finding(
        "mpiio_aggregators", "MPI-IO aggregators not one per node",
        f"cb_nodes={cb} in the hints the log records ({'; '.join(job.hints)}) for "
        f"{job.t.nodes} node(s): {where}; {int(coll):,} collective calls",
        "cb_nodes", float(cb), float(job.t.nodes), job.io_share / 4)


def checkpoint_stalls(job):
    """Checkpoint files' write and metadata time, on the rank that spent the most in them,
    over the run time."""
    frame = job.frame("POSIX")
    if frame is None or not job.run_time:
        return None
    ids = {i for i, r in job.roles.items() if r == "checkpoint"}
    ck = frame[np.isin(frame["id"], np.array(sorted(ids), dtype=np.uint64))]
    if ck.empty:
        return None
    spent = np.maximum(ck["POSIX_F_WRITE_TIME"], 0) + \
        np.maximum(ck["POSIX_F_META_TIME"], 0)
    ranks = ck["rank"]
    own = ranks >= 0
    per_rank = np.bincount(ranks[own], weights=spent[own]) if own.any() else np.zeros(1)
    worst = float(per_rank.max() + (spent[~own].sum() / job.nprocs))
    share = worst / job.run_time
    if share < job.t.checkpoint_share:
        return None
    written = int(_col(ck, "POSIX_BYTES_WRITTEN").sum())
    return Finding(
        "checkpoint_stalls", "checkpoint stalls",
        f"{len(set(ck['id'].tolist()))} checkpoint file(s), {units.size(written)} written, took "
        f"{worst:.2f} s of the busiest rank's time, {100 * share:.0f} % of the run (threshold "
        f"{100 * job.t.checkpoint_share:.0f} %; POSIX_F_WRITE_TIME + POSIX_F_META_TIME)",
        "checkpoint_share", share, job.t.checkpoint_share, share,
        files=job.top(_per_file(ck, spent).items()), ranks=_ranks(ck, spent > 0))


def workers_misattributed(job):
    """Forked data-loader workers, each with a Darshan log of its own, or Darshan's own totals
    disagreeing (HEATMAP bytes against the counters): Darshan records such workers' I/O
    against the wrong files or loses it. Evidence: the workers, and writes Darshan put under
    data files that the job only reads."""
    messages = [w for w in getattr(job.char, "warnings", []) or [] if "HEATMAP" in w]
    if not messages and not job.workers:
        return None
    parts = []
    if job.workers:
        n = sum(len(v) for v in job.workers.values())
        parts.append(f"{n} forked worker process(es) of rank(s) "
                     f"{', '.join(str(r) for r in sorted(job.workers))}, each with a Darshan "
                     "log of its own")
    frame = job.frame("POSIX")
    data = {i for i, r in job.roles.items() if r == "data"}
    if frame is not None and data:
        mine = frame[np.isin(frame["id"], np.array(sorted(data), dtype=np.uint64))]
        writes = int(_col(mine, "POSIX_WRITES").sum())
        if writes:
            parts.append(f"{writes} writes ({units.size(_col(mine, 'POSIX_BYTES_WRITTEN').sum())}) "
                         "counted under the data files it reads (POSIX_WRITES)")
    parts += messages[:1]
    return Finding(
        "workers_misattributed", "data-loader workers' I/O mis-attributed by Darshan",
        "; ".join(parts), "worker_processes",
        float(sum(len(v) for v in job.workers.values())), 0.0, job.io_share / 2,
        ranks=sorted(job.workers))


def io_not_recorded(job):
    """Data files opened and never read or written by a call Darshan records: their data moved
    through a memory mapping, Linux native AIO or io_uring (unseen_io), so every figure here
    leaves it out. Severity: the share of the data files it concerns."""
    files = opened_without_io(getattr(job.char, "records", None) or {}, job.names, job.roles)
    if not files:
        return None
    data = sum(1 for role in job.roles.values() if role == "data")
    share = len(files) / max(data, 1)
    return Finding(
        "io_not_recorded", "data files opened with no read or write Darshan saw",
        unseen_io_line(files), "files_opened_without_io", float(len(files)), 0.0,
        min(1.0, share), files=files[:TOP_FILES])


def _read_runs(job):
    """Contiguous runs of the traced reads: per (rank, file) in time order, a run goes on while
    each read starts where the one before ended and within RUN_GAP_S of its end (a pause is
    the training step between samples). Returns (reads per run, bytes per run, for each run
    whether it starts behind the end of the run before on its file, other than back at the
    file's start, and whether a run of the same file came before it, read sizes), or None
    without a trace of reads."""
    frame = next((job.traces[m] for m in TRACE_MODULES
                  if m in job.traces and not job.traces[m].empty), None)
    if frame is None:
        return None
    reads = frame[frame["op"] == READ_OP]
    if reads.empty:
        return None
    reads = reads.sorted_by("rank", "id", "start")
    rank, rid = reads["rank"], reads["id"]
    off, length = reads["offset"], reads["length"]
    start, end = reads["start"], reads["end"]
    same = np.r_[False, (rank[1:] == rank[:-1]) & (rid[1:] == rid[:-1])]
    contiguous = same & np.r_[False, (off[1:] == off[:-1] + length[:-1])
                              & (start[1:] - end[:-1] <= RUN_GAP_S)]
    run = np.cumsum(~contiguous) - 1
    pieces = np.bincount(run)
    nbytes = np.bincount(run, weights=length)
    first = np.flatnonzero(~contiguous)
    run_end = np.maximum.reduceat(off + length, first)      # where each run ended
    prev_end = np.r_[0, run_end[:-1]]
    backward = same[first] & (off[first] > 0) & (off[first] < prev_end)
    return pieces, nbytes, backward, same[first], length


def samples_in_pieces(job):
    runs = _read_runs(job)
    if runs is None:
        return None
    pieces, nbytes, _, _, length = runs
    if len(pieces) < 8:
        return None
    median_pieces = float(np.median(pieces))
    median_read = float(np.median(length))
    if median_pieces < job.t.pieces_per_sample or median_read >= job.t.small_bytes:
        return None
    return Finding(
        "samples_in_pieces", "samples read in pieces",
        f"{len(pieces):,} contiguous runs of reads in the trace, a median of "
        f"{median_pieces:.0f} reads of {units.size(median_read)} each for {units.size(np.median(nbytes))} "
        f"(threshold {job.t.pieces_per_sample:g} reads per run, reads below "
        f"{units.size(job.t.small_bytes)})", "reads_per_run", median_pieces,
        job.t.pieces_per_sample, job.io_share * min(1.0, 1 - 1 / median_pieces))


def shuffle_defeats_readahead(job):
    runs = _read_runs(job)
    if runs is None:
        return None
    pieces, nbytes, backward, follows, _ = runs
    later = int(follows.sum())
    if later < 8:
        return None
    share = int(backward.sum()) / later
    if share <= job.t.random_share:
        return None
    return Finding(
        "shuffle_defeats_readahead", "shuffled reads defeat read-ahead",
        f"{int(backward.sum()):,} of {later:,} runs of reads on an open file start behind the "
        f"run before ({100 * share:.0f} %; threshold {100 * job.t.random_share:.0f} %): "
        f"the kernel's read-ahead of one run is not what the next reads",
        "backward_run_share", share, job.t.random_share, job.io_share * share / 2)


RULES = (small_reads, small_writes, small_reads_shared, small_writes_shared, misaligned_file,
         misaligned_memory, redundant_reads, redundant_writes, random_reads, random_writes,
         metadata_time, straggler_bytes, straggler_time, stdio_heavy, shared_independent_reads,
         shared_independent_writes, blocking_mpiio_reads, blocking_mpiio_writes,
         mpiio_aggregators, checkpoint_stalls, workers_misattributed, samples_in_pieces,
         shuffle_defeats_readahead, io_not_recorded)


def log_findings(char, thresholds, log=None):
    """The findings of the log rules on a characterization (unordered); ``log``: the
    DarshanJob it was made of (its MPI-IO hints and forked workers), if at hand."""
    job = LogJob(char, thresholds, log)
    return [f for f in (rule(job) for rule in RULES) if f is not None]

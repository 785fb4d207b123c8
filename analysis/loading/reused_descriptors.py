"""I/O that Darshan counted under a file through a reused descriptor number, found and left out.

Darshan's POSIX module maps descriptor numbers to file records; ``dup`` maps the new number to
the file's record too (``POSIX_DUPS``). When a duplicate is closed by a call the POSIX module
does not see (C stdio's ``fclose`` of a stream opened on it with ``fdopen``, as
``numpy.fromfile`` does), the number stays mapped, and whatever the kernel next hands out
with that number (a data loader worker's pipe to its parent, a socket, another file) is
counted under the file's record, at offsets that go on from the record's last position: after
the whole file was read, its end. Seen under Darshan 3.5.0 in the forked workers of a torch
DataLoader that numpy.load .npy files: small reads past the files' end and small writes.

The rule, per file (record id), over all the logs of a job:

- The file's extent E is the largest end (offset + length) of the file's accesses that no
  stale descriptor can have made: those C stdio counted (``STDIO_MAX_BYTE_READ`` /
  ``STDIO_MAX_BYTE_WRITTEN`` + 1: Darshan's STDIO module sees its streams open and close) and
  those of POSIX records without duplicates (``POSIX_MAX_BYTE_*`` + 1). A file without such
  accesses has no known extent and is never cleaned.
- The file must be one the job otherwise only reads: no write in those STDIO and POSIX
  records, and no write below E in the record's own trace. A file the job writes can grow, and
  its accesses past E cannot be told from another descriptor's.
- A POSIX record with ``POSIX_DUPS`` > 0 of such a file, of one process (not a record Darshan
  reduced over the ranks), whose DXT trace is complete (as many reads and writes as its
  counters), then has these traced operations left out: reads of at least one byte at offsets
  at or past E (the file cannot return bytes there), reads at offsets past E (a read of 0 bytes
  at E is a read to the file's end and is kept) and writes.

What is recomputed for a cleaned record, exactly, from the operations kept (as
:mod:`dlio_mpi_analysis.loading.oplog_records` computes counters from calls): reads, writes, bytes, size
histograms, ``MAX_BYTE_*``, ``RW_SWITCHES``, ``F_READ_TIME``, read and write start and end
timestamps, the longest read and write with their sizes, and ``ACCESS1..4`` (without accesses
of 0 bytes, which Darshan does not count there). ``FILE_NOT_ALIGNED`` loses the operations left
out at unaligned offsets, ``F_WRITE_TIME`` the left out writes' time. Sequential and
consecutive counts lose the contributions of the operations left out, each judged as Darshan
judges it against the record's previous access of its kind, or against none for the first of a
run of them (the stale number's I/O comes after the file was closed, which resets Darshan's
last offset). Opens, seeks, stats, strides, memory alignment and metadata time stay as logged.
The trace loses the operations left out.

Without a (complete) trace, the counts cannot be recomputed: a record with duplicates that
writes a file the job otherwise only reads, or reads past its extent, is kept as logged, and
the note says that it may hold another descriptor's I/O. Another descriptor's I/O that lands
inside the file's extent (a duplicate closed while the record's position was mid-file) cannot
be told apart, nor a stale number left by an ``fdopen`` stream on the original descriptor
(no duplicate).
"""

import os

import numpy as np

from dlio_mpi_analysis.characterization.counters import SIZE_BUCKETS
from dlio_mpi_analysis.loading.oplog_records import READ, WRITE, Ops, module_records, no_overlap_time, sequential_flags
from dlio_mpi_analysis.loading.table import concat
from dlio_mpi_analysis.loading.trace_ops import READ_OP, WRITE_OP

# every note of this module starts with it (fit and compare pass these notes on)
NOTE_MARK = "reused descriptor:"
# the POSIX I/O of a file C stdio read, under a reused descriptor's note, of less than this share
# of stdio's bytes is another descriptor's (a worker's pipe), not the file's: fit and compare
# leave it out
STRAY_SHARE = 0.01


def stray_posix(posix_bytes, posix_calls, stdio_bytes, stdio_calls):
    """Whether a file's POSIX I/O (bytes and calls), beside C stdio's, is another
    descriptor's: both under STRAY_SHARE of stdio's (a library's own POSIX reads beside
    stdio's, numpy's headers, come with every load and are not)."""
    return stdio_bytes > 0 and posix_bytes < STRAY_SHARE * stdio_bytes \
        and posix_calls < STRAY_SHARE * stdio_calls
TRACE = "DXT_POSIX"
FILES_NAMED = 3
RECOMPUTED = (
    ["POSIX_READS", "POSIX_WRITES", "POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN",
     "POSIX_MAX_BYTE_READ", "POSIX_MAX_BYTE_WRITTEN", "POSIX_RW_SWITCHES",
     "POSIX_F_READ_TIME", "POSIX_F_READ_START_TIMESTAMP", "POSIX_F_READ_END_TIMESTAMP",
     "POSIX_F_WRITE_START_TIMESTAMP", "POSIX_F_WRITE_END_TIMESTAMP",
     "POSIX_F_MAX_READ_TIME", "POSIX_MAX_READ_TIME_SIZE",
     "POSIX_F_MAX_WRITE_TIME", "POSIX_MAX_WRITE_TIME_SIZE"]
    + [f"POSIX_SIZE_{op}_{b}" for op in ("READ", "WRITE") for b in SIZE_BUCKETS])


def clean(logs, read_trace=None):
    """Leave another descriptor's I/O out of the POSIX records (and DXT_POSIX traces) of
    ``logs`` (logfile.LogContents of one job, changed in place), by the module's rule.

    A log whose trace was not read (no DXT_POSIX in ``log.dxt_segments``) but holds one gets
    it from ``read_trace(log)`` (a Table of DXT_COLUMNS, or None) when one of its records
    needs it; the trace is then used and not kept. Returns the notes: at most one line for
    the records cleaned and one for those that may hold another descriptor's I/O."""
    if not any(log.records.get("POSIX") is not None
               and (log.records["POSIX"]["POSIX_DUPS"] > 0).any() for log in logs):
        return []
    extents, written = _evidence(logs)
    cleaned, doubtful = [], []
    for log in logs:
        frame = log.records.get("POSIX")
        if frame is None or frame.empty:
            continue
        suspects = _suspects(frame, extents, written, log.nprocs)
        if not suspects.any():
            continue
        trace = log.dxt_segments.get(TRACE)
        keep_trace = trace is not None
        if trace is None and read_trace is not None and TRACE in log.modules:
            trace = read_trace(log)
        left_out = []
        for row in np.flatnonzero(suspects):
            outcome = _clean_record(frame, row, trace, extents)
            name = log.names.get(int(frame["id"][row]), str(frame["id"][row]))
            if outcome is None:
                doubtful.append((name, int(frame["POSIX_WRITES"][row])))
            elif len(outcome):
                left_out.append(outcome)
                cleaned.append((name, trace.rows(outcome)))
        if left_out and keep_trace:
            kept = np.ones(len(trace), dtype=bool)
            kept[np.concatenate(left_out)] = False
            log.dxt_segments[TRACE] = trace.rows(kept)
    return [note for note in (_cleaned_note(cleaned), _doubtful_note(doubtful)) if note]


def _evidence(logs):
    """(file id -> extent, ids of files the job writes) from the accesses no stale descriptor
    can have made: STDIO records, and POSIX records without duplicates."""
    id_parts, extent_parts, written = [], [], set()
    for log in logs:
        for module, prefix in (("STDIO", "STDIO"), ("POSIX", "POSIX")):
            frame = log.records.get(module)
            if frame is None or frame.empty:
                continue
            if module == "POSIX":
                frame = frame[frame["POSIX_DUPS"] <= 0]
            ids = frame["id"]
            for word, moved in (("READ", "READ"), ("WRITTEN", "WRITTEN")):
                accessed = frame[f"{prefix}_BYTES_{moved}"] > 0
                id_parts.append(ids[accessed])
                extent_parts.append(frame[f"{prefix}_MAX_BYTE_{word}"][accessed] + 1)
            wrote = (frame[f"{prefix}_WRITES"] > 0) | (frame[f"{prefix}_BYTES_WRITTEN"] > 0)
            written.update(int(i) for i in ids[wrote])
    ids = np.concatenate(id_parts) if id_parts else np.zeros(0, np.uint64)
    if not len(ids):
        return {}, written
    files, of = np.unique(ids, return_inverse=True)
    extents = np.full(len(files), np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(extents, of.reshape(-1), np.concatenate(extent_parts).astype(np.int64))
    return {int(i): int(e) for i, e in zip(files.tolist(), extents.tolist())}, written


def _suspects(frame, extents, written, nprocs):
    """Records that may hold another descriptor's I/O, by their counters: duplicates, a file
    with a known extent that the job otherwise only reads, writes or reads past the extent."""
    ids = frame["id"]
    extent = np.array([extents.get(int(i), -1) for i in ids], dtype=np.int64)
    own = (frame["rank"] >= 0) | (nprocs == 1)
    candidate = (frame["POSIX_DUPS"] > 0) & (extent > 0) & own \
        & ~np.isin(ids.astype(np.uint64), np.array(sorted(written), dtype=np.uint64))
    past = (frame["POSIX_BYTES_READ"] > 0) & (frame["POSIX_MAX_BYTE_READ"] >= extent)
    writes = frame["POSIX_WRITES"] > 0
    return candidate & (past | writes)


def _clean_record(frame, row, trace, extents):
    """The trace rows (positions) of the operations left out of record ``row`` (empty:
    none), after recomputing its counters; None when the trace cannot tell (absent, or
    incomplete, or the record writes below the extent)."""
    if trace is None:
        return None
    rid, rank = np.uint64(frame["id"][row]), int(frame["rank"][row])
    where = np.flatnonzero((trace["id"] == rid) & ((trace["rank"] == rank) | (rank < 0)))
    # the order Darshan counted them in
    where = where[np.argsort(trace["end"][where], kind="stable")]
    mine = trace.rows(where)
    reads, writes = mine["op"] == READ_OP, mine["op"] == WRITE_OP
    if reads.sum() != frame["POSIX_READS"][row] or writes.sum() != frame["POSIX_WRITES"][row]:
        return None
    extent = extents[int(rid)]
    offset, length = mine["offset"], mine["length"]
    if (writes & (offset < extent)).any():
        return None
    foreign = writes | (reads & (((length > 0) & (offset >= extent)) | (offset > extent)))
    if not foreign.any():
        return where[:0]
    _recompute(frame, row, mine, foreign)
    return where[foreign]


def _recompute(frame, row, ops, foreign):
    """Set record ``row``'s counters to those of the operations kept (module docstring)."""
    kept = ops[~foreign]
    codes = np.where(kept["op"] == WRITE_OP, WRITE, READ).astype(np.uint8)
    calls = Ops(rank=np.zeros(len(kept), np.int64),
                id=np.zeros(len(kept), np.uint64), op=codes,
                start=kept["start"].astype(float), end=kept["end"].astype(float),
                offset=kept["offset"].astype(np.int64),
                length=kept["length"].astype(np.int64), collective=np.zeros(len(kept), bool))
    fresh = module_records("POSIX", calls)
    for name in RECOMPUTED:
        frame[name][row] = fresh[name][0] if len(fresh) else 0
    _common_sizes(frame, row, kept["length"])
    alignment = int(frame["POSIX_FILE_ALIGNMENT"][row])
    if alignment > 0:
        unaligned = int((ops["offset"][foreign] % alignment != 0).sum())
        frame["POSIX_FILE_NOT_ALIGNED"][row] = max(
            0, int(frame["POSIX_FILE_NOT_ALIGNED"][row]) - unaligned)
    for op, word in ((READ_OP, "READS"), (WRITE_OP, "WRITES")):
        mask = ops["op"] == op
        offset, length = ops["offset"][mask], ops["length"][mask]
        gone = foreign[mask]
        # the stale number's I/O follows a close of the file, which resets Darshan's last offset
        era = np.cumsum(np.r_[gone[:1], gone[1:] & ~gone[:-1]])
        seq, consec = sequential_flags(np.zeros(mask.sum(), np.int64), offset, length, era)
        for counter, flags in (("SEQ", seq), ("CONSEC", consec)):
            name = f"POSIX_{counter}_{word}"
            frame[name][row] = max(0, int(frame[name][row]) - int((flags & gone).sum()))
    mask = ops["op"] == WRITE_OP
    start, end = ops["start"].astype(float), ops["end"].astype(float)

    def spent(m):
        return float(no_overlap_time(np.zeros(m.sum(), np.int64), start[m], end[m], 1)[0])

    lost = spent(mask) - spent(mask & ~foreign)
    frame["POSIX_F_WRITE_TIME"][row] = max(0.0, float(frame["POSIX_F_WRITE_TIME"][row]) - lost)


def _common_sizes(frame, row, lengths):
    """ACCESS1..4 of the record from the sizes of its accesses kept, as Darshan keeps them:
    the most frequent first (ties: the larger size first), accesses of 0 bytes not counted."""
    sizes, counts = np.unique(lengths[lengths > 0], return_counts=True)
    order = np.lexsort((-sizes, -counts))[:4]
    for slot in range(4):
        size, count = (int(sizes[order[slot]]), int(counts[order[slot]])) \
            if slot < len(order) else (0, 0)
        frame[f"POSIX_ACCESS{slot + 1}_ACCESS"][row] = size
        frame[f"POSIX_ACCESS{slot + 1}_COUNT"][row] = count


def _files(names):
    names = list(dict.fromkeys(os.path.basename(n) or n for n in names))
    if len(names) <= FILES_NAMED + 1:
        return ", ".join(names)
    return f"{', '.join(names[:FILES_NAMED])} and {len(names) - FILES_NAMED} more files"


def _count(n, word):
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _cleaned_note(cleaned):
    if not cleaned:
        return None
    ops = concat([frame for _, frame in cleaned])
    reads, writes = ops[ops["op"] == READ_OP], ops[ops["op"] == WRITE_OP]
    return (f"{NOTE_MARK} left out of the POSIX records of {_files(n for n, _ in cleaned)} "
            f"(with duplicated descriptors, POSIX_DUPS): {_count(len(reads), 'read')} "
            f"({int(reads['length'].sum())} B) and {_count(len(writes), 'write')} "
            f"({int(writes['length'].sum())} B) at or past the file's end, another "
            "descriptor's I/O counted under the file once a duplicate was closed out of "
            "Darshan's sight (by C stdio's fclose)")


def _doubtful_note(doubtful):
    if not doubtful:
        return None
    writes = sum(w for _, w in doubtful)
    return (f"{NOTE_MARK} the POSIX records of {_files(n for n, _ in doubtful)} (with "
            f"duplicated descriptors, POSIX_DUPS) write ({_count(writes, 'write')}) or read "
            "past the end of files the job otherwise only reads: another descriptor's I/O may "
            "be counted under them; without a complete DXT trace of them it cannot be told "
            "apart, and they are counted as logged")

"""The measurements dlio_mpi_analysis.fitting.fit takes from a job: its data files (sizes, formats, who read
them), their trace, the dominant transfer size, runs of consecutive reads (samples), the
interface, the order of reads (shuffling), the pauses between reads (steps) and a rank's
timeline, and data written before it was read (see dlio_mpi_analysis.fitting.fit for how each becomes a
workload value)."""

import os

import numpy as np
import pandas as pd

from dlio_mpi.display import units

from dlio_mpi_analysis.characterization.counters import ALONE_COLLECTIVES, SPECS, \
    alone_collectives
from dlio_mpi_analysis.characterization.dxt_metrics import EARLY_PERIOD
from dlio_mpi_analysis.characterization.file_roles import file_roles, program_files
from dlio_mpi_analysis.characterization.files import file_format
from dlio_mpi_analysis.fitting import fit_patterns
from dlio_mpi_analysis.fitting.fit_patterns import framing, traits
from dlio_mpi_analysis.characterization.layers import dataset_file
from dlio_mpi_analysis.loading.oplog_records import sequential_flags
from dlio_mpi_analysis.characterization.read_order import read_order, write_order

WRITTEN_SHARE = 0.9
# syncs of the data files at least this share of their writes: a sync after every write (IOR's
# -Y calls fsync twice a write)
PER_WRITE_SYNCS = 0.9
# the share of the bytes read back that one shift between writer and reader must have
SHIFT_SHARE = 0.9
# bytes/s under which reads of data the reading process has just written cannot have come
# from the page cache (a copy from memory runs at several GiB/s)
PAGE_CACHE_RATE = 2 << 30
FORWARD_SHARE = 0.8
SHUFFLED_SEQ = 0.75      # halfway between a random order's sequential share (0.5) and in order
STEP_GAP = 1e-3
SIZE_SPREAD = 0.1       # relative spread of the samples' sizes above which they vary
ONE_SIZE = 0.95         # share of the reads of the one size for a read to be a sample
STEP_GAP_RATIO = 2.5
# lower jumps between pauses still tried as a step's end, and how much more even (the share of
# steps of the median batch) their batches must be to be taken
CANDIDATE_GAP_RATIO = 1.5
EVENNESS_GAIN = 0.25
FEW_PAUSES = 3          # pauses above a jump that may be an epoch's ends and a prefetch's waits
# a batch told by its period: the pauses after every k-th sample the longest, in at least this
# share of the steps (_periodic_steps), over at least PERIODIC_STEPS steps
PERIODIC_EVENNESS = 0.9
PERIODIC_STEPS = 4
PERIODIC_MAX_BATCH = 256
TIME_RESOLUTION = 1e-6
DXT_PREFERENCE = ("DXT_POSIX", "DXT_STDIO", "DXT_MPIIO")


def _write_first(job, data, basis, fmt, transfer_size, notes, evidence, epochs=1,
                 read_type="on_demand"):
    """io.write_first (and io.write_fsync) when the job wrote its data files before reading
    them (a write-then-read benchmark): at least WRITTEN_SHARE of their size (or of the bytes
    read, where fewer) written, the
    first write of each such file before its first read; io.write_each_epoch when the files
    were written as many times over as they were read (``epochs``, reads on demand: IOR's
    repetitions)."""
    if basis is None or basis not in job.records:
        return {}
    spec = SPECS[basis]
    prefix = "MPIIO" if basis == "MPI-IO" else basis
    frame = job.records[basis]
    rows = frame[frame["id"].isin(list(data.index))]
    if spec.bytes_written not in rows:
        return {}
    written = rows.groupby("id")[spec.bytes_written].apply(lambda c: int(c.clip(lower=0).sum()))
    total = int(written.sum())
    size = int(data["size"].sum())
    evidence["data_bytes_written"] = total
    # of the bytes the files hold, or of those read where fewer: an HDF5 file's extent
    # counts the gaps of its aligned objects (IOR's --hdf5.setAlignment), which no one writes
    if total < WRITTEN_SHARE * min(size, int(data["bytes_read"].sum())):
        if total:
            notes.append(f"{total} bytes written to the data files (less than "
                         f"{WRITTEN_SHARE:.0%} of them): not emulated")
        return {}
    w0, r0 = f"{prefix}_F_WRITE_START_TIMESTAMP", f"{prefix}_F_READ_START_TIMESTAMP"
    if w0 in rows and r0 in rows:
        first = rows.groupby("id").agg(w=(w0, lambda c: c[c > 0].min()),
                                       r=(r0, lambda c: c[c > 0].min()))
        if not (first["w"] <= first["r"]).all():
            notes.append("the data files were written after being read: the writes are not "
                         "emulated")
            return {}
    if not traits(fmt).written_first:
        from dlio_mpi import formats
        notes.append(f"the {fmt} data files were written in the job before being read: "
                     f"not emulated (io.write_first writes {formats.listed(lambda t: t.written_first)} "
                     "files); generate them first")
        return {}
    syncs = sum(int(rows[c].clip(lower=0).sum()) for c in spec.ops.get("syncs", ())
                if c in rows)
    sizes = _write_size(job, set(data.index))
    if sizes and transfer_size and sizes != transfer_size:
        notes.append(f"the data files were written in {sizes}-byte pieces and read in "
                     f"{transfer_size}-byte ones: io.write_first writes in the read size")
    evidence["write_first"] = {"bytes_written": total, "syncs": syncs, "write_size": sizes}
    if traits(fmt).rows:
        notes.append(_hdf5_writes_note(job, set(data["name"])))
    out = {"write_first": True}
    order = _write_order(job, set(data.index), rows, basis)
    evidence["write_order"] = order
    if order is not None and order["order"] == "shuffled":
        if traits(fmt).byte_ranges:
            out["write_order"] = "shuffled"
        else:
            notes.append(f"the data files were written in a shuffled order ({order['seq']:.2f} "
                         f"of the writes sequential): io.write_first writes {fmt} in order")
    if syncs:
        out["write_fsync"] = True
        writes = sum(int(rows[c].clip(lower=0).sum()) for c in spec.ops.get("writes", ())
                     if c in rows)
        evidence["write_first"]["writes"] = writes
        if writes > len(written) and syncs >= PER_WRITE_SYNCS * writes:
            if traits(fmt).rows:
                notes.append(f"{syncs} syncs for {writes} writes: a sync after every write; "
                             f"io.write_first syncs {fmt} files once each")
            else:
                out["write_fsync_per_write"] = True
                notes.append(f"{syncs} syncs for {writes} writes of the data files: a sync "
                             "after every write call (io.write_fsync_per_write, as IOR's -Y)"
                             + (f"; {syncs / writes:.3g} a write, the emulator makes one"
                                if syncs > 1.5 * writes else ""))
    times = int(round(total / max(size, 1)))
    evidence["write_first"]["times"] = times
    if times > 1 and times == epochs and read_type == "on_demand":
        out["write_each_epoch"] = True
        notes.append(f"the data files were written {times} times over and read as many: "
                     "written again before every epoch (io.write_each_epoch, as IOR's "
                     "repetitions -i write then read each time)")
    elif times > 1:
        notes.append(f"the data files were written {times} times over and read {epochs} "
                     "times: io.write_first writes them once")
    return out


def _read_shift(job, ids, nprocs, notes, evidence):
    """reader.rank_shift of a job that wrote its data files and read them back: the shift k,
    when at least SHIFT_SHARE of the bytes a rank r read back were written by rank (r + k) mod
    n, the share the emulator's rank r reads (IOR's -C and -Z read another rank's data, so that
    the page cache of the writer does not serve it), else 0. From the DXT_POSIX trace (each read's bytes matched with the writes of
    the same file that covered them), else from the POSIX records of files each written by one
    rank and read by one (a file per process); 0 without either."""
    if nprocs < 2:
        return 0
    trace = (job.dxt_segments or {}).get("DXT_POSIX")
    shifts = {}
    if trace is not None and not trace.empty:
        mine = trace[trace["id"].isin(list(ids)) & (trace["length"] > 0)]
        writes, reads = mine[mine["op"] == "write"], mine[mine["op"] == "read"]
        for fid, w in writes.groupby("id"):
            r = reads[reads["id"] == fid]
            if r.empty:
                continue
            w = w.sort_values("offset")
            starts, ends = w["offset"].to_numpy(), (w["offset"] + w["length"]).to_numpy()
            writer = w["rank"].to_numpy()
            k = np.searchsorted(starts, r["offset"].to_numpy(), side="right") - 1
            inside = (k >= 0) & (r["offset"].to_numpy() < ends[np.clip(k, 0, None)])
            for reader, who, n in zip(r["rank"].to_numpy()[inside], writer[k[inside]],
                                      r["length"].to_numpy()[inside]):
                shift = int(who - reader) % nprocs
                shifts[shift] = shifts.get(shift, 0) + int(n)
    else:
        posix = job.records.get("POSIX")
        if posix is None or posix.empty:
            return 0
        rows = posix[posix["id"].isin(list(ids)) & (posix["rank"] >= 0)]
        for fid, recs in rows.groupby("id"):
            wrote = recs[recs["POSIX_BYTES_WRITTEN"] > 0]
            read = recs[recs["POSIX_BYTES_READ"] > 0]
            if len(wrote) == 1 and len(read) == 1:
                shift = int(wrote["rank"].iloc[0] - read["rank"].iloc[0]) % nprocs
                shifts[shift] = shifts.get(shift, 0) + int(read["POSIX_BYTES_READ"].iloc[0])
    total = sum(shifts.values())
    if not total:
        return 0
    shift = max(shifts, key=shifts.get)
    evidence["read_shift"] = {str(k): v for k, v in sorted(shifts.items())}
    if shift and shifts[shift] >= SHIFT_SHARE * total:
        notes.append(f"each rank read back the data rank (r + {shift}) mod {nprocs} wrote "
                     f"({shifts[shift] / total:.0%} of the bytes read back; IOR's -C or -Z): "
                     f"reader.rank_shift {shift}")
        return shift
    if len(shifts) > 1:
        notes.append(f"the ranks read back data of several other ranks ({len(shifts)} shifts "
                     "between writer and reader, none of most bytes): each reads its own")
    return 0


def _write_order(job, ids, rows, basis):
    """How each rank wrote the data files: "shuffled" when under SHUFFLED_SEQ of the writes
    after a file's first went past the end of the rank's previous one (Darshan's sequential; a
    random order makes about half, IOR's -z 0.48 to 0.51), else "sequential" (in order, or in
    order with gaps as interleaved segments are). From the DXT trace of the writes where there is one (each
    rank's and file's writes in time order), else from the POSIX counters; None with
    neither. {"order", "seq", "consec", "writes", "from"}. Collective writes are ordered by
    their calls (dlio_mpi_analysis.characterization.read_order.write_order: each call's pieces
    from the aggregators' POSIX writes): an aggregator's writes go back within every call to
    each rank's piece, in order or not."""
    calls = _collective_write_order(job, ids)
    if calls is not None:
        return {"order": "shuffled" if calls < SHUFFLED_SEQ else "sequential", "seq": calls,
                "consec": calls, "sequential_after_first": calls, "writes": None,
                "from": "collective calls (DXT_MPIIO windows)"}
    for name in DXT_PREFERENCE:
        frame = (job.dxt_segments or {}).get(name)
        if frame is None:
            continue
        w = frame[(frame["op"] == "write") & frame["id"].isin(list(ids))]
        if w.empty:
            continue
        w = w.sort_values(["rank", "id", "start"], kind="stable")
        group = w.groupby(["rank", "id"], sort=False).ngroup().to_numpy()
        seq, consec = sequential_flags(group, w["offset"].to_numpy(np.int64),
                                       w["length"].to_numpy(np.int64))
        later = np.ones(len(group), bool)       # a record's first write follows none
        later[0] = False
        later[1:] = group[1:] == group[:-1]
        return _order(seq, consec, int(seq[later].sum()), int(later.sum()), name)
    spec = SPECS[basis]
    writes = spec.ops.get("writes", ())
    if basis != "POSIX" or spec.seq_writes not in rows or not writes:
        return None
    counts = sum(rows[c].clip(lower=0) for c in writes if c in rows)
    n, records = int(counts.sum()), int((counts > 0).sum())
    if not n:
        return None
    seq = int(rows[spec.seq_writes].clip(lower=0).sum())
    consec = int(rows[spec.consec_writes].clip(lower=0).sum())
    # a record's first write is sequential when it is past offset 0: at most one a record
    return _order(np.full(n, seq / n), np.full(n, consec / n), max(0, seq - records),
                  max(1, n - records), "POSIX counters")


def collective_writes(job, ids):
    """The collective write calls to the data files (MPIIO_COLL_WRITES), 0 without MPI-IO
    records."""
    mpiio = job.records.get("MPI-IO")
    if mpiio is None or mpiio.empty or "MPIIO_COLL_WRITES" not in mpiio:
        return 0
    return int(mpiio[mpiio["id"].isin(list(ids))]["MPIIO_COLL_WRITES"].clip(lower=0).sum())


def _collective_write_order(job, ids):
    """The continuity share of the data files' collective write calls, or None when the job
    wrote them with no collective call (MPIIO_COLL_WRITES) or no trace shows their order."""
    mpiio = job.records.get("MPI-IO")
    if mpiio is None or mpiio.empty or "MPIIO_COLL_WRITES" not in mpiio:
        return None
    mine = mpiio[mpiio["id"].isin(list(ids))]
    if int(mine["MPIIO_COLL_WRITES"].clip(lower=0).sum()) <= 0:
        return None
    return write_order(job.dxt_segments, "MPI-IO", ids)


def _order(seq, consec, later_seq, later, source):
    """Sequential and consecutive shares of the writes (Darshan's, every write) and the order
    from the share of writes after a record's first that are sequential."""
    share = later_seq / later if later else 1.0
    return {"order": "shuffled" if share < SHUFFLED_SEQ else "sequential",
            "seq": float(np.mean(seq)), "consec": float(np.mean(consec)),
            "sequential_after_first": share, "writes": int(len(seq)), "from": source}


def _hdf5_writes_note(job, data_names):
    """What io.write_first makes of a job's HDF5 writes, with the job's H5D write calls and
    datasets when the log has H5D records."""
    h5d = job.records.get("H5D")
    what = ""
    if h5d is not None and not h5d.empty and "H5D_WRITES" in h5d:
        names = [job.names.get(int(i), "") for i in h5d["id"]]
        mine = h5d[[n.split(":", 1)[0] in data_names for n in names]]
        if not mine.empty:
            what = (f" ({int(mine['H5D_WRITES'].clip(lower=0).sum())} H5Dwrite calls to "
                    f"{mine['id'].nunique()} datasets)")
    return (f"the HDF5 data files were written in the job before being read{what}: "
            "io.write_first writes them through libhdf5, a row per sample of one dataset per "
            "file, each row written by the rank that reads it first, a rank's runs of rows "
            "in reader.transfer_size calls")


def _write_size(job, ids):
    """The write size that moves the most bytes to the data files in the DXT trace (None
    without one)."""
    for name in DXT_PREFERENCE:
        frame = (job.dxt_segments or {}).get(name)
        if frame is None:
            continue
        w = frame[(frame["op"] == "write") & frame["id"].isin(list(ids))]
        if not w.empty:
            moved = w.groupby("length")["length"].sum()
            return int(moved.sort_values(ascending=False, kind="stable").index[0])
    return None


def _stem(job):
    """A model name from the job: the workload of a dlio_mpi run, else the executable."""
    if job.source == "oplog" and "(workload " in job.exe:
        base = job.exe.split("(workload ", 1)[1].rstrip(")")
    else:
        base = os.path.basename(job.exe.split()[0]) if job.exe else "job"
    return "".join(ch if ch.isalnum() else "_" for ch in base) or "job"


def _file_table(job, roles=None, first=None):
    """Per file id: name, data (bool: its role is "data", dlio_mpi_analysis.characterization.file_roles; ``roles`` as
    characterize gave them, else classified here alike), format, ranks reading it, bytes read,
    size, module.
    With POSIX records, a file's STDIO reads count too (C stdio's reads are below Darshan's
    POSIX wrappers); the counters returned (reading) are the basis module's: the first of
    POSIX, STDIO and MPI-IO that read bytes of a data file (numpy.fromfile leaves POSIX
    records of its opens and seeks, its reads in STDIO's), else the first with records;
    ``first`` puts a module first."""
    if roles is None:
        roles = file_roles(job.names, job.records, program_files(job.exe))
    order = ("POSIX", "STDIO", "MPI-IO") if first is None \
        else (first,) + tuple(m for m in ("POSIX", "STDIO", "MPI-IO") if m != first)
    present = [m for m in order if m in job.records and not job.records[m].empty]

    def reads_data(module):
        frame = job.records[module]
        column = SPECS[module].bytes_read
        ids = frame.loc[frame[column] > 0, "id"] if column in frame else []
        return any(roles.get(int(i), "data") == "data" for i in ids)
    basis = next((m for m in present if reads_data(m)), present[0] if present else None)
    if basis is None:
        return (pd.DataFrame(columns=["name", "data", "format", "ranks", "bytes_read", "size"]),
                None, None)
    spec = SPECS[basis]
    frame = job.records[basis]
    prefix = "MPIIO" if basis == "MPI-IO" else basis
    max_byte = f"{prefix}_MAX_BYTE_READ"
    reading = frame[frame[spec.bytes_read] > 0]
    per_file = pd.DataFrame({
        "id": reading["id"].to_numpy(),
        "rank": reading["rank"].to_numpy(),
        "bytes_read": reading[spec.bytes_read].to_numpy(),
        "max_byte": reading[max_byte].to_numpy() if max_byte in reading else 0,
    })
    grouped = per_file.groupby("id")
    hdf5 = set(job.records["H5F"]["id"].tolist()) if "H5F" in job.records else set()
    table = pd.DataFrame({
        "bytes_read": grouped["bytes_read"].sum(),
        "size": grouped["max_byte"].max() + 1,
        "ranks": grouped["rank"].agg(lambda r: job.nprocs if (r < 0).any() else r.nunique()),
    })
    stdio = job.records.get("STDIO")
    if basis == "POSIX" and stdio is not None and not stdio.empty:
        # reads through C stdio (fread: numpy.fromfile, pandas' C parser) reach the file
        # system below Darshan's POSIX wrappers: a file's STDIO reads add to its POSIX ones
        rows = stdio[stdio["STDIO_BYTES_READ"] > 0]
        extra = pd.DataFrame({"id": rows["id"].to_numpy(), "rank": rows["rank"].to_numpy(),
                              "bytes_read": rows["STDIO_BYTES_READ"].to_numpy(),
                              "max_byte": rows["STDIO_MAX_BYTE_READ"].to_numpy()})
        both = pd.concat([per_file, extra]).groupby("id")
        table = pd.DataFrame({
            "bytes_read": both["bytes_read"].sum(),
            "size": both["max_byte"].max() + 1,
            "ranks": both["rank"].agg(lambda r: job.nprocs if (r < 0).any() else r.nunique()),
        })
    table["name"] = [job.names.get(int(i), "") for i in table.index]
    table["data"] = [roles.get(int(i), "data") == "data" for i in table.index]
    table["format"] = [file_format(n, int(i) in hdf5) for i, n in zip(table.index,
                                                                       table["name"])]
    return table, basis, reading


def _counted_reads(job, basis, reading):
    """The data files' read calls by the counters of the trace's module (None if unknown)."""
    if basis is None or reading is None or reading.empty:
        return None
    return sum(int(reading[c].clip(lower=0).sum()) for c in SPECS[basis].ops["reads"]
               if c in reading)


def _data_trace(job, ids):
    """The reads of the data files in the first DXT trace that has some, else None."""
    for name in DXT_PREFERENCE:
        frame = (job.dxt_segments or {}).get(name)
        if frame is None:
            continue
        reads = frame[(frame["op"] == "read") & frame["id"].isin(list(ids))]
        if not reads.empty:
            return reads
    return None


# a rank whose data reads are under this share of the busiest rank's reads no data (libhdf5's
# metadata reads on every rank that opened a file rank 0 alone reads the data of)
READER_SHARE = 0.05


def _reading_ranks(job, trace, reading):
    """How many ranks read the data: K when ranks 0 to K - 1 alone read it and the job's
    others none (rank 0 loading the data for all, IOR's -N, h5bench's read by rank 0), else
    the job's ranks. From each rank's MPI-IO calls where the data was read through MPI-IO
    (collective reads come from a few aggregators at POSIX), else the trace's reads, else the
    counters (a record reduced over the ranks: all read)."""
    if job.nprocs < 2:
        return job.nprocs
    mpiio = (job.dxt_segments or {}).get("DXT_MPIIO")
    ids = set(reading["id"].tolist()) if reading is not None else set()
    calls = None
    if mpiio is not None:
        calls = mpiio[(mpiio["op"] == "read") & mpiio["id"].isin(list(ids))]
    if calls is not None and not calls.empty:
        per_rank = calls.groupby("rank")["length"].sum()
    elif trace is not None and not trace.empty:
        per_rank = trace.groupby("rank")["length"].sum()
    elif reading is not None and not reading.empty and not (reading["rank"] < 0).any():
        per_rank = reading.groupby("rank")[reading.columns[
            [c.endswith("BYTES_READ") for c in reading.columns]][0]].sum()
    else:
        return job.nprocs
    readers = sorted(int(r) for r, b in per_rank.items()
                     if b >= READER_SHARE * float(per_rank.max()))
    if 0 < len(readers) < job.nprocs and readers == list(range(len(readers))):
        return len(readers)
    return job.nprocs


def _idle_opens(job, ids, readers):
    """Whether ranks beyond the first ``readers`` opened the data files ``ids`` (a record of
    theirs, or one reduced over all ranks, counting opens): every rank opening the data that
    some read (h5bench's cross-stencil read, H5Fopen on every rank)."""
    for module in ("POSIX", "MPI-IO", "STDIO", "H5F"):
        frame = job.records.get(module)
        if frame is None or frame.empty:
            continue
        rows = frame[frame["id"].isin(list(ids))]
        opens = [c for c in rows.columns if c.endswith("_OPENS")]
        if rows.empty or not opens:
            continue
        opened = rows[opens].clip(lower=0).sum(axis=1) > 0
        others = (rows["rank"] < 0) | (rows["rank"] >= readers)
        if bool((opened & others).any()):
            return True
    return False


def _early_share(job, trace, data, basis, reading):
    if trace is not None:
        total = int(trace["length"].sum())
        if total == 0:
            return None
        return int(trace.loc[trace["start"] < EARLY_PERIOD * job.run_time, "length"].sum()) \
            / total
    if job.run_time <= 0:
        return None
    prefix = "MPIIO" if basis == "MPI-IO" else basis
    end = f"{prefix}_F_READ_END_TIMESTAMP"
    rows = reading
    if end not in rows or rows.empty:
        return None
    moved = rows[SPECS[basis].bytes_read]
    return float(moved[rows[end] <= EARLY_PERIOD * job.run_time].sum() / moved.sum())


def _min_rank_coverage(data, basis, reading):
    """The smallest share of a shared file's size that one rank read (bytes / size)."""
    rows = reading[reading["id"].isin(list(data.index[data["ranks"] > 1]))]
    spec = SPECS[basis]
    if rows.empty or (rows["rank"] < 0).any():
        return 0.0
    size = data["size"]
    return float((rows[spec.bytes_read].to_numpy()
                  / size.loc[rows["id"]].to_numpy()).min())


def _transfer_size(trace, data, basis, reading):
    """(size, share of the bytes it moves) of the read size that moves the most bytes."""
    if trace is not None:
        moved = trace.groupby("length")["length"].sum()
    else:
        prefix = "MPIIO" if basis == "MPI-IO" else basis
        if f"{prefix}_ACCESS1_ACCESS" not in reading:
            reads = sum(int(reading[c].clip(lower=0).sum()) for c in SPECS[basis].ops["reads"])
            total = int(data["bytes_read"].sum())
            return (int(round(total / reads)) if reads else 0), 1.0
        pairs = pd.concat([pd.DataFrame({"size": reading[f"{prefix}_ACCESS{k}_ACCESS"],
                                         "count": reading[f"{prefix}_ACCESS{k}_COUNT"]})
                           for k in range(1, 5)])
        pairs = pairs[(pairs["count"] > 0) & (pairs["size"] > 0)]
        moved = (pairs["size"] * pairs["count"]).groupby(pairs["size"]).sum()
        moved = moved.rename_axis("length")
    moved = moved[moved.index > 0]
    if moved.empty:
        return 0, 0.0
    best = moved.sort_values(ascending=False, kind="stable")
    size = int(best.index[0])
    return size, float(best.iloc[0] / moved.sum())


def _record_length(trace, fmt, transfer, file_size, read_type):
    if trace is None or read_type == "memory":
        return int(min(max(transfer, 1), file_size))
    runs = _runs(trace)
    median = int(round(float(np.median(runs)))) - framing(fmt)
    if transfer > 0 and float(np.mean(trace["length"].to_numpy() == transfer)) >= ONE_SIZE \
            and float(np.median(_runs(trace, pauses=False))) > median + framing(fmt):
        # reads of one size, a file's consecutive reads cut by the steps' pauses: a batch's
        # samples read one after another, a read each (a sample read in several reads
        # would be the same I/O; one read a sample is how loaders read records)
        return int(min(max(transfer - framing(fmt), 1), file_size))
    return int(min(max(median, transfer, 1), file_size))


def _sample_spread(trace, fmt, read_type):
    """(mean, standard deviation) in whole bytes of the samples' sizes (runs of consecutive
    reads, less the format's framing) when they differ by more than SIZE_SPREAD of their mean;
    None without a trace of reads on demand or when they are about one size."""
    if trace is None or read_type == "memory":
        return None
    runs = _runs(trace) - framing(fmt)
    runs = runs[runs > 0]
    if len(runs) < 2:
        return None
    mean, std = float(runs.mean()), float(runs.std())
    if std <= SIZE_SPREAD * mean:
        return None
    return int(round(mean)), int(round(std))


def _runs(trace, pauses=True):
    """Lengths of the runs of consecutive reads per (rank, file), in start order; with pauses,
    a pause of STEP_GAP or more (a step's compute) ends a run too."""
    key, order = _record_order(trace)
    offset = trace["offset"].to_numpy()[order]
    length = trace["length"].to_numpy()[order]
    start, end = trace["start"].to_numpy()[order], trace["end"].to_numpy()[order]
    new = np.ones(len(key), bool)
    new[1:] = (key[1:] != key[:-1]) | (offset[1:] != offset[:-1] + length[:-1]) \
        | ((start[1:] - end[:-1] >= STEP_GAP) & pauses)
    run = np.cumsum(new) - 1
    return np.bincount(run, weights=length)


def _record_order(trace):
    """(record key of each call in order, order): the calls of a trace sorted by rank, file
    and start time."""
    ids, id_index = np.unique(trace["id"].to_numpy(), return_inverse=True)
    key = trace["rank"].to_numpy().astype(np.int64) * len(ids) + id_index.reshape(-1)
    order = np.lexsort((trace["start"].to_numpy(), key))
    return key[order], order


def _data_interfaces(job, data):
    """The interfaces the data files were read (or written) through, as characterize names
    them, without those of the job's other files (a checkpoint written through MPI-IO or HDF5
    says nothing of how the data was read)."""
    ids = set(int(i) for i in data.index)
    names = set(data["name"]) if "name" in data else {job.names.get(i, "") for i in ids}
    used = set()
    mpiio = job.records.get("MPI-IO")
    if mpiio is not None and not mpiio.empty:
        # (a collective call on a file one process opened alone is independent I/O)
        mine = alone_collectives(mpiio[mpiio["id"].isin(list(ids))])

        def calls(kind, op):
            return sum(int(mine[c].clip(lower=0).sum())
                       for c in SPECS["MPI-IO"].ops[f"{kind}_{op}"] if c in mine)
        # the reads' calls where the data was read: a dataset the ranks wrote collectively
        # before reading it independently (h5py drops the collective transfer on its fast
        # read path) was read independently
        kinds = ("independent", "collective")
        op = "reads" if any(calls(k, "reads") for k in kinds) else "writes"
        used |= {f"MPI-IO {k}" for k in kinds if calls(k, op)}
    for module in ("H5F", "H5D"):
        frame = job.records.get(module)
        if frame is None or frame.empty:
            continue
        mine = frame[[dataset_file(job.names.get(int(i), "")) in names for i in frame["id"]]]
        if mine.empty:
            continue
        used.add("HDF5")
        # a source that observed the files from HDF5 down (an op log) holds no MPI-IO
        # records of them: libhdf5's MPI-IO driver, collective where H5D says so
        if module == "H5D" and any(job.layers.get(i) == "HDF5" for i in ids):
            collective = int(mine["H5D_USE_MPIIO_COLLECTIVE"].max()) > 0
            used.add("MPI-IO collective" if collective else "MPI-IO independent")
    return used


def _interface(fmt, layout, data, job, notes):
    interfaces = _data_interfaces(job, data)
    collective = "MPI-IO collective" in interfaces
    independent = "MPI-IO independent" in interfaces
    hdf5 = "HDF5" in interfaces or traits(fmt).rows
    mpiio = job.records.get("MPI-IO")
    if mpiio is not None and not mpiio.empty and not collective:
        mine = mpiio[mpiio["id"].isin([int(i) for i in data.index])]
        if any(int(mine[c].clip(lower=0).sum()) for c, _ in ALONE_COLLECTIVES if c in mine):
            notes.append("the collective MPI-IO calls were on files each opened by one "
                         "process alone (MPI_COMM_SELF: Darshan's MPIIO_INDEP_OPENS): no "
                         "other process takes part, independent I/O")
    if collective and layout == "multi":
        notes.append("collective MPI-IO on per-rank files fitted as independent MPI-IO")
        collective, independent = False, True
    if hdf5:
        return "hdf5_coll" if collective else "hdf5" if independent else "hdf5_sec2"
    if collective:
        return "mpiio_coll"
    if independent:
        return "mpiio"
    stdio = job.records.get("STDIO")
    if stdio is not None and not stdio.empty:
        stdio_bytes = int(stdio.loc[stdio["id"].isin(list(data.index)),
                                    "STDIO_BYTES_READ"].clip(lower=0).sum())
        if stdio_bytes > 0.5 * int(data["bytes_read"].sum()):
            return "stdio"
    return "posix"


def _shuffle(trace, basis, reading, sample_piece=None):
    """(sample_shuffle, forward share of jumps); sample_piece, where given with a trace, keeps
    only the trace's reads of that size (a format library's own metadata reads, such as
    libhdf5's, interleave with the samples' and are no sample order)."""
    if trace is not None and sample_piece:
        pieces = trace[trace["length"] == sample_piece]
        if len(pieces) >= 2:
            return _shuffle(pieces, None, None)
    reduced = basis == "POSIX" and reading is not None and "rank" in reading \
        and (reading["rank"] < 0).any()
    if basis == "POSIX" and not (reduced and trace is not None):
        # (a shared file's record reduced over the ranks sums their counters: a rank's first
        # read, far into the file, counts as a jump; the trace tells each rank's order)
        rows = reading
        n = int(rows["POSIX_READS"].clip(lower=0).sum())
        seq = int(rows["POSIX_SEQ_READS"].clip(lower=0).sum())
        consec = int(rows["POSIX_CONSEC_READS"].clip(lower=0).sum())
        records = int((rows["POSIX_READS"] > 0).sum())
    elif trace is not None:
        group, order = _record_order(trace)
        offsets = trace["offset"].to_numpy()[order]
        is_seq, is_consec = sequential_flags(group, offsets, trace["length"].to_numpy()[order])
        n, seq, consec = len(group), int(is_seq.sum()), int(is_consec.sum())
        # a read back at where a rank's reads of the file began starts a new pass (an epoch
        # over a block read in order), as a record's first read does: no jump of an order
        first = np.r_[True, group[1:] != group[:-1]]
        began = offsets[np.flatnonzero(first)][np.cumsum(first) - 1]
        restarts = int((~first & (offsets == began) & ~is_seq & ~is_consec).sum())
        records = int(len(np.unique(group))) + restarts
    else:
        return "off", None
    jumps = n - consec - records
    if jumps <= 0:
        return "off", 1.0
    forward = 1.0 - max(0, n - seq - records) / jumps
    return ("off" if forward >= FORWARD_SHARE else "seed"), forward


def _own_shares(trace, data, layout, record):
    """True when each rank read a share of the data of its own, the same all job long: with
    several files (io.layout multi), every data file read by one rank; in one shared file (a
    DXT trace needed), the bytes each rank read one contiguous block (its reads touching or
    overlapping one another: samples, or the chunks a library reads beneath them, which may
    be larger than a sample) that no other rank read into. None when neither can be seen (a
    shared file without a trace)."""
    if layout == "multi":
        return bool((data["ranks"] == 1).all())
    if trace is None or record <= 0:
        return None
    blocks = []
    # the data's reads: a library's small metadata reads (libhdf5's superblock and object
    # headers, read by every rank at the file's start) are no rank's share
    for _, reads in fit_patterns.data_reads(trace).groupby("rank", sort=False):
        offs = reads["offset"].to_numpy(np.int64)
        ends = offs + reads["length"].to_numpy(np.int64)
        order = np.argsort(offs, kind="stable")
        offs, ends = offs[order], np.maximum.accumulate(ends[order])
        if (offs[1:] > ends[:-1]).any():        # a hole between a rank's reads
            return False
        blocks.append((int(offs[0]), int(ends[-1])))
    blocks.sort()
    return len(blocks) > 1 and all(b[1] <= a[0] for b, a in zip(blocks[:-1], blocks[1:]))


def _worker_files(job, data, threads):
    """reader.worker_files of a job whose reads were made by worker processes (job.workers):
    "epoch" or "run" when each worker process opened each data file it read once (one POSIX
    record a process and file, one open each) and read it more than once on the whole (a
    file kept open by the worker, as an h5py Dataset does), "epoch" when a rank had more
    workers than read threads (a loader's workers new every epoch); None otherwise."""
    posix = job.records.get("POSIX")
    if posix is None or posix.empty or threads < 1:
        return None
    rows = posix[posix["id"].isin(list(data.index)) & (posix["POSIX_READS"] > 0)]
    if rows.empty or (rows["POSIX_OPENS"] != 1).any() \
            or int(rows["POSIX_READS"].sum()) <= len(rows):
        return None
    most = max(len(w) for w in job.workers.values())
    return "epoch" if most > threads else "run"


def _collective_order(job, data, shuffle, notes, evidence):
    """sample_shuffle of a job read by collective calls: their order recovered from the
    aggregators' POSIX reads (dlio_mpi_analysis.characterization.read_order), which are no rank's own order (an
    aggregator reads a piece of every rank's request in each call); the order found from
    the counters when the traces cannot show it, saying so."""
    share = read_order(job.dxt_segments, "MPI-IO", set(data.index))
    evidence["collective_read_order"] = share
    if share is None:
        notes.append("the order of the collective reads cannot be seen (Darshan's DXT_MPIIO "
                     "gives no offset for a collective call, and no DXT_POSIX trace of the "
                     f"aggregators' reads shows it): reader.sample_shuffle {shuffle} from the "
                     "POSIX counters, which count the aggregators' reads, not the ranks'")
        return shuffle
    order = "off" if share >= FORWARD_SHARE else "seed"
    notes.append(f"the collective reads' order, from the aggregators' POSIX reads inside each "
                 f"call: {share:.0%} of the calls move each rank's place forward: "
                 f"reader.sample_shuffle {order}")
    return order


def _step_gaps(gaps):
    """(the shortest pause that ends a step, the other candidates): STEP_GAP, or, when the
    pauses of STEP_GAP or more fall in two groups (a loader's own pauses between the files of a
    step, and the steps' compute) with a jump of STEP_GAP_RATIO or more between them and at
    least a fifth of the pauses, and two, above it (an epoch's end alone is not the steps), the
    geometric middle of the jump. Of several such jumps, the highest: the pauses below it are
    all within steps (a loader's pauses between files, and under them a slow collective
    call's). The candidates are the middles of the lower jumps, down to CANDIDATE_GAP_RATIO,
    that leave a fifth of the pauses above them (_timeline keeps one that cuts the reads
    into equal batches where the first does not)."""
    long = np.sort(gaps[gaps >= STEP_GAP])
    if len(long) < 4:
        return STEP_GAP, []
    ratios = long[1:] / long[:-1]
    # at least two pauses and a fifth above a jump: one alone is an epoch's end
    ok = np.arange(1, len(long)) <= len(long) - max(2, len(long) // 5)
    middles = np.sqrt(long[:-1] * long[1:])
    jumps = np.flatnonzero(ok & (ratios >= STEP_GAP_RATIO))
    first = float(middles[int(jumps[-1])]) if len(jumps) else STEP_GAP
    others = [float(middles[k]) for k in np.flatnonzero(ok & (ratios >= CANDIDATE_GAP_RATIO))
              if float(middles[k]) > first]
    return first, others


def _steps_by(gaps, weights, lower=True):
    """(evenness, is_step, samples per step, gaps) of the pauses ``gaps`` between a rank's
    reads (weights: each read's samples): the first threshold of _step_gaps unless a higher one
    cuts the reads into batches more even by EVENNESS_GAIN (the pauses between a loader's
    per-sample opens, longer than its reads' own, are no step's end), or, with ``lower``
    (a rank's reads, not one worker's few batches) and FEW_PAUSES or fewer above the first,
    STEP_GAP does; where no jump told the steps, the cut at the pauses' period
    (_periodic_steps) when it makes larger batches about as even."""
    first, others = _step_gaps(gaps)
    # the shortest step pause too, below the jump, where a few pauses alone are above it:
    # an epoch's end and a loader's wait for its prefetch, two pauses above a jump that the
    # steps' own pauses, under it, cut into equal batches (tf.data's map: 8 files a step, 40
    # from the jump)
    lower = [STEP_GAP] if lower and first > STEP_GAP \
        and int((gaps >= first).sum()) <= FEW_PAUSES else []
    best = None
    for threshold in [first] + others + lower:
        is_step = gaps >= threshold
        per_step = np.bincount(np.concatenate([[0], np.cumsum(is_step)]), weights=weights)
        even = _batch_evenness(per_step)
        if best is None or even >= best[0] + EVENNESS_GAIN:
            best = (even, is_step, per_step, gaps)
    if first <= STEP_GAP:
        # no jump in the pauses told the steps: their period may
        periodic = _periodic_steps(gaps, weights)
        if periodic is not None and periodic[0] >= best[0] - EVENNESS_GAIN \
                and float(np.median(periodic[2])) > float(np.median(best[2])):
            best = periodic
    return best


def _periodic_steps(gaps, weights):
    """(evenness, is_step, samples per step, gaps) of the cut at the longest pauses that
    come after every k-th sample, or None: for each batch k, the pauses as many as a rank's
    steps of k samples are the longest, cut there; the smallest k whose cuts make batches of
    k samples in PERIODIC_EVENNESS of the steps or more, its shortest pause STEP_GAP_RATIO times
    the median pause inside the batches or more. A loader that works on each sample
    (a decode, a file's open) pauses between a batch's samples too, as long or longer than a
    jump in the pauses would tell; the step's own pause, longer still, comes after every
    k-th. Pauses at random places make no batches of one size."""
    total = float(np.sum(weights))
    if len(gaps) < PERIODIC_STEPS or total < 2 * PERIODIC_STEPS:
        return None
    longest = np.sort(gaps)[::-1]
    for k in range(2, min(PERIODIC_MAX_BATCH, int(total // PERIODIC_STEPS)) + 1):
        cuts = int(round(total / k)) - 1
        if cuts < PERIODIC_STEPS - 1 or cuts >= len(longest):
            continue
        if longest[cuts - 1] < STEP_GAP or longest[cuts - 1] <= longest[cuts]:
            continue
        threshold = float(np.sqrt(longest[cuts - 1] * max(longest[cuts], TIME_RESOLUTION)))
        is_step = gaps >= threshold
        per_step = np.bincount(np.concatenate([[0], np.cumsum(is_step)]), weights=weights)
        even = _batch_evenness(per_step)
        # the step's pauses clearly longer than a sample's work inside the batch (a file's
        # open every k samples, a little longer than the steps' own pauses, is no batch)
        inside = float(np.median(gaps[~is_step]))
        if even >= PERIODIC_EVENNESS and abs(float(np.median(per_step)) - k) <= 0.5 \
                and longest[cuts - 1] >= STEP_GAP_RATIO * inside:
            # the smallest: a multiple of the batch can be even too, where a pause every few
            # steps (an epoch's end, a checkpoint's writes) is longer than the steps'
            return (even, is_step, per_step, gaps)
    return None


def _batch_evenness(per_step):
    """The share of a rank's steps (all but its last) that read the median step's samples
    (within half a sample): a batch is a fixed number of samples."""
    inner = per_step[:-1] if len(per_step) > 2 else per_step
    if not len(inner):
        return 0.0
    return float(np.mean(np.abs(inner - np.median(inner)) <= 0.5))


# a pause k times the shortest steps' (within CACHED_FIT of a whole k) holds k steps
CACHED_FIT = 0.25
CACHED_SHARE = 0.25     # of the pauses two steps long or more, for a cache to show


def _cached_steps(gaps, weights):
    """(steps each pause holds, the one step's pause) when a rank's reads each hold more than
    a sample (a chunk of several, libhdf5 keeping it for the next ones) and its pauses come in
    whole multiples of the shortest steps' (a step whose samples the cache served reads
    nothing, its compute joins the next pause): at least CACHED_SHARE of them two steps long
    or more, all within CACHED_FIT of a whole multiple; else None."""
    if len(gaps) < 8 or float(np.median(weights[weights > 0])) < 1.2:
        return None
    base = float(np.percentile(gaps, 20))
    if base <= 0:
        return None
    ratio = gaps / base
    k = np.maximum(1, np.rint(ratio))
    if float(np.mean(k >= 2)) < CACHED_SHARE or float(np.mean(np.abs(ratio - k) <= CACHED_FIT
                                                              * k)) < 0.9:
        return None
    return k, float(np.median(gaps / k))


def _inside_loads(ids, weights):
    """For each pause between a process's reads (in their start order; ids their files',
    weights their samples begun): True where it falls inside one sample's load, a stall of
    the library between its own reads (a page fault, the scheduler) that ends no step: the
    reads on both sides of one file, the one after beginning no sample, and a sample begun
    among that file's reads since they began."""
    ids = np.asarray(ids)
    begins = np.asarray(weights) > 0
    same = ids[1:] == ids[:-1]
    first = np.r_[True, ~same]
    run = np.cumsum(first) - 1
    begun = np.cumsum(begins)
    before = (begun - begins)[np.flatnonzero(first)][run]
    return same & ((begun - before)[:-1] > 0) & ~begins[1:]


def _worker_batch(reads, weights, by_start, loads=False):
    """A rank's batch from its worker processes' own pauses (the median over their steps),
    when its reads were made by several processes: a data loader's workers, each assembling
    whole batches, one after another as the loop takes them (a worker's first batches,
    prefetched back to back, are one run of its reads); their reads interleave in the rank's,
    where two workers' batches read at once look like one. With ``loads`` (a sample is a
    load of a file), a pause inside a load ends no step (_inside_loads). Else None."""
    if "process" not in reads or reads["process"].nunique() < 2:
        return None
    process = reads["process"].to_numpy()[by_start]
    ids = reads["id"].to_numpy()[by_start]
    start = reads["start"].to_numpy()[by_start]
    end = reads["end"].to_numpy()[by_start]
    per_step, cycles, spans = [], [], []
    for p in np.unique(process):
        mine = process == p
        if mine.sum() < 2:
            continue
        gaps = start[mine][1:] - np.maximum.accumulate(end[mine])[:-1]
        if loads:
            gaps = np.where(_inside_loads(ids[mine], weights[mine]), 0.0, gaps)
        # (a worker's own batches are few: its pauses over a jump are its batches')
        _, is_step, steps, _ = _steps_by(gaps, weights[mine], lower=False)
        per_step.append(steps)
        begins = np.concatenate([start[mine][:1], start[mine][1:][is_step]])
        cycles.append(np.diff(begins))
        spans.append((float(start[mine][0]), float(end[mine].max())))
    if len(per_step) < 2:
        return None
    # a worker's batches come a cycle apart, the loop taking a batch of each worker in turn:
    # a step is the cycle over the workers at work together
    together = np.median([sum(a <= (b0 + b1) / 2 <= b for a, b in spans) for b0, b1 in spans])
    cycle = np.concatenate(cycles)
    step = float(np.median(cycle)) / max(float(together), 1.0) if len(cycle) else None
    return float(np.median(np.concatenate(per_step))), step


def _timeline(trace, record, sample_starts=None, loads=False):
    """(computation_time, batch_size, read_threads, evidence) from each rank's reads.
    sample_starts(reads) -> bool array, where given, marks the reads that begin a sample (a
    numpy.load's end-record read): a step's samples are then counted, not sized. ``loads``:
    a sample is a load of a file (its reads one run of that file's), a pause inside which
    ends no step."""
    gaps_all, batches, concurrency, worker_steps = [], [], [], []
    for _, reads in trace.groupby("rank"):
        start = np.sort(reads["start"].to_numpy())
        end_by_start = reads["end"].to_numpy()[np.argsort(reads["start"].to_numpy())]
        busy_end = np.maximum.accumulate(end_by_start)
        gaps = start[1:] - busy_end[:-1]
        # a step's samples: the bytes read between two step pauses, in records (the median
        # over the rank's steps: an epoch's end or a slow step does not skew it)
        by_start = np.argsort(reads["start"].to_numpy())
        weights = sample_starts(reads)[by_start] if sample_starts is not None else \
            reads["length"].to_numpy()[by_start] / max(record, 1)
        if loads and ("process" not in reads or reads["process"].nunique() < 2):
            # (the reads of several workers interleave in a rank's: each worker's own are
            # told apart in _worker_batch)
            gaps = np.where(_inside_loads(reads["id"].to_numpy()[by_start], weights), 0.0,
                            gaps)
        ends = np.sort(reads["end"].to_numpy())
        # a read ending within TIME_RESOLUTION of another's start does not overlap it
        in_flight = np.searchsorted(start, start, side="right") \
            - np.searchsorted(ends, start + TIME_RESOLUTION, side="right")
        concurrency.append(float(np.percentile(in_flight, 95)))
        best = _steps_by(gaps, weights)
        if concurrency[-1] >= 2:
            # reads in flight over the pauses (POSIX aio, a loader's threads): the pauses
            # of the submissions, start to start, where they cut more even batches
            by_starts = _steps_by(np.diff(start), weights)
            if by_starts[0] >= best[0] + EVENNESS_GAIN:
                best = by_starts
        _, is_step, per_step, gaps = best
        steps = gaps[is_step]
        cached = _cached_steps(steps, weights)
        if cached is not None:
            # reads that each hold more than a sample, the others served from a cache
            # between them: a pause of k steps' compute holds k steps
            k, base = cached
            gaps_all.append(np.repeat(steps / k, k.astype(int)))
            batches.append(float(weights.sum()) / (float(k.sum()) + 1))
            continue
        gaps_all.append(steps)
        workers = _worker_batch(reads, weights, by_start, loads)
        batches.append(workers[0] if workers else float(np.median(per_step)))
        if workers and workers[1]:
            worker_steps.append(workers[1])
    steps_per_rank = float(np.median([len(g) for g in gaps_all]))
    joined = np.concatenate(gaps_all) if gaps_all else np.zeros(0)
    compute = float(np.median(joined)) if steps_per_rank >= 2 and len(joined) else 0.0
    if compute > 0 and worker_steps:
        compute = float(np.median(worker_steps))
    batch = max(1, int(round(float(np.median(batches))))) if compute > 0 else 1
    in_flight = int(round(float(np.median(concurrency))))
    threads = in_flight if in_flight >= 2 else 0
    return compute, batch, threads, {"step_gaps_per_rank": steps_per_rank,
                                     "median_step_gap_s": compute,
                                     "reads_in_flight_p95": in_flight}


def _direct(job, data, notes, evidence):
    """True when the job's data reads bypassed the page cache (O_DIRECT), on strong evidence
    only. A Darshan log does not record O_DIRECT (POSIX_MODE is the permission mode): every
    data access aligned to the file alignment Darshan uses (no POSIX_FILE_NOT_ALIGNED nor
    POSIX_MEM_NOT_ALIGNED, DXT offsets and lengths multiples of it) is needed, and proves
    nothing alone; strong evidence is reads of data that the same rank wrote earlier in the
    job (a buffered write leaves it in that process's page cache) running, median per call,
    below PAGE_CACHE_RATE. The note says which it was."""
    posix = job.records.get("POSIX")
    if posix is None or posix.empty:
        return False
    rows = posix[posix["id"].isin(list(data.index))]
    moved = rows[(rows["POSIX_READS"] > 0) | (rows["POSIX_WRITES"] > 0)]
    if moved.empty or "POSIX_FILE_ALIGNMENT" not in moved:
        return False
    align = int(moved["POSIX_FILE_ALIGNMENT"].max())
    unaligned = int(moved["POSIX_FILE_NOT_ALIGNED"].clip(lower=0).sum()
                    + moved["POSIX_MEM_NOT_ALIGNED"].clip(lower=0).sum())
    trace = (job.dxt_segments or {}).get("DXT_POSIX")
    if trace is not None:
        trace = trace[trace["id"].isin(list(data.index)) & (trace["length"] > 0)]
        if align > 0 and ((trace["offset"] % align != 0) | (trace["length"] % align != 0)).any():
            unaligned += 1
    if unaligned or align <= 1:
        return False
    evidence["aligned_accesses"] = align
    unseen = (f"every data access was aligned to {align} bytes, as O_DIRECT needs; a Darshan "
              "log does not record O_DIRECT (POSIX_MODE is the permission mode)")
    own = moved[(moved["POSIX_READS"] > 0) & (moved["POSIX_BYTES_WRITTEN"] > 0)]
    if trace is None or own.empty:
        notes.append(f"{unseen} and nothing shows the page cache bypassed (no data read back "
                     "by the rank that wrote it): io.interface posix")
        return False
    mine = set(zip(own["rank"].astype(int), own["id"].astype("uint64")))
    if (own["rank"] < 0).any():
        # a shared file's record reduced over the ranks (rank -1): the trace tells which
        # rank wrote and read it
        shared = {int(i) for i in own.loc[own["rank"] < 0, "id"]}
        traced = trace[trace["id"].isin(list(shared))]
        pairs = {op: set(zip(traced.loc[traced["op"] == op, "rank"].astype(int),
                             traced.loc[traced["op"] == op, "id"].astype("uint64")))
                 for op in ("read", "write")}
        mine |= pairs["read"] & pairs["write"]
    reads = trace[trace["op"] == "read"]
    reads = reads[[(int(r), i) in mine for r, i in zip(reads["rank"], reads["id"])]]
    seconds = (reads["end"] - reads["start"]).to_numpy()
    if reads.empty:
        notes.append(f"{unseen} and the trace shows no rank reading back data it wrote "
                     "itself: io.interface posix")
        return False
    if (seconds <= 0).all():
        notes.append(f"{unseen}; the reads' times are unknown: io.interface posix")
        return False
    rate = float(np.median(reads["length"].to_numpy()[seconds > 0] / seconds[seconds > 0]))
    evidence["readback_rate"] = rate
    if rate < PAGE_CACHE_RATE:
        notes.append(f"{unseen}; the data each rank had written itself was read back at "
                     f"{units.rate_in(rate, 'GiB', 2)} (median per read), slower than a copy from the page "
                     f"cache where buffered writes leave it: O_DIRECT, io.interface "
                     "posix_direct")
        return True
    notes.append(f"{unseen}; the data each rank had written itself was read back at "
                 f"{units.rate_in(rate, 'GiB', 2)} (median per read), from the page cache: io.interface posix")
    return False

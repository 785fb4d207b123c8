"""A dlio_mpi run's own op logs as a :class:`~dlio_mpi_analysis.loading.loader.DarshanJob`, so that a run without
Darshan is characterized, compared, fitted and reported exactly as a Darshan log is.

``load_run(directory)`` reads ``summary.json`` and every ``oplog_rankNNNNN.npz`` (written with
``io.keep_oplog=true``) and builds the records Darshan would hold, per (rank, file), with the
definitions of :mod:`dlio_mpi_analysis.loading.oplog_records`, plus DXT-like traces of every read and write.

Which module a call lands in, by the interface the op log names, and the lowest layer the op
log observes of the file (``DarshanJob.layers``; :mod:`dlio_mpi_analysis.characterization.layers`):

====================  ========  ===============================================================
interface             observed  records
====================  ========  ===============================================================
posix, posix_direct,  POSIX     POSIX records, DXT_POSIX trace (io_uring's transfers too, each
mmap, io_uring                  a read or write at its offset: Darshan itself records the
                                file's open and close only, not what the kernel takes from the
                                ring)
stdio                 POSIX     STDIO records; a DXT_STDIO trace (not a Darshan module: Darshan
                                traces POSIX and MPI-IO only; it is given so that STDIO runs
                                get a timeline); a sync is fflush, then fsync of the stream's
                                descriptor: STDIO_FLUSHES and POSIX_FSYNCS
mpiio_ind             POSIX     MPI-IO records (independent), DXT_MPIIO; and the POSIX calls
                                beneath: one per MPI-IO call that moved bytes, its opens, closes
                                and syncs (what Open MPI issues for a contiguous independent
                                call: under Darshan the POSIX counters are the same numbers)
mpiio_coll            MPI-IO    MPI-IO records (collective), DXT_MPIIO; no POSIX records
hdf5_ind, hdf5_coll   HDF5      H5F and H5D records (H5Fflush: H5F_FLUSHES only), a DXT_H5D
                                trace of the H5Dread and H5Dwrite calls (the first row's byte
                                offset in the dataset: not a Darshan module either, given for
                                the order of the reads, dlio_mpi_analysis.characterization.read_order); no MPI-IO or
                                POSIX records
hdf5_sec2             POSIX     H5F and H5D records; POSIX beneath as libhdf5 issued it (the
                                emulator's logging sec2 driver records every pread/pwrite
                                libhdf5 makes, metadata and chunk reads included, as POSIX
                                calls of the file)
====================  ========  ===============================================================

A file read or written by collective MPI-IO calls (checkpoints of the mpiio format too) is
observed from MPI-IO down, one through libhdf5's MPI-IO driver from HDF5 down, whatever else
touched it. Why not lower: beneath a collective call the POSIX reads are made by the
aggregator ranks, of whole file domains in cb_buffer_size pieces (with Open MPI's ompio, about
four times the calls, 268 KB on average, for 1 MiB collective calls of 2 ranks), which the rank
that made the call does not see and the emulator cannot intercept; beneath the MPI-IO driver,
libhdf5 reads its metadata (superblock, object headers, B-trees: small independent MPI-IO
reads at every open) and splits a selection into MPI-IO calls as its own code decides, through
a path the emulator does not control (the sec2 driver it replaces with its logging one; the
MPI-IO driver's internals are not a public interface of HDF5 1.10). Modelling those layers
(one POSIX call per MPI-IO call at each rank's own range) scored a run against its own Darshan
log at 0.61-0.86; the op log claims what it observed instead, and ``dlio_mpi_analysis.comparison.compare`` compares
jobs at the layer both observed, where a run and its Darshan log hold the same calls (0.99).

For POSIX I/O the counters are Darshan's own: on a run made under Darshan with its op logs
kept, the POSIX counters of the data files (calls, bytes, SEQ, CONSEC, size histograms) are the
same numbers (tests/analysis/test_oplog_runs.py, run when DLIO_MPI_DARSHAN_LIB names a Darshan
runtime). Where this differs from what Darshan would record for the same run:

- A collective MPI-IO call is logged as Darshan times it: the call alone as the read or
  write, the file view set before it and the one set back after it apart. The views count in
  MPIIO_VIEWS and, as in Darshan (which times a view only when it passes hints), add no time,
  although a view is collective and can wait for the other ranks.
- The opens and closes beneath independent MPI-IO are given no duration (an MPI_File_open's
  time is mostly MPI-IO's own). The op log records one MPI-IO collective call as one entry
  with the bytes this rank received, at the first offset of its ranges; one H5Dread as one
  entry with the bytes of the whole selection at the first selected row's dataset offset (an
  offset inside the dataset, not in the file). The op log's open of an HDF5 file is H5Fopen
  and H5Dopen in one entry: its time is given to H5F, the H5D open takes none.
- Times of calls made under Darshan include Darshan's wrapper (its record keeping at a file's
  first open is tens of microseconds), which Darshan's own timers leave out.
- Index reads: the reads that find where an NPZ file's members lie (its zip end record,
  central directory and members' headers, read through the native engine the first time a
  rank needs the file's index, and again when its index cache has dropped it) are in the op
  log; those of the general path, for compressed or unusual NPZ files (zipfile in Python),
  are not. reader.access=numpy and stream, and HDF5, read no index during training.
- Dataset generation within the run (workflow.generate_data) is not in the op log; Darshan
  sees its writes and reads (generate the dataset first to compare the training alone).
- mmap: the op log records the mmap call and the copies out of the mapping as reads. Darshan
  sees neither: memory accesses move no bytes through a call it wraps, and since Darshan 3.2
  its mmap counter is not kept (POSIX_MMAPS is -1 in every record; checked under Darshan
  3.5.0: an mmap run's data files show opens and no reads or bytes). The records built here
  do the same: POSIX_MMAPS is -1, and mmap calls and copies are left out of the POSIX
  counters and the DXT trace, so an mmap run compares with its Darshan log like for like; the
  bytes so left out are said in a warning of the job (``MMAP_NOTE``), which the
  characterization and compare repeat.
- Records are per (rank, file) and never reduced over ranks (see ``oplog_records``).
- An MPI-IO open counts as collective where several ranks opened the file (the job's
  communicator: a shared data file, a checkpoint file all ranks write), else as independent
  (a rank's own file, MPI_COMM_SELF), as Darshan counts an open on a communicator of one.
- Record ids are a 64-bit BLAKE2b hash of the file's path (Darshan uses its own hash); HDF5
  dataset records are named ``path:/records``, as dlio_mpi names its datasets.
- Dataset generation, which happens before the op log starts, is not in it, nor in the run
  time (see :func:`load_run`).
- Entries past ``io.oplog_capacity`` are counted by the emulator but not logged: such a log is
  flagged partial, as Darshan flags a module that ran out of memory.
"""

import glob
import json
import os
import warnings
import zipfile
import zlib

import numpy as np
from dlio_mpi.run import oplog_format
from dlio_mpi.run import outputs
from dlio_mpi.run import summary_layout

from dlio_mpi_analysis.errors import LogError, PartialLogWarning
from dlio_mpi_analysis.loading.loader import DarshanJob
from dlio_mpi_analysis.loading.oplog_layers import MMAP_IFACE, layers
from dlio_mpi_analysis.loading.oplog_names import checkpoint_files, file_name, record_id  # noqa: F401
from dlio_mpi_analysis.loading.oplog_records import READ, Ops

SUMMARY = "summary.json"
OPLOG_GLOB = oplog_format.FILE_GLOB
OPLOG_VERSION = "dlio_mpi op log"
GENERATED_NOTE = ("the run generated {files} dataset files before training: its op log does not "
                  "hold that I/O, a Darshan log of it does (generate the dataset first, "
                  "python -m dlio_mpi generate, to compare the training alone)")
MMAP_MARK = "through mmap (copies out of the mapping) are left out of the POSIX counters"
MMAP_NOTE = ("{bytes} bytes in {reads} reads " + MMAP_MARK + ", as Darshan leaves them out: it "
             "cannot see memory accesses (and keeps no mmap counter: POSIX_MMAPS -1)")


def is_run_dir(path):
    """True for a directory holding a run's summary.json and at least one op log: a run's
    folder, or an output folder whose latest run does."""
    path = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
    path = outputs.results_folder(path) if path else path
    return bool(path) and os.path.isdir(path) \
        and os.path.isfile(os.path.join(path, SUMMARY)) \
        and bool(glob.glob(os.path.join(path, OPLOG_GLOB)))


def load_run(directory):
    """The DarshanJob of a dlio_mpi run directory (summary.json + oplog_rank*.npz), or of an
    output folder's latest run.

    Times cover what Darshan's do: seconds since the job's start, which each rank records right
    after MPI_Init (``job_mono_ns``), to its end (when the rank writes its op log, just before
    MPI_Finalize), so that the run time and the I/O share of a run's op log and of its Darshan
    log have the same basis. With the run on one host all ranks share that clock and time 0 is
    the earliest rank's start; on several hosts each rank's times are taken from its own start
    (right after MPI_Init, so they agree to the launch's spread). ``run_time`` is the latest of
    the job ends, the last logged call's end and the sum of the phase durations in
    summary.json. Older logs without the job's times start at the training part's start
    (``window_mono_ns``), else at the earliest op-log origin. Warns (PartialLogWarning) when
    the op logs hold fewer bytes than summary.json says the run moved. A run that generated its
    dataset is noted in the job's warnings (the op log does not hold the generation's I/O,
    Darshan's log does). DXT-like traces are always built.
    """
    directory = outputs.results_folder(os.fspath(directory))
    summary_path = os.path.join(directory, SUMMARY)
    try:
        with open(summary_path) as f:
            full = json.load(f)
    except (OSError, ValueError) as error:
        detail = " ".join(str(error).split()) or type(error).__name__
        raise LogError(f"{summary_path}: not a readable run summary ({detail})") from None
    if not isinstance(full, dict):
        raise LogError(f"{summary_path}: not a readable run summary (a JSON object is expected)")
    summary = summary_layout.own(full)
    paths = sorted(glob.glob(os.path.join(directory, OPLOG_GLOB)))
    if not paths:
        raise LogError(f"{directory}: no {OPLOG_GLOB}: run with io.keep_oplog=true")
    config = summary.get("config", {})
    ranks = int(summary_layout.ranks(full) or len(paths))
    table, origins, windows = _read_oplogs(paths)
    one_clock = int(full.get("num_hosts", summary.get("hosts", 1))) <= 1
    # time 0: the job's start (the earliest on one clock, each rank's own on several); older
    # logs: the training part's start, else the earliest origin
    zero = {rank: windows.get(rank, (origin, origin))[0] for rank, origin in origins.items()}
    if one_clock:
        first = min(zero.values(), default=0)
        zero = dict.fromkeys(zero, first)
    shift_of_rank = np.zeros(max(origins, default=0) + 1, np.int64)
    for rank, origin in origins.items():
        shift_of_rank[rank] = origin - zero[rank]
    start = (table["start"] + shift_of_rank[table["rank"]]) / 1e9
    end = start + table["dur"] / 1e9
    phases = (summary.get("load") or {}).get("duration_s", 0.0) + sum(
        e.get("duration_s", 0.0) for e in summary.get("epochs", []) + summary.get("evaluations",
                                                                                    []))
    window = max(((w[1] - zero[rank]) / 1e9 for rank, w in windows.items()), default=0.0)
    run_time = max(float(end.max()) if len(end) else 0.0, float(phases), window)
    table["file"], checkpoint_names = checkpoint_files(table, summary, ranks)
    files, file_index = np.unique(table["file"], return_inverse=True)
    names = {int(f): checkpoint_names.get(int(f)) or file_name(config, int(f)) for f in files}
    ids = {f: record_id(name) for f, name in names.items()}
    file_ids = np.array([ids[int(f)] for f in files], dtype=np.uint64)[file_index.reshape(-1)]
    ops = Ops(rank=table["rank"], id=file_ids, op=table["op"], start=start, end=end,
              offset=table["offset"], length=table["bytes"],
              collective=np.zeros(len(start), bool))
    records, segments, dataset_names, observed = layers(ops, table["iface"], names, ids)
    names = {ids[f]: name for f, name in names.items()}
    names.update(dataset_names)
    messages = (_missing_messages(directory, ranks, origins)
                or _overflow_messages(directory, summary, ops))
    for message in messages:
        warnings.warn(message, PartialLogWarning, stacklevel=2)
    notes = []
    if int(summary.get("files_generated") or 0):
        notes.append(GENERATED_NOTE.format(files=int(summary["files_generated"])))
    hidden = (table["iface"] == MMAP_IFACE) & (ops.op == READ)
    if hidden.any():
        notes.append(MMAP_NOTE.format(bytes=int(ops.length[hidden].sum()),
                                      reads=int(hidden.sum())))
    modules = tuple(records) + tuple(segments)
    return DarshanJob(
        paths=tuple(paths),
        exe=f"dlio_mpi run (workload {summary.get('workload') or 'from --config'})",
        nprocs=ranks,
        start_time=float(summary.get("started", 0.0)),
        run_time=run_time,
        log_versions=(OPLOG_VERSION,),
        modules=modules,
        partial_modules=modules if messages else (),
        records=records,
        dxt_segments=segments,
        heatmap_bytes={},
        warnings=tuple(messages) + tuple(notes),
        names=names,
        source="oplog",
        layers=observed,
    )


def _read_oplogs(paths):
    """Every op log's entries, all phases, as one table of arrays; each rank's origin; and each
    rank's window (start and end of its training part on the same clock; older logs have
    none)."""
    columns = {key: [] for key in ("rank",) + oplog_format.COLUMNS}
    origins, windows = {}, {}
    for path in paths:
        try:
            rank = oplog_format.rank_of(path)
            with np.load(path) as z:
                origins[rank] = int(z[oplog_format.ORIGIN])
                # the job's start and end (older logs: the training part's)
                for key in (oplog_format.JOB, oplog_format.WINDOW):
                    if key in z.files:
                        windows[rank] = tuple(int(t) for t in z[key])
                        break
                for i in range(len(z[oplog_format.PHASES])):
                    n = len(z[oplog_format.column_key(i, "op")])
                    columns["rank"].append(np.full(n, rank, np.int64))
                    for key in oplog_format.COLUMNS:
                        column = z[oplog_format.column_key(i, key)]
                        if column.shape != (n,):
                            raise ValueError(f"phase {i}: {key} holds {column.size} entries "
                                             f"for {n} operations")
                        columns[key].append(column)
        except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile,
                zlib.error) as error:
            detail = " ".join(str(error).split()) or type(error).__name__
            raise LogError(f"{path}: not a readable dlio_mpi op log ({detail})") from None
    types = {"rank": np.int64, "start": np.int64, "dur": np.int64, "offset": np.int64,
             "bytes": np.int64, "file": np.int64, "op": np.uint8, "iface": np.uint8}
    return ({key: np.concatenate(parts).astype(types[key]) if parts
             else np.zeros(0, types[key]) for key, parts in columns.items()}, origins, windows)


def _missing_messages(directory, ranks, origins):
    """A message naming the op logs of the run's ranks that are not in directory (the bytes
    the run moved then differ from the logs' for that reason, not io.oplog_capacity)."""
    missing = [rank for rank in range(ranks) if rank not in origins]
    if not missing:
        return []
    shown = ", ".join(oplog_format.file_name(rank) for rank in missing[:8])
    more = f" and {len(missing) - 8} more" if len(missing) > 8 else ""
    return [f"{directory}: the run had {ranks} ranks but {len(missing)} op log"
            f"{'s are' if len(missing) > 1 else ' is'} missing ({shown}{more}): counts, "
            f"bytes and traces cover {ranks - len(missing)} of the {ranks} ranks only"]


def _overflow_messages(directory, summary, ops):
    """A message when the logs hold fewer read bytes than the run reported moving."""
    reported = int(summary.get("bytes_moved", 0))
    reads = ops.op == READ
    # one logged entry per call of the interface the run used (the raw table, no layers)
    logged = int(ops.length[reads].sum())
    if logged >= reported:
        return []
    return [f"{directory}: the op logs hold {logged} of the {reported} bytes the run moved: "
            f"entries past io.oplog_capacity were counted but not logged, so counts and traces "
            f"are incomplete (raise io.oplog_capacity)"]

"""Read one Darshan log file through darshan-util's C library (``darshan_util``).

The log's job, executable, mount table, module table, names and HEATMAP records are read, and
the records of the modules asked for, each once, a record at a time, straight into numpy
arrays, then into column Tables. PyDarshan is not imported: its package imports pandas and its
report on import, and its readers make a dict per record and per traced operation.

Four behaviours of darshan-util shape this code:

- A truncated or corrupt region can crash darshan-util or make it allocate terabytes (see
  ``log_header``), so the header's region map is checked against the file and every region is
  inflated before darshan-util opens the file.
- A failed record read looks like the end of the records (darshan-util only prints an
  ``Error:`` line on stderr), so every C call runs under :func:`captured_c_stderr` and any
  error line turns the whole file into a :class:`LogError`; so does any exception raised
  while the records are made sense of (a name that is not UTF-8, say).
- Closing a handle on which darshan-util has failed can trip an assertion in
  ``darshan_log_close`` and abort the interpreter, or make it try to flush the handle as if
  written and unlink a file; and a failed read of the name records closes (frees) the handle
  itself. A failed log's handle is therefore never used again nor closed (a small leak, on
  an error path only).
- HEATMAP records carry the module they count in their name ("heatmap:POSIX"); their bins
  are summed over ranks per module, a rank's record replacing an earlier one of the same rank
  and module, with bin edges ``k * bin width`` for k = 0 .. bins (PyDarshan's heat map
  frames, whose figures these were).
"""

import os
from dataclasses import dataclass, field

import numpy as np

from dlio_mpi_analysis.loading import darshan_util
from dlio_mpi_analysis.loading.c_stderr import captured_c_stderr
from dlio_mpi_analysis.errors import LogError
from dlio_mpi_analysis.loading.log_header import check_regions
from dlio_mpi_analysis.loading.table import Table
from dlio_mpi_analysis.loading.trace_ops import OP_NAMES

DXT_COLUMNS = ("rank", "id", "op", "offset", "length", "start", "end")
# darshan-util's struct segment_info, one traced operation as a DXT record stores it
SEGMENT = np.dtype([("offset", "<i8"), ("length", "<i8"), ("start", "<f8"), ("end", "<f8")])
OPS = OP_NAMES  # the "op" column: the index of the name (trace_ops)
# HEATMAP records name their module without the dash that the counter modules use.
HEATMAP_MODULES = {"POSIX": "POSIX", "STDIO": "STDIO", "MPIIO": "MPI-IO"}
HEATMAP_PREFIX = "heatmap:"  # a HEATMAP record's name: this, then the module it counts


class _HandleLost(Exception):
    """darshan-util failed and closed the log's handle itself (see the module docstring)."""


@dataclass
class LogContents:
    """What one log file holds, as read by :func:`read_log`.

    Ranks are as the log has them (``-1`` for a record reduced over all ranks); times in
    DXT segments are seconds since this log's start.
    """

    path: str
    version: str
    exe: str
    nprocs: int
    start_time: float  # seconds since the epoch, with the nanoseconds of 3.41+ logs
    run_time: float  # seconds, as darshan-util computes it for this format version
    modules: dict  # every module with data in the log -> True if it is marked partial
    records: dict  # module -> Table, one row per record: id, rank, counters, fcounters
    # DXT module -> Table with DXT_COLUMNS, one row per operation (op: trace_ops codes)
    dxt_segments: dict
    heatmap_bytes: dict  # module -> {"read": bytes, "write": bytes} summed over ranks and bins
    names: dict = field(default_factory=dict)  # record id -> file name, for the records read
    # module -> {"edges": bin edges (s since the log's start), "read": bytes per bin summed over
    # ranks, "write": ...}, from HEATMAP records
    heatmap_bins: dict = field(default_factory=dict)
    job_id: int = 0  # the job id the runtime recorded (the scheduler's, else a pid)
    # the job's "h" metadata: the MPI-IO hints Darshan wrote this log with (DARSHAN_LOGHINTS,
    # "key=value;..."), not the application's; "" when the log has none
    hints: str = ""
    uid: int = 0  # the user id the job ran as
    end_time: float = 0.0  # seconds since the epoch, as the runtime recorded the job's end
    library_version: str = ""  # the Darshan runtime library that wrote the log ("3.4.0")
    # (mount point, file system type) of the mount table the runtime recorded, as listed
    mounts: tuple = ()


def read_log(path, modules, dxt_modules=()):
    """Read the counter records of ``modules`` and the traces of ``dxt_modules`` from one log.

    Modules the log does not hold are skipped. HEATMAP byte totals are read whenever the log
    has a HEATMAP module (they are small). Raises LogError, with the path first in a one-line
    message, when the file is missing, not a Darshan log, truncated or corrupt.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise LogError(f"{path}: no such file")
    check_regions(path)
    handle = None
    failure = None
    try:
        with captured_c_stderr() as stderr:
            handle = darshan_util.open_log(path)
            if handle is not None:
                contents = _read_open_log(handle, path, modules, dxt_modules)
    except _HandleLost:
        failure = "reading the file names failed"
    except (Exception, MemoryError) as error:  # records darshan-util read but make no sense
        detail = " ".join(str(error).split()) or type(error).__name__
        raise LogError(f"{path}: not a readable Darshan log ({type(error).__name__}: "
                       f"{detail})") from None
    if handle is None or failure is not None or stderr.errors:
        # never close a handle darshan-util failed on (see the module docstring)
        detail = (stderr.errors[0].rstrip(".") if stderr.errors
                  else failure or "failed to open the file")
        raise LogError(f"{path}: not a readable Darshan log (darshan-util: {detail})")
    with captured_c_stderr():
        darshan_util.close_log(handle)
    return contents


def _read_open_log(handle, path, modules, dxt_modules):
    job = darshan_util.job(handle)
    exe = darshan_util.exe(handle)
    mounts = darshan_util.mounts(handle)
    present = darshan_util.modules(handle)
    names = darshan_util.name_records(handle)
    if names is None:
        raise _HandleLost()
    records = {}
    for mod in modules:
        if mod in present:
            records[mod] = _records_frame(handle, present[mod][0], names, mod)
    segments = {}
    for mod in dxt_modules:
        if mod in present:
            segments[mod] = _segments_frame(handle, present[mod][0], names, mod)
    heatmap_bytes, heatmap_bins = ({}, {}) if "HEATMAP" not in present else \
        _heatmaps(handle, present["HEATMAP"][0], names)
    metadata = job["metadata"]
    return LogContents(
        path=path,
        version=darshan_util.log_version(handle),
        exe=exe,
        nprocs=int(job["nprocs"]),
        start_time=job["start_time_sec"] + job["start_time_nsec"] * 1e-9,
        run_time=float(job["run_time"]),
        modules={mod: partial for mod, (_, partial) in present.items()},
        records=records,
        dxt_segments=segments,
        heatmap_bytes=heatmap_bytes,
        names=names,
        heatmap_bins=heatmap_bins,
        job_id=int(job["jobid"]),
        hints=str(metadata.get("h", "") or ""),
        uid=int(job["uid"]),
        end_time=job["end_time_sec"] + job["end_time_nsec"] * 1e-9,
        library_version=str(metadata.get("lib_ver", "") or ""),
        mounts=tuple((str(point), str(kind)) for point, kind in mounts),
    )


def _named_records(handle, index, names, mod):
    """Each record of the module at ``index`` that has a name record (PyDarshan keeps only
    those), in the log's order, as a cffi pointer of the module's record type, valid until
    the next one is read."""
    for record in darshan_util.records(handle, index, darshan_util.RECORD_TYPES[mod]):
        if int(record.base_rec.id) in names:
            yield record


def _records_frame(handle, index, names, mod):
    """One module's records as a Table: id (uint64), rank, then every counter by name."""
    counter_names = list(darshan_util.counter_names(mod))
    fcounter_names = list(darshan_util.fcounter_names(mod))
    ffi = darshan_util.ffi
    ids, ranks, counters, fcounters = [], [], [], []
    for record in _named_records(handle, index, names, mod):
        ids.append(int(record.base_rec.id))
        ranks.append(int(record.base_rec.rank))
        counters.append(np.frombuffer(ffi.buffer(record.counters), dtype=np.int64).copy())
        fcounters.append(np.frombuffer(ffi.buffer(record.fcounters), dtype=np.float64).copy())
    n = len(ids)
    counters = np.array(counters, dtype=np.int64).reshape(n, len(counter_names))
    fcounters = np.array(fcounters, dtype=np.float64).reshape(n, len(fcounter_names))
    columns = {"id": np.array(ids, dtype=np.uint64), "rank": np.array(ranks, dtype=np.int64)}
    columns.update((name, counters[:, i].copy()) for i, name in enumerate(counter_names))
    columns.update((name, fcounters[:, i].copy()) for i, name in enumerate(fcounter_names))
    return Table(columns, length=n)


def _segments_frame(handle, index, names, mod):
    """A DXT module's traces as one Table with DXT_COLUMNS (op: trace_ops codes), one row
    per operation: per record (see :func:`_named_records`), its reads, then its writes."""
    ffi = darshan_util.ffi
    header = ffi.sizeof("struct dxt_file_record")
    ranks, ids, codes, traced = [], [], [], []
    for record in _named_records(handle, index, names, mod):
        writes, reads = int(record.write_count), int(record.read_count)
        # the record's segments follow it: its writes, then its reads
        start = ffi.cast("char *", record) + header
        segments = np.frombuffer(ffi.buffer(start, SEGMENT.itemsize * (writes + reads)),
                                 dtype=SEGMENT).copy()
        traced += [segments[writes:], segments[:writes]]
        ranks.append(np.full(reads + writes, int(record.base_rec.rank), dtype=np.int64))
        ids.append(np.full(reads + writes, int(record.base_rec.id), dtype=np.uint64))
        codes.append(np.repeat(np.array([0, 1], dtype=np.int8), [reads, writes]))
    rows = np.concatenate(traced) if traced else np.empty(0, dtype=SEGMENT)

    def joined(parts, dtype):
        return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)

    return Table({
        "rank": joined(ranks, np.int64),
        "id": joined(ids, np.uint64),
        "op": joined(codes, np.int8),
        "offset": rows["offset"].astype(np.int64),
        "length": rows["length"].astype(np.int64),
        "start": rows["start"].astype(np.float64),
        "end": rows["end"].astype(np.float64),
    }, length=len(rows))


def _heatmaps(handle, index, names):
    """HEATMAP byte totals and per-bin sums over ranks, per module (see the module docstring).

    Raises ValueError when a module's records disagree on the bin count or width."""
    ffi = darshan_util.ffi
    layouts, per_rank = {}, {}
    for record in darshan_util.records(handle, index, darshan_util.RECORD_TYPES["HEATMAP"]):
        # a record without a heat map's name is kept apart under its id, and not returned
        name = names.get(int(record.base_rec.id), "")
        module = name[len(HEATMAP_PREFIX):] if name.startswith(HEATMAP_PREFIX) else \
            int(record.base_rec.id)
        nbins, width = int(record.nbins), float(record.bin_width_seconds)
        if layouts.setdefault(module, (nbins, width)) != (nbins, width):
            raise ValueError(f"the {module} heat map's records disagree on their bins "
                             f"({layouts[module]} and {(nbins, width)})")
        size = ffi.sizeof("int64_t") * nbins
        per_rank.setdefault(module, {})[int(record.base_rec.rank)] = {
            op: np.frombuffer(ffi.buffer(bins, size), dtype=np.int64).copy()
            for op, bins in (("read", record.read_bins), ("write", record.write_bins))}
    totals, bins = {}, {}
    for name, ranks in per_rank.items():
        if name not in HEATMAP_MODULES:
            continue
        module = HEATMAP_MODULES[name]
        nbins, width = layouts[name]
        per_op = {op: np.sum([rank[op] for rank in ranks.values()], axis=0, dtype=np.int64)
                  for op in OPS}
        totals[module] = {op: int(values.sum()) for op, values in per_op.items()}
        bins[module] = {"edges": np.linspace(0, nbins * width, nbins + 1), **per_op}
    return totals, bins

"""Read one Darshan log file with PyDarshan: the only module that touches PyDarshan.

PyDarshan's report opens the log and gives its job, names, mount table and HEATMAP records;
the records of the modules asked for are read each once, a record at a time, straight into
numpy arrays through darshan-util's C API as PyDarshan's backend binds it (PyDarshan's own
readers make a dict per record and per traced operation), then into column Tables.

Four behaviours of PyDarshan and darshan-util shape this code:

- A truncated or corrupt region can crash darshan-util or make PyDarshan allocate terabytes
  (see ``log_header``), so the header's region map is checked against the file and every
  region is inflated before PyDarshan opens the file; any exception PyDarshan still raises
  becomes a :class:`LogError`.
- A failed record read looks like the end of the records (darshan-util only prints an
  ``Error:`` line on stderr), so every C call runs under :func:`captured_c_stderr` and any
  error line turns the whole file into a :class:`LogError`.
- Closing a handle on which darshan-util has failed can trip an assertion in
  ``darshan_log_close`` and abort the interpreter, or make it try to flush the handle as if
  written and unlink a file. A failed log's handle is therefore detached from the report and
  never closed (a small leak, on an error path only).
- ``DarshanReport(path)`` with an unreadable path raises from ``__init__``; the report is
  built empty and opened in a second step so that the failure can be handled the same way.
"""

import os
from dataclasses import dataclass, field

import darshan
import numpy as np
from darshan.backend import cffi_backend

from dlio_mpi_analysis.loading.c_stderr import captured_c_stderr
from dlio_mpi_analysis.errors import LogError
from dlio_mpi_analysis.loading.log_header import check_regions
from dlio_mpi_analysis.loading.table import Table
from dlio_mpi_analysis.loading.trace_ops import OP_NAMES

DXT_COLUMNS = ("rank", "id", "op", "offset", "length", "start", "end")
# darshan-util's struct segment_info, one traced operation as a DXT record stores it
SEGMENT = np.dtype([("offset", "<i8"), ("length", "<i8"), ("start", "<f8"), ("end", "<f8")])
OPS = OP_NAMES  # the "op" column: the index of the name (trace_ops)
# darshan-util's record type of each counter module the analysis reads
RECORD_TYPES = {"POSIX": "struct darshan_posix_file *", "STDIO": "struct darshan_stdio_file *",
                "MPI-IO": "struct darshan_mpiio_file *", "H5F": "struct darshan_hdf5_file *",
                "H5D": "struct darshan_hdf5_dataset *"}
# HEATMAP records name their module without the dash that the counter modules use.
HEATMAP_MODULES = {"POSIX": "POSIX", "STDIO": "STDIO", "MPIIO": "MPI-IO"}


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
    report = darshan.DarshanReport()
    failure = None
    try:
        with captured_c_stderr() as stderr:
            contents = _read_open_report(report, path, modules, dxt_modules)
    except RuntimeError as error:  # raised by report.open when darshan-util gives no handle
        failure = error
    except (Exception, MemoryError) as error:  # PyDarshan on records it cannot make sense of
        report.log = None
        detail = " ".join(str(error).split()) or type(error).__name__
        raise LogError(f"{path}: not a readable Darshan log (PyDarshan: "
                       f"{type(error).__name__}: {detail})") from None
    if failure is not None or stderr.errors:
        report.log = None  # never close a handle darshan-util failed on (see module docstring)
        detail = stderr.errors[0].rstrip(".") if stderr.errors else str(failure)
        raise LogError(f"{path}: not a readable Darshan log (darshan-util: {detail})")
    report.__exit__(None, None, None)  # closes the log handle
    return contents


def _read_open_report(report, path, modules, dxt_modules):
    report.open(path, read_all=False)
    job = report.metadata["job"]
    records = {}
    for mod in modules:
        if mod in report.modules:
            records[mod] = _records_frame(report, mod)
    segments = {}
    for mod in dxt_modules:
        if mod in report.modules:
            segments[mod] = _segments_frame(report, mod)
    names = {int(key): name for key, name in report.name_records.items()}
    heatmap_bytes, heatmap_bins = _heatmaps(report)
    return LogContents(
        path=path,
        version=job["log_ver"],
        exe=report.metadata["exe"],
        nprocs=int(job["nprocs"]),
        start_time=job["start_time_sec"] + job["start_time_nsec"] * 1e-9,
        run_time=float(job["run_time"]),
        modules={m: bool(info["partial_flag"]) for m, info in report.modules.items()},
        records=records,
        dxt_segments=segments,
        heatmap_bytes=heatmap_bytes,
        names=names,
        heatmap_bins=heatmap_bins,
        job_id=int(job.get("jobid", 0)),
        hints=str((job.get("metadata") or {}).get("h", "") or ""),
        uid=int(job.get("uid", 0)),
        end_time=job.get("end_time_sec", 0) + job.get("end_time_nsec", 0) * 1e-9,
        library_version=str((job.get("metadata") or {}).get("lib_ver", "") or ""),
        mounts=tuple((str(point), str(kind)) for point, kind in report.data.get("mounts", ())),
    )


def _named_records(report, mod, record_type):
    """Each record of ``mod`` that has a name record (PyDarshan keeps only those), in the log's
    order, as a cffi pointer of ``record_type``, valid until the next one is read.

    Through darshan-util's C API as PyDarshan's backend binds it: PyDarshan's own readers make
    a dict per record (and per DXT operation), which costs most of the time of a log with
    thousands of files or long traces."""
    if not report.name_records_read:
        report.read_name_records()
    named = report.name_records
    ffi, lib = cffi_backend.ffi, cffi_backend.libdutil
    index = cffi_backend.log_get_modules(report.log)[mod]["idx"]
    # darshan-util fills the buffer *buf points to, or allocates one when it is NULL: each
    # record gets a new one, freed once the caller is done with the record
    buf = ffi.new("void **")
    while lib.darshan_log_get_record(report.log["handle"], index, buf) >= 1:
        try:
            record = ffi.cast(record_type, buf[0])
            if int(record.base_rec.id) in named:
                yield record
        finally:
            lib.darshan_free(buf[0])
            buf[0] = ffi.NULL


def _records_frame(report, mod):
    """One module's records as a Table: id (uint64), rank, then every counter by name."""
    counter_names = cffi_backend.counter_names(mod)
    fcounter_names = cffi_backend.fcounter_names(mod)
    ffi = cffi_backend.ffi
    ids, ranks, counters, fcounters = [], [], [], []
    for record in _named_records(report, mod, RECORD_TYPES[mod]):
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


def _segments_frame(report, mod):
    """A DXT module's traces as one Table with DXT_COLUMNS (op: trace_ops codes), one row
    per operation: per record (see :func:`_named_records`), its reads, then its writes."""
    ffi = cffi_backend.ffi
    header = ffi.sizeof("struct dxt_file_record")
    ranks, ids, codes, traced = [], [], [], []
    for record in _named_records(report, mod, "struct dxt_file_record *"):
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


def _heatmaps(report):
    """HEATMAP byte totals and per-bin sums over ranks, per module (empty without HEATMAP)."""
    if "HEATMAP" not in report.modules:
        return {}, {}
    report.read_all_heatmap_records()
    totals, bins = {}, {}
    for name, heatmap in report.heatmaps.items():
        if name not in HEATMAP_MODULES:
            continue
        module = HEATMAP_MODULES[name]
        per_op = {}
        for op in ("read", "write"):
            frame = heatmap.to_df(ops=[op])
            per_op[op] = frame.to_numpy().sum(axis=0).astype(np.int64)
            edges = np.array([frame.columns[0].left] + [c.right for c in frame.columns]) \
                if len(frame.columns) else np.zeros(1)
        totals[module] = {op: int(values.sum()) for op, values in per_op.items()}
        bins[module] = {"edges": edges, **per_op}
    return totals, bins

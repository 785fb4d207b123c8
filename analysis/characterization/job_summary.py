"""The figures of a Darshan job summary, defined as PyDarshan's ``darshan summary`` and the
darshan-util accumulator beneath it define them: the job, the I/O cost of each module split into
read, write and metadata time, the I/O performance estimate of each module, its files by
category (read-only, write-only, read-write) with their sizes, its most common access sizes,
the top files by bytes and by time, and the mount points and MPI-IO hints the log records.

Every figure is computed from the counters as recorded (PyDarshan does not clip the -1 that an
older format leaves in a counter it did not have), so that it equals the one PyDarshan shows.
"""

from dataclasses import dataclass

import numpy as np

from dlio_mpi_analysis.characterization.group_sums import group_sum, groups_in_order

# modules whose records the darshan-util accumulator turns into a performance estimate and
# file categories (PyDarshan's per-module "Overview" and "File Count Summary")
ACCUMULATED = {"POSIX": "POSIX", "MPI-IO": "MPIIO", "STDIO": "STDIO"}
# modules whose records carry the four most common access sizes (ACCESS1..4 and their COUNT)
ACCESS_COUNTERS = {"POSIX": "POSIX", "MPI-IO": "MPIIO", "H5D": "H5D"}
# modules with read/write/metadata time counters, by counter prefix
TIME_PREFIX = {"POSIX": "POSIX", "MPI-IO": "MPIIO", "STDIO": "STDIO", "H5F": "H5F", "H5D": "H5D"}
BYTE_PREFIX = {"POSIX": "POSIX", "MPI-IO": "MPIIO", "STDIO": "STDIO", "H5D": "H5D"}
COMMON_SIZES = 4  # the rows of PyDarshan's "Common Access Sizes" table
TOP_FILES = 5
CATEGORIES = ("all", "read_only", "write_only", "read_write")
MIB = 1048576.0


@dataclass
class JobInfo:
    """The job as the runtime recorded it: scheduler job id (else a pid), user id, start and
    end (seconds since the epoch; for a set of logs the earliest start and the latest end),
    the Darshan library versions that wrote the logs and the log format versions."""

    job_id: int
    uid: int
    start_time: float
    end_time: float
    darshan_versions: list
    log_versions: list


@dataclass
class IOCost:
    """Seconds per process spent in a module's read, write and metadata calls: each time
    counter summed over all records (a record reduced over all ranks holds their sum) and
    divided by the process count (PyDarshan's "I/O Cost" bars); ``*_share`` over the run time
    (None when it is 0)."""

    read: float
    write: float
    meta: float
    read_share: float | None
    write_share: float | None
    meta_share: float | None


@dataclass
class PerformanceEstimate:
    """The I/O performance estimate of one module (PyDarshan's "I/O performance estimate"):
    ``mib_per_s`` = ``bytes`` / 2^20 / ``time``, 0 when ``time`` is 0. ``bytes``: read +
    written over all records. ``time``: ``unique_time`` + ``shared_time``, where
    ``unique_time`` is the largest read + write + metadata time that one rank spent on the
    records of its own (``slowest_rank``, whose read + write and metadata parts are
    ``unique_rw_time`` and ``unique_meta_time``), and ``shared_time`` the sum, over the records
    reduced over all ranks, of the slowest rank's time on that file. In a one-process log the
    loader gives such a record that process's rank, so its time is the rank's own: ``time``
    and the estimate are the same, the split between unique and shared is not."""

    mib_per_s: float
    bytes: int
    time: float
    unique_time: float
    unique_rw_time: float
    unique_meta_time: float
    slowest_rank: int | None
    shared_time: float


@dataclass
class FileCategory:
    """The files of one category, one file per record id over a module's records: ``files``,
    ``bytes_read`` and ``bytes_written`` summed over them, the largest of one file
    (``max_bytes_read``, ``max_bytes_written``), and their sizes estimated from the largest
    offset accessed: ``max_size`` (largest offset + 1) and ``mean_size`` ((sum of largest
    offsets + files) / files), None where the module records no offsets (MPI-IO)."""

    files: int
    bytes_read: int
    bytes_written: int
    max_bytes_read: int
    max_bytes_written: int
    max_size: int | None
    mean_size: float | None


@dataclass
class TopFile:
    """One file of a module: its name, bytes read and written and read + write + metadata
    seconds summed over its records."""

    name: str
    bytes_read: int
    bytes_written: int
    io_time: float


@dataclass
class ModuleSummary:
    """The summary figures of one module. ``file_categories``: "all", "read_only" (bytes read,
    none written), "write_only", "read_write" -> :class:`FileCategory` (files that moved no
    byte are in "all" only). ``common_access_sizes``: up to four [size in bytes, accesses]
    pairs, most accesses first (equal counts by size), from the four most common sizes each
    record keeps (ACCESS1..4), summed by size over the records; for MPI-IO and H5D the size of
    the whole access. ``top_files_by_bytes`` / ``top_files_by_time``: up to five
    :class:`TopFile`. Figures the module does not record are None or empty."""

    io_cost: IOCost | None
    performance: PerformanceEstimate | None
    file_categories: dict
    common_access_sizes: list
    top_files_by_bytes: list
    top_files_by_time: list


@dataclass
class MountUse:
    """The bytes that a job's POSIX and STDIO records moved on one recorded mount point (the
    longest one holding the file's path)."""

    mount_point: str
    fs_type: str
    files: int
    bytes_read: int
    bytes_written: int


def job_info(job):
    """The :class:`JobInfo` of a loaded job."""
    end = job.end_time or (job.start_time + job.run_time)
    return JobInfo(job_id=int(job.job_id), uid=int(job.uid), start_time=float(job.start_time),
                   end_time=float(end), darshan_versions=list(job.library_versions),
                   log_versions=list(job.log_versions))


def module_summaries(records, names, nprocs, run_time):
    """Module -> :class:`ModuleSummary` for every module of ``records`` with records."""
    return {name: module_summary(name, frame, names, nprocs, run_time)
            for name, frame in records.items() if name in TIME_PREFIX and not frame.empty}


def module_summary(module, frame, names, nprocs, run_time):
    """The :class:`ModuleSummary` of one module's records."""
    performance, categories = None, {}
    if module in ACCUMULATED:
        performance = performance_estimate(ACCUMULATED[module], frame, nprocs)
        categories = file_categories(ACCUMULATED[module], frame, module != "MPI-IO")
    by_bytes, by_time = top_files(module, frame, names)
    return ModuleSummary(
        io_cost=io_cost(TIME_PREFIX[module], frame, nprocs, run_time),
        performance=performance,
        file_categories=categories,
        common_access_sizes=common_access_sizes(ACCESS_COUNTERS[module], frame)
        if module in ACCESS_COUNTERS else [],
        top_files_by_bytes=by_bytes,
        top_files_by_time=by_time,
    )


def io_cost(prefix, frame, nprocs, run_time):
    """The :class:`IOCost` of a module whose time counters start with ``prefix``."""
    def per_process(kind):
        column = f"{prefix}_F_{kind}_TIME"
        return float(frame[column].sum()) / nprocs if column in frame and nprocs else 0.0

    read, write, meta = (per_process(kind) for kind in ("READ", "WRITE", "META"))
    share = (lambda t: t / run_time) if run_time > 0 else (lambda t: None)
    return IOCost(read=read, write=write, meta=meta, read_share=share(read),
                  write_share=share(write), meta_share=share(meta))


def performance_estimate(prefix, frame, nprocs):
    """The :class:`PerformanceEstimate` of a module's records."""
    ranks = frame["rank"]
    total = int(frame[f"{prefix}_BYTES_READ"].sum() + frame[f"{prefix}_BYTES_WRITTEN"].sum())
    reduced = ranks < 0
    shared = float(frame[f"{prefix}_F_SLOWEST_RANK_TIME"][reduced].sum())
    rw = frame[f"{prefix}_F_READ_TIME"] + frame[f"{prefix}_F_WRITE_TIME"]
    meta = frame[f"{prefix}_F_META_TIME"]
    own = ~reduced
    size = max(nprocs, int(ranks.max()) + 1 if len(ranks) else 0)
    rank_rw = np.bincount(ranks[own], weights=rw[own], minlength=size)
    rank_meta = np.bincount(ranks[own], weights=meta[own], minlength=size)
    rank_total = np.bincount(ranks[own], weights=(rw + meta)[own], minlength=size)
    slowest = int(np.argmax(rank_total)) if size and rank_total.max() > 0 else None
    unique = float(rank_total[slowest]) if slowest is not None else 0.0
    time = unique + shared
    return PerformanceEstimate(
        mib_per_s=total / MIB / time if time else 0.0,
        bytes=total,
        time=time,
        unique_time=unique,
        unique_rw_time=float(rank_rw[slowest]) if slowest is not None else 0.0,
        unique_meta_time=float(rank_meta[slowest]) if slowest is not None else 0.0,
        slowest_rank=slowest,
        shared_time=shared,
    )


def file_categories(prefix, frame, has_offsets):
    """Category -> :class:`FileCategory` over a module's records (see ModuleSummary)."""
    ids = frame["id"]
    files, first = np.unique(ids, return_index=True)
    order = np.argsort(first)  # files in the order of their first record
    files = files[order]
    index = {int(f): i for i, f in enumerate(files.tolist())}
    of = np.array([index[int(i)] for i in ids.tolist()], dtype=np.int64)
    read = np.bincount(of, weights=frame[f"{prefix}_BYTES_READ"],
                       minlength=len(files)).astype(np.int64)
    written = np.bincount(of, weights=frame[f"{prefix}_BYTES_WRITTEN"],
                          minlength=len(files)).astype(np.int64)
    offsets = None
    if has_offsets:
        record_offsets = np.maximum(frame[f"{prefix}_MAX_BYTE_READ"],
                                    frame[f"{prefix}_MAX_BYTE_WRITTEN"])
        offsets = np.zeros(len(files), dtype=np.int64)
        np.maximum.at(offsets, of, record_offsets)
        # a record with no offset at all leaves its file's offset unknown (the accumulator's -1)
        unknown = np.zeros(len(files), dtype=bool)
        unknown[of[record_offsets == -1]] = True
        offsets = np.where(unknown, -1, offsets)
    members = {"all": np.ones(len(files), dtype=bool),
               "read_only": (read > 0) & (written == 0),
               "write_only": (written > 0) & (read == 0),
               "read_write": (read > 0) & (written > 0)}
    categories = {}
    for category in CATEGORIES:
        chosen = members[category]
        n = int(chosen.sum())
        known = offsets is not None and n and not (offsets[chosen] < 0).any()
        categories[category] = FileCategory(
            files=n,
            bytes_read=int(read[chosen].sum()),
            bytes_written=int(written[chosen].sum()),
            max_bytes_read=int(read[chosen].max()) if n else 0,
            max_bytes_written=int(written[chosen].max()) if n else 0,
            max_size=int(offsets[chosen].max()) + 1 if known else None,
            mean_size=(int(offsets[chosen].sum()) + n) / n if known else None,
        )
    return categories


def common_access_sizes(prefix, frame, rows=COMMON_SIZES):
    """Up to ``rows`` [size, accesses] pairs of the module's most common access sizes."""
    sizes = np.concatenate([frame[f"{prefix}_ACCESS{i}_ACCESS"] for i in range(1, 5)])
    counts = np.concatenate([frame[f"{prefix}_ACCESS{i}_COUNT"] for i in range(1, 5)])
    keep = counts > 0
    if not keep.any():
        return []
    unique, where = np.unique(sizes[keep], return_inverse=True)
    summed = np.bincount(where, weights=counts[keep]).astype(np.int64)
    order = np.lexsort((unique, -summed))[:rows]
    return [[int(unique[i]), int(summed[i])] for i in order]


def top_files(module, frame, names, rows=TOP_FILES):
    """(by bytes read + written, by read + write + metadata time): up to ``rows``
    :class:`TopFile` each, summed over a file's records; files without bytes or time are
    left out of the ranking they would close."""
    prefix = TIME_PREFIX[module]
    byte_prefix = BYTE_PREFIX.get(module)
    zeros = np.zeros(len(frame), np.int64)
    read = np.maximum(frame[f"{byte_prefix}_BYTES_READ"], 0) if byte_prefix else zeros
    written = np.maximum(frame[f"{byte_prefix}_BYTES_WRITTEN"], 0) if byte_prefix else zeros
    times = [f"{prefix}_F_{kind}_TIME" for kind in ("READ", "WRITE", "META")
             if f"{prefix}_F_{kind}_TIME" in frame]
    time = np.maximum(np.column_stack([frame[t] for t in times]), 0.0).sum(axis=1) \
        if times and len(frame) else np.zeros(len(frame))
    files, of = groups_in_order(frame["id"])
    summed = {"read": group_sum(of, read, len(files)),
              "written": group_sum(of, written, len(files)),
              "time": group_sum(of, time, len(files))}
    summed["moved"] = summed["read"] + summed["written"]

    def ranked(column):
        chosen = np.flatnonzero(summed[column] > 0)
        chosen = chosen[np.argsort(-summed[column][chosen], kind="stable")][:rows]
        return [TopFile(name=names.get(int(files[i]), str(int(files[i]))),
                        bytes_read=int(summed["read"][i]),
                        bytes_written=int(summed["written"][i]),
                        io_time=float(summed["time"][i]))
                for i in chosen]

    return (ranked("moved") if byte_prefix else []), ranked("time")


def mount_use(records, names, mounts):
    """:class:`MountUse` of every recorded mount point that holds a file of the POSIX and
    STDIO records, most bytes first; empty when the log records no mount table."""
    if not mounts:
        return []
    # longest mount point first, so that a file counts on the deepest one holding it
    table = sorted(mounts, key=lambda m: len(m[0]), reverse=True)
    totals = {}
    for module in ("POSIX", "STDIO"):
        frame = records.get(module)
        if frame is None or frame.empty:
            continue
        read = np.maximum(frame[f"{module}_BYTES_READ"], 0)
        written = np.maximum(frame[f"{module}_BYTES_WRITTEN"], 0)
        for i, r, w in zip(frame["id"].tolist(), read.tolist(), written.tolist()):
            mount = _mount_of(names.get(int(i), ""), table)
            if mount is None:
                continue
            entry = totals.setdefault(mount, [set(), 0, 0])
            entry[0].add(int(i))
            entry[1] += int(r)
            entry[2] += int(w)
    uses = [MountUse(mount_point=point, fs_type=kind, files=len(ids), bytes_read=r,
                     bytes_written=w) for (point, kind), (ids, r, w) in totals.items()]
    return sorted(uses, key=lambda u: (-(u.bytes_read + u.bytes_written), u.mount_point))


def _mount_of(path, table):
    if not path.startswith("/"):
        return None
    for point, kind in table:
        if path == point or path.startswith(point.rstrip("/") + "/"):
            return point, kind
    return None


def mpiio_hints(job, records):
    """What the log records of MPI-IO hints: ``set_hints``, the times the job passed hints to
    MPI-IO (MPIIO_HINTS summed; Darshan keeps no hint values of the job's own), and
    ``log_hints``, the hints the Darshan runtime wrote the log with. Empty when neither."""
    hints = {}
    frame = records.get("MPI-IO")
    if frame is not None and not frame.empty and "MPIIO_HINTS" in frame:
        hints["set_hints"] = int(np.maximum(frame["MPIIO_HINTS"], 0).sum())
    if job.hints:
        hints["log_hints"] = list(job.hints)
    return hints

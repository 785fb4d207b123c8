"""Load one Darshan log, or the per-process logs of one job, as a :class:`DarshanJob`.

``load(path)`` reads a single log. ``load(directory)`` or ``load([path, ...])`` reads a set of
logs written by the processes of one job (Darshan in non-MPI mode writes one log per process)
and joins them into one job, as if one MPI job of all their processes had written one log. A
set holding the logs of several jobs is refused, naming them, unless ``merge_jobs=True``.
I/O that Darshan counted under a file through a reused descriptor number is left out of the
file's POSIX records and trace, with a note (:mod:`dlio_mpi_analysis.loading.reused_descriptors`).
"""

import dataclasses
import glob
import os
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from dlio_mpi_analysis.loading import reused_descriptors
from dlio_mpi_analysis.characterization.counters import SPECS
from dlio_mpi_analysis.errors import HeatmapMismatchWarning, LogError, PartialLogWarning
from dlio_mpi_analysis.loading.logfile import read_log
from dlio_mpi_analysis.loading.process_roles import MAIN, WORKER_ROLES, roles_of
from dlio_mpi_analysis.loading.table import concat

CHARACTERIZED_MODULES = ("POSIX", "STDIO", "MPI-IO", "H5F", "H5D")
DXT_MODULES = ("DXT_POSIX", "DXT_MPIIO")
# Relative difference between HEATMAP bytes and a module's byte counters that gets a warning.
HEATMAP_TOLERANCE = 0.01


@dataclass(frozen=True)
class DarshanJob:
    """The Darshan data of one job, from one log or from the per-process logs of a set.

    Ranks are global: the ranks of the i-th log of a set (logs in path order) are shifted by
    the process counts of the logs before it. A data loader's worker, forked (told by Darshan's
    log names: a child keeps its parent's job id) or spawned (told by its command line and
    lifetime), takes its main process's rank and is listed in ``workers`` (DXT segments then
    carry a ``process`` column, the index of the log that traced them); with such workers,
    one-process logs of no role in the job (the launcher's helpers; multiprocessing's resource
    trackers without I/O) are no process of the job (:mod:`dlio_mpi_analysis.loading.process_roles`; the count
    per role is ``process_roles``). Rank -1 marks a record that Darshan reduced over
    all processes of a log (a file every process opened); in a one-process log such a record
    belongs to that process and carries its rank instead.

    Times: ``start_time`` is the earliest log start (seconds since the epoch); ``run_time``
    runs from there to the latest log end; DXT ``start``/``end`` are seconds since
    ``start_time``, and so are the counters' timestamps (``*_F_*_TIMESTAMP``; 0 where the
    kind of call never happened).
    """

    paths: tuple
    exe: str
    nprocs: int
    start_time: float
    run_time: float
    log_versions: tuple
    modules: tuple  # every module with data in any log, counter modules or not
    partial_modules: tuple  # modules marked partial in at least one log
    records: dict  # module -> Table (loading.table): id, rank, then counters and fcounters
    # DXT module -> Table of logfile.DXT_COLUMNS (op: loading.trace_ops codes); None if not read
    dxt_segments: dict | None
    heatmap_bytes: dict  # module -> {"read": bytes, "write": bytes}, from HEATMAP records
    # the messages of the warnings emitted while loading, then the loader's notes (I/O of a
    # reused descriptor left out, dlio_mpi_analysis.loading.reused_descriptors)
    warnings: tuple
    names: dict = field(default_factory=dict)  # record id -> file name (as the log has it)
    # module -> {"edges": bin edges (s since start_time), "read": bytes per bin, "write": ...}
    heatmap_bins: dict = field(default_factory=dict)
    source: str = "darshan"  # "darshan", or "oplog" for a dlio_mpi run's own op logs
    # file record id -> the lowest layer the source observed of it, "MPI-IO" or "HDF5" (none:
    # "POSIX", as in every Darshan log; dlio_mpi_analysis.characterization.layers)
    layers: dict = field(default_factory=dict)
    # rank -> [(start, end) of each forked worker process of that rank (s since start_time)]:
    # a data loader's workers, each with a non-MPI log of its own, read as threads of the rank
    workers: dict = field(default_factory=dict)
    # the MPI-IO hints each log records (logfile.LogContents.hints), one entry per distinct value
    hints: tuple = ()
    # the scheduler's job id (else a pid) and the user id of the first log, the latest log end
    # (seconds since the epoch; 0 when unknown), the Darshan library versions that wrote the
    # logs, and the union of their mount tables as (mount point, file system type)
    job_id: int = 0
    uid: int = 0
    end_time: float = 0.0
    library_versions: tuple = ()
    mounts: tuple = ()
    # role -> processes of the set in it (dlio_mpi_analysis.loading.process_roles: main, forked worker, spawned
    # worker, resource tracker, helper); empty for a job that is not a set of per-process logs
    process_roles: dict = field(default_factory=dict)

    def frames(self):
        """The job with its records and traces as pandas DataFrames (the traces' op as a
        categorical of its names), for the code that reads them with pandas."""
        from dlio_mpi_analysis.loading.trace_ops import segments_frame

        return dataclasses.replace(
            self, records={m: t.frame() for m, t in self.records.items()},
            dxt_segments=None if self.dxt_segments is None else
            {m: segments_frame(t) for m, t in self.dxt_segments.items()})


def load(source, *, dxt=False, modules=CHARACTERIZED_MODULES, merge_jobs=False):
    """Load a Darshan log, a directory of one job's logs, or a list of one job's log paths.

    Reads the counter records of ``modules`` (those the logs hold) and, with ``dxt=True``,
    the DXT_POSIX and DXT_MPIIO traces. Warns (PartialLogWarning) for every module a log marks
    partial and (HeatmapMismatchWarning) when a log's HEATMAP byte totals differ from its
    POSIX, STDIO or MPI-IO byte counters by more than 1%. Raises LogError for a file that
    cannot be read, and for a set of logs of several jobs (see :func:`jobs_of`) unless
    ``merge_jobs=True``, which joins them as if they were one.

    Then leaves out of the POSIX records (and traces) the I/O that Darshan counted under a
    file through a reused descriptor number, where a DXT trace shows it (read for that even
    without ``dxt=True``), and notes it (:mod:`dlio_mpi_analysis.loading.reused_descriptors`; the notes follow
    the warnings' messages in ``DarshanJob.warnings``, without a warning).
    """
    paths = log_paths(source)
    logs = [read_log(path, modules, DXT_MODULES if dxt else ()) for path in paths]
    if not merge_jobs:
        _refuse_several_jobs(source, logs)
    messages = []
    for log in logs:
        messages += [(PartialLogWarning, message) for message in _partial_messages(log)]
        messages += [(HeatmapMismatchWarning, message) for message in _heatmap_messages(log)]
    for category, message in messages:
        warnings.warn(message, category, stacklevel=2)
    notes = reused_descriptors.clean(logs, _posix_trace)
    return _combine(logs, dxt, tuple(message for _, message in messages) + tuple(notes))


def _posix_trace(log):
    """The DXT_POSIX trace of a log read without its traces (None if it has none)."""
    return read_log(log.path, (), ("DXT_POSIX",)).dxt_segments.get("DXT_POSIX")


def log_paths(source):
    """The log files ``source`` names: one file, a directory's ``*.darshan`` files (sorted),
    or a list of paths in the order given."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not os.path.isdir(path):
            return [path]
        paths = sorted(glob.glob(os.path.join(path, "*.darshan")))
        if not paths:
            raise LogError(f"{path}: directory holds no *.darshan files")
        return paths
    paths = [os.fspath(p) for p in source]
    if not paths:
        raise LogError("no Darshan log given: the list of paths is empty")
    return paths


# how far apart in time (s) two logs of one job may lie: the runtime's times are whole seconds
# in older logs
JOB_GAP_S = 2.0


def jobs_of(logs):
    """The logs of a set grouped by job (lists of indexes, in start order). An MPI job writes
    one log for all its processes, so two logs of several processes are two jobs; per-process
    logs (non-MPI mode, forked workers, the launcher's helpers) of one job overlap in time, so
    a log that starts after every earlier one ended starts another job."""
    jobs, end, multi = [], None, False
    for i in sorted(range(len(logs)), key=lambda i: logs[i].start_time):
        log = logs[i]
        if not jobs or log.start_time > end + JOB_GAP_S or (log.nprocs > 1 and multi):
            jobs.append([])
            end, multi = log.start_time, False
        jobs[-1].append(i)
        end = max(end, log.start_time + log.run_time)
        multi = multi or log.nprocs > 1
    return jobs


def _job_name(logs, job):
    """A job as a user can find it: its job id, program, start time (UTC) and first log."""
    log = next((logs[i] for i in job if logs[i].nprocs > 1), logs[job[0]])
    words = log.exe.split()
    exe = os.path.basename(words[0]) if words else "?"
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(log.start_time))
    more = f" and {len(job) - 1} more log{'s' if len(job) > 2 else ''}" if len(job) > 1 else ""
    return (f"job {log.job_id} ({exe}, {log.nprocs} process{'es' if log.nprocs > 1 else ''}, "
            f"started {started} UTC: {os.path.basename(log.path)}{more})")


def _refuse_several_jobs(source, logs):
    jobs = jobs_of(logs)
    if len(jobs) < 2:
        return
    where = (f"{os.fspath(source)} holds" if isinstance(source, (str, os.PathLike))
             else f"the {len(logs)} logs given are")
    names = "; ".join(_job_name(logs, job) for job in jobs[:4])
    more = f"; and {len(jobs) - 4} more" if len(jobs) > 4 else ""
    raise LogError(f"{where} the logs of {len(jobs)} jobs, not one: {names}{more}: "
                   "give one job's logs, or --merge-jobs to read them as one job")


def _partial_messages(log):
    return [f"{log.path}: module {mod} is marked partial: the Darshan runtime ran out of "
            f"memory for its records, so its counts and traces are incomplete"
            for mod, partial in log.modules.items() if partial]


def _heatmap_messages(log):
    """Compare HEATMAP byte totals with the byte counters of the same module."""
    messages = []
    for mod, heatmap in log.heatmap_bytes.items():
        frame = log.records.get(mod)
        if frame is None:
            continue
        spec = SPECS[mod]
        for op, counter in (("read", spec.bytes_read), ("write", spec.bytes_written)):
            counted = int(np.maximum(frame[counter], 0).sum())
            binned = heatmap[op]
            if abs(binned - counted) > HEATMAP_TOLERANCE * max(binned, counted):
                messages.append(
                    f"{log.path}: HEATMAP {mod} {op} bytes ({binned}) differ from the {mod} "
                    f"counters ({counted}) by more than {HEATMAP_TOLERANCE:.0%}: records were "
                    f"probably lost (e.g. those of forked worker processes)")
    return messages


def _combine(logs, dxt, messages):
    job_start = min(log.start_time for log in logs)
    roles = roles_of(logs)
    parents, keep = roles.parent, roles.kept
    first_ranks, workers, nprocs = [None] * len(logs), {}, 0
    for i, log in enumerate(logs):      # ranks in log order, for the processes with one
        if parents[i] is None:
            first_ranks[i] = nprocs
            nprocs += log.nprocs if keep[i] else 0
    for i, log in enumerate(logs):
        root = i
        while parents[root] is not None:
            root = parents[root]
        if root != i:       # a worker takes its root process's rank
            first_ranks[i] = first_ranks[root]
            if roles.role[i] in WORKER_ROLES:
                workers.setdefault(int(first_ranks[i]), []).append(
                    (log.start_time - job_start, log.start_time - job_start + log.run_time))
    records, segments = {}, {}
    for log, first_rank, kept in zip(logs, first_ranks, keep):
        if not kept:
            continue
        offset = log.start_time - job_start
        for mod, frame in log.records.items():
            frame["rank"] = _global_ranks(frame["rank"], log.nprocs, first_rank)
            if offset:
                # a counter's time is its own log's: the job's, as the DXT segments' (0
                # is no time: the kind of call never happened)
                for column in frame.columns:
                    if column.endswith("_TIMESTAMP"):
                        value = np.asarray(frame[column], np.float64)
                        frame[column] = np.where(value > 0, value + offset, value)
            records.setdefault(mod, []).append(frame)
        for mod, frame in log.dxt_segments.items():
            frame["rank"] = _global_ranks(frame["rank"], log.nprocs, first_rank)
            if workers:     # which process of its rank made each call
                frame["process"] = logs.index(log)
            frame["start"] += offset
            frame["end"] += offset
            segments.setdefault(mod, []).append(frame)
    heatmap_bytes, names = {}, {}
    for log in logs:
        names.update(log.names)
        for mod, totals in log.heatmap_bytes.items():
            summed = heatmap_bytes.setdefault(mod, {"read": 0, "write": 0})
            for op, value in totals.items():
                summed[op] += value
    return DarshanJob(
        paths=tuple(log.path for log in logs),
        exe=next((log.exe for log, role in zip(logs, roles.role) if role == MAIN),
                 next(log.exe for log, kept in zip(logs, keep) if kept)),
        nprocs=nprocs,
        start_time=job_start,
        run_time=max(log.start_time - job_start + log.run_time for log in logs),
        log_versions=tuple(dict.fromkeys(log.version for log in logs)),
        modules=tuple(dict.fromkeys(m for log in logs for m in log.modules)),
        partial_modules=tuple(dict.fromkeys(
            m for log in logs for m, partial in log.modules.items() if partial)),
        records={mod: _concat(frames) for mod, frames in records.items()},
        dxt_segments={mod: _concat(frames) for mod, frames in segments.items()} if dxt else None,
        heatmap_bytes=heatmap_bytes,
        warnings=messages,
        names=names,
        heatmap_bins=_combine_heatmaps(logs, job_start),
        workers=workers,
        hints=tuple(dict.fromkeys(log.hints for log in logs if log.hints)),
        job_id=next((log.job_id for log, kept in zip(logs, keep) if kept), 0),
        uid=next((log.uid for log, kept in zip(logs, keep) if kept), 0),
        end_time=max(log.end_time for log in logs),
        library_versions=tuple(dict.fromkeys(
            log.library_version for log in logs if log.library_version)),
        mounts=tuple(dict.fromkeys(m for log in logs for m in log.mounts)),
        process_roles=roles.counts() if len(logs) > 1 else {},
    )


def _combine_heatmaps(logs, job_start):
    """Per-bin HEATMAP sums of a set of logs: the first log's bins per module, shifted to the
    job's start (a set of per-process logs with their own bins keeps the first log's only)."""
    bins = {}
    for log in logs:
        for mod, heatmap in log.heatmap_bins.items():
            if mod not in bins:
                bins[mod] = {**heatmap, "edges": heatmap["edges"] + (log.start_time - job_start)}
    return bins


def _global_ranks(ranks, nprocs, first_rank):
    """Shift a log's ranks to job-global ones; -1 stays -1 unless the log has one process."""
    if nprocs == 1:
        return np.full_like(ranks, first_rank)
    return np.where(ranks >= 0, ranks + first_rank, -1)


def _concat(tables):
    return concat(tables)

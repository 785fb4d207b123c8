"""The I/O characterization of a job from its Darshan data (WORKLOADS.md, "Metrics").

``characterize(path)`` (or a directory, a list of paths, or a loaded
:class:`~dlio_mpi_analysis.loading.loader.DarshanJob`) returns a :class:`Characterization`: job totals, the
metrics of every counter module (defined in ``module_metrics``) and, when DXT traces were
read, of every trace (defined in ``dxt_metrics``). A dlio_mpi run directory (summary.json and
the op logs of ``io.keep_oplog=true``) is characterized from its op logs, turned into the same
records and traces by :mod:`dlio_mpi_analysis.loading.oplog`.
"""

import dataclasses
import os
import warnings
from dataclasses import dataclass, field

import numpy as np

from dlio_mpi_analysis.characterization.counters import SPECS, alone_collectives, counter_sum
from dlio_mpi_analysis.characterization.data_io import DataFigures, data_figures, role_totals
from dlio_mpi_analysis.characterization.dxt_metrics import dxt_metrics
from dlio_mpi_analysis.errors import InvalidCounterWarning
from dlio_mpi_analysis.characterization.file_roles import (DATA_IO, file_roles, keep_roles,
                                                            program_files)
from dlio_mpi_analysis.characterization.files import file_format, is_tool_file
from dlio_mpi_analysis.characterization.job_summary import JobInfo, job_info, module_summaries, mount_use, mpiio_hints
from dlio_mpi_analysis.characterization.layers import parts_at
from dlio_mpi_analysis.loading.loader import DarshanJob, load
from dlio_mpi_analysis.loading.renamed_files import join_renamed
from dlio_mpi_analysis.characterization.module_metrics import (Files, IOTime, file_counts, io_time, module_metrics,
                             negative_time_messages)

# Modules whose bytes and time reach the file system directly: the job totals add these only,
# since MPI-IO and HDF5 go through POSIX and adding them would count the same bytes twice; a
# file of a source that did not observe its POSIX layer counts at the layer it observed
# (dlio_mpi_analysis.characterization.layers).
TOTALS_BASIS = ("POSIX", "STDIO")
# Characterization fields that are not part of its dict: the records and traces it was made of
INTERNAL_FIELDS = ("dxt_segments", "records", "names", "layers", "roles")
# Interfaces that are recognized by their module's presence in the log, without reading it.
PRESENCE_INTERFACES = {"PNETCDF_FILE": "PnetCDF", "PNETCDF_VAR": "PnetCDF",
                       "DFS": "DAOS DFS", "DAOS": "DAOS"}


@dataclass
class JobTotals:
    """Job-level totals over the modules of ``basis`` (POSIX and STDIO, those present; MPI-IO
    or H5D for the files of a source that observed them no lower, see :mod:`dlio_mpi_analysis.characterization.layers`).

    ``io_time`` combines the modules' records as :class:`~dlio_mpi_analysis.characterization.module_metrics.IOTime`
    defines it, so a rank's POSIX and STDIO time add up before the slowest rank is taken.
    """

    basis: list
    bytes_read: int
    bytes_written: int
    files: Files
    io_time: IOTime


@dataclass
class Characterization:
    """The characterization of one job.

    ``no_io``: no characterized module read or wrote anything (no operation, no byte).
    ``interfaces``: "POSIX" and "STDIO" when their modules hold records; "MPI-IO independent"
    and/or "MPI-IO collective" by the MPI-IO operations counted (a collective call on a file
    one process opened alone, on MPI_COMM_SELF, counted independent; "MPI-IO" alone when it only
    opened files; for files a source observed from HDF5 down only, the MPI-IO of libhdf5's
    driver, collective by H5D_USE_MPIIO_COLLECTIVE); "HDF5" when H5F or H5D hold records;
    "PnetCDF", "DAOS DFS", "DAOS" when the log has those modules. ``warnings`` repeats the
    messages of the warnings emitted while loading and characterizing, and the notes on what
    the counters leave out (a reused descriptor's I/O, the tools' own files, mmap reads). ``dxt_segments`` (DXT
    module -> DataFrame of operations) is only in :meth:`tables`, not in :meth:`to_dict`, nor
    are ``records`` (module -> the records characterized, the tools' own files left out),
    ``names`` and ``layers`` (the source's, see :mod:`dlio_mpi_analysis.characterization.layers`), which compare uses.
    ``source``: "darshan" for Darshan logs, "oplog" for a dlio_mpi run's op logs.
    ``data``: the same figures over the job's data and checkpoint files alone
    (:class:`DataFigures`). ``file_roles``: role (data, checkpoint, stream, mpi, other; see
    :mod:`dlio_mpi_analysis.characterization.file_roles`) -> files, bytes_read, bytes_written over the totals' basis, so
    that what is not data (a framework's config, log and output writes) is reported apart.
    ``roles`` (record id -> role) is only an attribute, not in :meth:`to_dict`.
    ``job``: the job as the runtime recorded it (:class:`~dlio_mpi_analysis.characterization.job_summary.JobInfo`).
    ``summary``: module -> :class:`~dlio_mpi_analysis.characterization.job_summary.ModuleSummary`, the figures of
    PyDarshan's job summary (I/O cost, performance estimate, files by category, common access
    sizes) and the top files, over the records characterized. ``mounts``: the recorded mount
    points holding the job's POSIX and STDIO files, with their bytes
    (:class:`~dlio_mpi_analysis.characterization.job_summary.MountUse`); ``mpiio_hints``: what the log records of MPI-IO
    hints (:func:`~dlio_mpi_analysis.characterization.job_summary.mpiio_hints`).
    ``process_roles``: for a set of per-process logs, role -> processes (main, forked worker,
    spawned worker, resource tracker, helper; :mod:`dlio_mpi_analysis.loading.process_roles`): ``nprocs``
    counts the main processes, the ranks.
    Interfaces count the data and checkpoint files' records (of every file but the standard
    streams and the MPI library's own when the job has none).
    ``data_formats``: format (by file name, "hdf5" also
    for files with H5F records; see :mod:`dlio_mpi_analysis.characterization.files`) -> files, bytes_read,
    bytes_written, over the files of the totals' basis that moved bytes and are data or
    checkpoints.
    """

    logs: list
    exe: str
    nprocs: int
    run_time: float
    log_versions: list
    modules_in_log: list
    interfaces: list
    no_io: bool
    totals: JobTotals
    modules: dict
    dxt: dict
    partial_modules: list
    warnings: list
    dxt_segments: dict = field(default_factory=dict, repr=False)
    source: str = "darshan"
    data_formats: dict = field(default_factory=dict)
    records: dict = field(default_factory=dict, repr=False)
    names: dict = field(default_factory=dict, repr=False)
    layers: dict = field(default_factory=dict, repr=False)
    data: DataFigures | None = None
    file_roles: dict = field(default_factory=dict)
    roles: dict = field(default_factory=dict, repr=False)
    job: JobInfo | None = None
    summary: dict = field(default_factory=dict)
    mounts: list = field(default_factory=list)
    mpiio_hints: dict = field(default_factory=dict)
    process_roles: dict = field(default_factory=dict)

    def to_dict(self):
        """Everything but the DXT segments and the records, as plain JSON-serializable Python
        types."""
        return {f.name: _plain(getattr(self, f.name))
                for f in dataclasses.fields(self) if f.name not in INTERNAL_FIELDS}

    def tables(self):
        """Tidy DataFrames: "summary" (metric, value), "modules" (module, metric, value),
        "module_summary" (module, metric, value),
        "size_histograms" (module, op, bucket, operations), "dxt" (module, metric, value),
        "dxt_timeline" (module, rank, ...) and "dxt_segments" (module, rank, op, ...)."""
        import pandas as pd

        from dlio_mpi_analysis.loading.trace_ops import segments_frame

        summary = {key: value for key, value in self.to_dict().items()
                   if key not in ("modules", "dxt", "data", "summary")}
        histograms = [
            {"module": name, "op": op, "bucket": bucket, "operations": count}
            for name, metrics in self.modules.items()
            for op, sizes in (("read", metrics.read_sizes), ("write", metrics.write_sizes))
            if sizes is not None
            for bucket, count in sizes.histogram.items()]
        timeline = [{"module": name, **dataclasses.asdict(span)}
                    for name, metrics in self.dxt.items() for span in metrics.timeline]
        segments = [segments_frame(frame).assign(module=name)
                    for name, frame in self.dxt_segments.items()]
        return {
            "summary": pd.DataFrame(_flatten(summary), columns=["metric", "value"]),
            "modules": _long_table(self.modules),
            "module_summary": _long_table(self.summary, skip=()),
            "size_histograms": pd.DataFrame(
                histograms, columns=["module", "op", "bucket", "operations"]),
            "dxt": _long_table(self.dxt, skip=("timeline",)),
            "dxt_timeline": pd.DataFrame(timeline),
            "dxt_segments": pd.concat(segments, ignore_index=True) if segments
            else pd.DataFrame(),
            "data_modules": _long_table(self.data.modules if self.data else {}),
            "data_dxt": _long_table(self.data.dxt if self.data else {}, skip=("timeline",)),
        }


def load_job(source, *, dxt=False):
    """The DarshanJob of ``source``: a DarshanJob, a dlio_mpi run directory from its op logs
    (traces always included), else :func:`~dlio_mpi_analysis.loading.loader.load` (``dxt=True``
    reads the DXT traces); a file written under a temporary name and renamed to a name the job
    opened is that one file (:mod:`dlio_mpi_analysis.loading.renamed_files`)."""
    from dlio_mpi_analysis.loading.oplog import is_run_dir, load_run

    if isinstance(source, DarshanJob):
        job = source
    elif is_run_dir(source):
        job = load_run(source)
    else:
        job = load(source, dxt=dxt)
    return join_renamed(job)


def characterize(source, *, dxt=False, overview=True):
    """Characterize a job: ``source`` is a DarshanJob, a dlio_mpi run directory, or anything
    :func:`load` accepts (then ``dxt=True`` also reads and characterizes the DXT traces). Warns
    (InvalidCounterWarning) for time counters holding negative values, which count as 0.

    ``overview=False`` leaves out what only a reader of the characterization looks at, not
    the diagnosis rules (dlio_mpi_analysis.diagnosis.diagnose), and costs most of the time of a small log:
    ``interfaces``, ``data``, ``file_roles``, ``job``, ``summary``, ``mounts``,
    ``mpiio_hints`` stay empty and the DXT metrics have no ``timeline``."""
    job = load_job(source, dxt=dxt)
    job, tool_note = _without_tool_files(job)
    records = {name: frame for name, frame in job.records.items() if name in SPECS}
    messages = [f"{', '.join(job.paths)}: {message}"
                for name, frame in records.items()
                for message in negative_time_messages(SPECS[name], frame)]
    for message in messages:
        warnings.warn(message, InvalidCounterWarning, stacklevel=2)
    modules = {name: module_metrics(SPECS[name], frame, job.nprocs, job.run_time)
               for name, frame in records.items()}
    traces = {name: dxt_metrics(name, frame, job.run_time, name in job.partial_modules,
                                timeline=overview)
              for name, frame in (job.dxt_segments or {}).items()}
    basis, time_basis = parts_at(records, job.names, job.layers)
    roles = file_roles(job.names, records, program_files(job.exe))
    return Characterization(
        logs=list(job.paths),
        exe=job.exe,
        nprocs=job.nprocs,
        run_time=job.run_time,
        log_versions=list(job.log_versions),
        modules_in_log=list(job.modules),
        interfaces=_interfaces(job, _interface_modules(job, records, roles, modules))
        if overview else [],
        no_io=not any(m.ops.get("reads") or m.ops.get("writes") or m.bytes_read
                      or m.bytes_written for m in modules.values()),
        totals=JobTotals(
            basis=[spec.name for spec, _ in basis],
            bytes_read=sum(counter_sum(frame, [spec.bytes_read]) for spec, frame in basis),
            bytes_written=sum(counter_sum(frame, [spec.bytes_written])
                              for spec, frame in basis),
            files=file_counts(basis),
            io_time=io_time(time_basis, job.nprocs, job.run_time),
        ),
        modules=modules,
        dxt=traces,
        partial_modules=list(job.partial_modules),
        warnings=list(job.warnings) + messages + tool_note,
        dxt_segments=dict(job.dxt_segments or {}),
        source=job.source,
        data_formats=data_formats(roles, job.names, records, basis),
        records=records,
        names=dict(job.names),
        layers=dict(job.layers),
        data=data_figures(job, records, roles) if overview else None,
        file_roles=role_totals(roles, basis) if overview else {},
        roles=roles,
        job=job_info(job) if overview and job.source == "darshan" else None,
        summary=module_summaries(records, job.names, job.nprocs, job.run_time)
        if overview else {},
        mounts=mount_use(records, job.names, job.mounts) if overview else [],
        mpiio_hints=mpiio_hints(job, records) if overview else {},
        process_roles=dict(getattr(job, "process_roles", {}) or {}),
    )


def _interface_modules(job, records, roles, modules):
    """The module metrics interfaces are told from: over the data and checkpoint files' records,
    or, for a job without any, over every file but the standard streams and the MPI library's
    own (neither is an interface the job chose); MPI-IO's collective calls on files opened by
    one process alone counted as independent (counters.alone_collectives)."""
    for wanted in (DATA_IO, ("data", "checkpoint", "other")):
        # (a collective call on a file one process opened alone is independent I/O)
        kept = {name: alone_collectives(frame) if name == "MPI-IO" else frame
                for name, frame in records.items()}
        kept = {name: keep_roles(frame, roles, wanted) for name, frame in kept.items()}
        if any(not frame.empty for frame in kept.values()):
            return {name: module_metrics(SPECS[name], frame, job.nprocs, job.run_time)
                    for name, frame in kept.items()}
    return {}


def _without_tool_files(job):
    """A job of dlio_mpi (its op log, or a Darshan log of a dlio_mpi run) without the records
    and trace rows of the tools' own files (files.TOOL_FILES: the emulator's manifest, probe
    and output files, MPI-IO lock tests), and a note saying how many records were left out.
    Any other program's log is characterized whole: its files are its own."""
    command = (job.exe or "").split()[:4]      # "python -m dlio_mpi run ...", or its script
    if job.source != "oplog" and "dlio_mpi" not in command \
            and not any(os.path.basename(word) == "dlio_mpi" for word in command):
        return job, []
    tool = {i for i, n in job.names.items() if is_tool_file(n)}
    if not tool:
        return job, []
    dropped = 0
    records = {}
    tool = np.array(sorted(tool), dtype=np.uint64)
    for name, frame in job.records.items():
        keep = ~np.isin(frame["id"], tool) if "id" in frame else None
        if keep is None or keep.all():
            records[name] = frame
            continue
        dropped += int((~keep).sum())
        records[name] = frame[keep]
    if not dropped:
        return job, []
    segments = {name: frame[~np.isin(frame["id"], tool)]
                for name, frame in (job.dxt_segments or {}).items()}
    note = (f"{dropped} records of the tools' own files (dlio_mpi's manifest, probe and output "
            "files, MPI-IO lock tests) are left out")
    return dataclasses.replace(job, records=records, dxt_segments=segments), [note]


def data_formats(roles, names, records, basis):
    """Format -> files, bytes_read, bytes_written, shared_files over the files of the
    (spec, frame) parts ``basis`` that moved bytes and are data or checkpoints (``roles``,
    :mod:`dlio_mpi_analysis.characterization.file_roles`; see Characterization)."""
    hdf5_ids = set(records["H5F"]["id"].tolist()) if "H5F" in records else set()
    parts = [(frame["id"], frame["rank"], np.maximum(frame[spec.bytes_read], 0),
              np.maximum(frame[spec.bytes_written], 0))
             for spec, frame in basis if not frame.empty]
    if not parts:
        return {}
    ids, ranks, read, written = (np.concatenate(column) for column in zip(*parts))
    files, of = np.unique(ids, return_inverse=True)
    of = of.reshape(-1)
    n = len(files)
    read_per_file = np.zeros(n, np.int64)
    np.add.at(read_per_file, of, read.astype(np.int64))
    written_per_file = np.zeros(n, np.int64)
    np.add.at(written_per_file, of, written.astype(np.int64))
    # opened by several ranks, or a record Darshan reduced over all ranks (rank -1); whole
    # columns, not a Python function per file, which a log of thousands of files waits on
    pairs = np.unique(np.stack([of, ranks.astype(np.int64)]), axis=1)
    lowest = np.full(n, np.iinfo(np.int64).max)
    np.minimum.at(lowest, of, ranks.astype(np.int64))
    shared = ((np.bincount(pairs[0], minlength=n) > 1) | (lowest < 0)).astype(np.int64)
    moved = np.flatnonzero((read_per_file > 0) | (written_per_file > 0))
    chosen = [i for i in moved.tolist() if roles.get(int(files[i]), "data") in DATA_IO]
    formats = {}
    for i in chosen:
        fid = int(files[i])
        fmt = file_format(names.get(fid, ""), fid in hdf5_ids)
        entry = formats.setdefault(fmt, {"files": 0, "bytes_read": 0, "bytes_written": 0,
                                         "shared_files": 0})
        entry["files"] += 1
        entry["bytes_read"] += int(read_per_file[i])
        entry["bytes_written"] += int(written_per_file[i])
        entry["shared_files"] += int(shared[i])
    # most bytes read first; equal ones in the order of their names
    ordered = sorted(sorted(formats), key=lambda fmt: -formats[fmt]["bytes_read"])
    return {fmt: formats[fmt] for fmt in ordered}


def _interfaces(job, modules):
    used = [name for name in ("POSIX", "STDIO") if name in modules and modules[name].records]
    mpiio = modules.get("MPI-IO")
    if mpiio is not None and mpiio.records:
        kinds = [kind for kind in ("independent", "collective")
                 if mpiio.ops[f"{kind}_reads"] + mpiio.ops[f"{kind}_writes"]]
        used += [f"MPI-IO {kind}" for kind in kinds] or ["MPI-IO"]
    used += _mpiio_beneath_hdf5(job)
    if any(name in modules and modules[name].records for name in ("H5F", "H5D")):
        used.append("HDF5")
    used += [label for name, label in PRESENCE_INTERFACES.items() if name in job.modules]
    return list(dict.fromkeys(used))


def _mpiio_beneath_hdf5(job):
    """The MPI-IO interface of the files a source observed from HDF5 down only (it holds no
    MPI-IO records of them): libhdf5's MPI-IO driver, collective where H5D says so."""
    hdf5 = [f for f, layer in job.layers.items() if layer == "HDF5"]
    h5d = job.records.get("H5D")
    if not hdf5 or h5d is None or h5d.empty:
        return []
    collective = int(h5d["H5D_USE_MPIIO_COLLECTIVE"].max()) > 0
    return ["MPI-IO collective" if collective else "MPI-IO independent"]


def _plain(value):
    """Dataclasses to dicts, tuples to lists; leaves JSON-ready scalars as they are."""
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def _flatten(mapping, prefix=""):
    """(dotted key, value) pairs of a nested dict; lists are kept as values."""
    rows = []
    for key, value in mapping.items():
        if isinstance(value, dict):
            rows += _flatten(value, f"{prefix}{key}.")
        else:
            rows.append((f"{prefix}{key}", value))
    return rows


def _long_table(metrics_by_module, skip=("histogram",)):
    import pandas as pd

    rows = []
    for name, metrics in metrics_by_module.items():
        plain = _plain(metrics)
        for metric, value in _flatten(plain):
            if metric != "module" and not any(part in skip for part in metric.split(".")):
                rows.append((name, metric, value))
    return pd.DataFrame(rows, columns=["module", "metric", "value"])

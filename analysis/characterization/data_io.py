"""The job's data I/O alone: the characterization's figures over its data and checkpoint files
(:mod:`dlio_mpi_analysis.characterization.file_roles`), and the other files' bytes, reported apart."""

from dataclasses import dataclass

import numpy as np

from dlio_mpi_analysis.characterization.counters import SPECS, counter_sum
from dlio_mpi_analysis.characterization.dxt_metrics import dxt_metrics
from dlio_mpi_analysis.characterization.file_roles import DATA_IO, ROLES, keep_roles
from dlio_mpi_analysis.characterization.layers import parts_at
from dlio_mpi_analysis.characterization.module_metrics import module_metrics


@dataclass
class DataFigures:
    """The characterization of the job's data I/O alone: the records and DXT segments of its data
    and checkpoint files (:mod:`dlio_mpi_analysis.characterization.file_roles`), without its standard streams, the MPI
    library's own files, code, configuration and logs. These are the figures ``fit`` and
    ``compare`` use; the job's reads of its configuration would shift read counts,
    sequentiality and transfer sizes, its log and output writes the bytes written.

    ``files``: data files (with records at the totals' basis), ``checkpoint_files``: checkpoint
    files; ``bytes_read``, ``bytes_written``, ``reads``, ``writes``: over both, at the totals'
    basis; ``modules`` and ``dxt``: :class:`~dlio_mpi_analysis.characterization.module_metrics.ModuleMetrics` and
    :class:`~dlio_mpi_analysis.characterization.dxt_metrics.DxtMetrics` of every module over those files' records and
    segments only (reads, sequential and consecutive shares, transfer sizes and their median).
    """

    files: int
    checkpoint_files: int
    bytes_read: int
    bytes_written: int
    reads: int
    writes: int
    modules: dict
    dxt: dict


def data_parts(parts, roles, wanted=DATA_IO):
    """The (spec, frame) parts with only the records of files whose role is one of
    ``wanted``."""
    return [(spec, keep_roles(frame, roles, wanted)) for spec, frame in parts]


def data_figures(job, records, roles):
    """The :class:`DataFigures` of a job."""
    kept = {name: keep_roles(frame, roles) for name, frame in records.items()}
    basis, _ = parts_at(kept, job.names, job.layers)
    checkpoints = {i for i, role in roles.items() if role == "checkpoint"}
    traces = {name: keep_roles(frame, roles) for name, frame in (job.dxt_segments or {}).items()}
    files = np.unique(np.concatenate([frame["id"].astype(np.uint64)
                                      for _, frame in basis] or [np.zeros(0, np.uint64)]))
    n_checkpoint = sum(1 for f in files.tolist() if int(f) in checkpoints)
    return DataFigures(
        files=len(files) - n_checkpoint,
        checkpoint_files=n_checkpoint,
        bytes_read=sum(counter_sum(frame, [spec.bytes_read]) for spec, frame in basis),
        bytes_written=sum(counter_sum(frame, [spec.bytes_written]) for spec, frame in basis),
        reads=sum(counter_sum(frame, spec.ops["reads"]) for spec, frame in basis),
        writes=sum(counter_sum(frame, spec.ops["writes"]) for spec, frame in basis),
        modules={name: module_metrics(SPECS[name], frame, job.nprocs, job.run_time)
                 for name, frame in kept.items() if not frame.empty},
        dxt={name: dxt_metrics(name, frame, job.run_time, name in job.partial_modules)
             for name, frame in traces.items() if not frame.empty},
    )


def role_totals(roles, basis):
    """Role -> files, bytes_read, bytes_written over the (spec, frame) parts ``basis``."""
    totals = {}
    for spec, frame in basis:
        if frame.empty:
            continue
        read = np.maximum(frame[spec.bytes_read], 0)
        written = np.maximum(frame[spec.bytes_written], 0)
        for i, r, w in zip(frame["id"].tolist(), read.tolist(), written.tolist()):
            role = roles.get(int(i), "data")
            entry = totals.setdefault(role, {"ids": set(), "bytes_read": 0, "bytes_written": 0})
            entry["ids"].add(int(i))
            entry["bytes_read"] += int(r)
            entry["bytes_written"] += int(w)
    return {role: {"files": len(totals[role]["ids"]), "bytes_read": totals[role]["bytes_read"],
                   "bytes_written": totals[role]["bytes_written"]}
            for role in ROLES if role in totals}

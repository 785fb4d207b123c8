"""Darshan-log analysis for dlio_mpi: load logs with PyDarshan and characterize their I/O.

Importable without MPI. ``characterize(path)`` is the usual entry point (a Darshan log, a
directory of one job's logs, or a dlio_mpi run directory with its op logs); ``load`` gives the
raw records of a log (or of a set of one job's per-process logs) as DataFrames, ``load_run``
those of a run's op logs. ``compare`` puts jobs side by side with a similarity score, ``fit``
derives a dlio_mpi workload from a job, ``write_report`` writes a report with figures, and
``analysis.paper`` runs the DLIO paper's study on the emulator.
"""

from .characterize import Characterization, JobTotals, characterize, load_job
from .compare import METRICS, Comparison, compare, render_comparison
from .dxt_metrics import DxtMetrics
from .errors import (AnalysisWarning, HeatmapMismatchWarning, InvalidCounterWarning, LogError,
                     PartialLogWarning)
from .fit import Fit, FitError, fit
from .loader import CHARACTERIZED_MODULES, DXT_MODULES, DarshanJob, load
from .module_metrics import ModuleMetrics
from .oplog import is_run_dir, load_run
from .report import write_report
from .text import render_text, to_json

__all__ = [
    "AnalysisWarning", "CHARACTERIZED_MODULES", "Characterization", "Comparison",
    "DXT_MODULES", "DarshanJob", "DxtMetrics", "Fit", "FitError", "HeatmapMismatchWarning",
    "InvalidCounterWarning", "JobTotals", "LogError", "METRICS", "ModuleMetrics",
    "PartialLogWarning", "characterize", "compare", "fit", "is_run_dir", "load", "load_job",
    "load_run", "render_comparison", "render_text", "to_json", "write_report",
]

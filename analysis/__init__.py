"""Darshan-log analysis for dlio_mpi: load logs with PyDarshan and characterize their I/O.

Importable without MPI. ``characterize(path)`` is the usual entry point (a Darshan log, a
directory of one job's logs, or a dlio_mpi run directory with its op logs); ``load`` gives the
raw records of a log (or of a set of one job's per-process logs) as DataFrames, ``load_run``
those of a run's op logs. ``compare`` puts jobs side by side with a similarity score, ``fit``
derives a dlio_mpi workload from a job, ``write_report`` writes a report with figures, and
``analysis.paper_study.paper`` runs the DLIO paper's study on the emulator.
"""

from analysis.characterization.characterize import Characterization, JobTotals, characterize, load_job
from analysis.comparison.compare import METRICS, Comparison, compare, render_comparison
from analysis.characterization.dxt_metrics import DxtMetrics
from analysis.errors import (AnalysisWarning, HeatmapMismatchWarning, InvalidCounterWarning, LogError,
                     PartialLogWarning)
from analysis.fitting.fit import Fit, FitError, fit
from analysis.loading.loader import CHARACTERIZED_MODULES, DXT_MODULES, DarshanJob, load
from analysis.characterization.module_metrics import ModuleMetrics
from analysis.loading.oplog import is_run_dir, load_run
from analysis.reporting.report import write_report
from analysis.characterization.text import render_text, to_json

__all__ = [
    "AnalysisWarning", "CHARACTERIZED_MODULES", "Characterization", "Comparison",
    "DXT_MODULES", "DarshanJob", "DxtMetrics", "Fit", "FitError", "HeatmapMismatchWarning",
    "InvalidCounterWarning", "JobTotals", "LogError", "METRICS", "ModuleMetrics",
    "PartialLogWarning", "characterize", "compare", "fit", "is_run_dir", "load", "load_job",
    "load_run", "render_comparison", "render_text", "to_json", "write_report",
]

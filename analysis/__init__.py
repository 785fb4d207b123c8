"""Darshan-log analysis for dlio_mpi: load logs with PyDarshan and characterize their I/O.

Importable without MPI. ``characterize(path)`` is the usual entry point; ``load`` gives the
raw records of a log (or of a set of one job's per-process logs) as DataFrames.
"""

from .characterize import Characterization, JobTotals, characterize
from .dxt_metrics import DxtMetrics
from .errors import (AnalysisWarning, HeatmapMismatchWarning, InvalidCounterWarning, LogError,
                     PartialLogWarning)
from .loader import CHARACTERIZED_MODULES, DXT_MODULES, DarshanJob, load
from .module_metrics import ModuleMetrics
from .text import render_text, to_json

__all__ = [
    "AnalysisWarning", "CHARACTERIZED_MODULES", "Characterization", "DXT_MODULES", "DarshanJob",
    "DxtMetrics", "HeatmapMismatchWarning", "InvalidCounterWarning", "JobTotals", "LogError",
    "ModuleMetrics", "PartialLogWarning", "characterize", "load", "render_text", "to_json",
]

"""Darshan-log analysis for dlio_mpi: load logs through darshan-util's C library and characterize their I/O.

Importable without MPI. ``characterize(path)`` is the usual entry point (a Darshan log, a
directory of one job's logs, or a dlio_mpi run directory with its op logs); ``load`` gives the
raw records of a log (or of a set of one job's per-process logs) as DataFrames, ``load_run``
those of a run's op logs. ``compare`` puts jobs side by side with a similarity score, ``fit``
derives a dlio_mpi workload from a job, ``write_report`` writes a report with figures, and
``dlio_mpi_analysis.paper_study.paper`` runs the DLIO paper's study on the emulator.
"""

import importlib

# name -> the module that defines it. Imported on first use, so that a command that needs one
# module (diagnose: no figures, no fitting, no YAML) does not pay for every other one.
_EXPORTS = {
    **dict.fromkeys(("Characterization", "JobTotals", "characterize", "load_job"),
                    "characterization.characterize"),
    **dict.fromkeys(("METRICS", "Comparison", "compare", "render_comparison"), "comparison.compare"),
    **dict.fromkeys(("DxtMetrics",), "characterization.dxt_metrics"),
    **dict.fromkeys(("AnalysisWarning", "HeatmapMismatchWarning", "InvalidCounterWarning",
                     "LogError", "PartialLogWarning", "FitError"), "errors"),
    **dict.fromkeys(("Fit", "fit"), "fitting.fit"),
    **dict.fromkeys(("CHARACTERIZED_MODULES", "DXT_MODULES", "DarshanJob", "load"),
                    "loading.loader"),
    **dict.fromkeys(("ModuleMetrics",), "characterization.module_metrics"),
    **dict.fromkeys(("is_run_dir", "load_run"), "loading.oplog"),
    **dict.fromkeys(("write_report",), "reporting.report"),
    **dict.fromkeys(("render_text", "to_json"), "characterization.text"),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'dlio_mpi_analysis' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))

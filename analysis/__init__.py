"""Darshan-log analysis for dlio_mpi: load logs with PyDarshan and characterize their I/O.

Importable without MPI. ``characterize(path)`` is the usual entry point (a Darshan log, a
directory of one job's logs, or a dlio_mpi run directory with its op logs); ``load`` gives the
raw records of a log (or of a set of one job's per-process logs) as DataFrames, ``load_run``
those of a run's op logs. ``compare`` puts jobs side by side with a similarity score, ``fit``
derives a dlio_mpi workload from a job, ``write_report`` writes a report with figures, and
``analysis.paper`` runs the DLIO paper's study on the emulator.
"""

import importlib
import sys
import types

# name -> the module that defines it. Imported on first use, so that a command that needs one
# module (diagnose: no figures, no fitting, no YAML) does not pay for every other one.
_EXPORTS = {
    "Characterization": "characterize", "JobTotals": "characterize",
    "characterize": "characterize", "load_job": "characterize",
    "METRICS": "compare", "Comparison": "compare", "compare": "compare",
    "render_comparison": "compare",
    "DxtMetrics": "dxt_metrics",
    "AnalysisWarning": "errors", "HeatmapMismatchWarning": "errors",
    "InvalidCounterWarning": "errors", "LogError": "errors", "PartialLogWarning": "errors",
    "FitError": "errors", "Fit": "fit", "fit": "fit",
    "CHARACTERIZED_MODULES": "loader", "DXT_MODULES": "loader", "DarshanJob": "loader",
    "load": "loader",
    "ModuleMetrics": "module_metrics",
    "is_run_dir": "oplog", "load_run": "oplog",
    "write_report": "report",
    "render_text": "text", "to_json": "text",
}

__all__ = sorted(_EXPORTS)


class _Package(types.ModuleType):
    """The package, whose exports named like their module (characterize, compare, fit) stay
    the functions: importing such a module sets the package's attribute to the module, which
    would hide the function from ``analysis.fit(...)``."""

    def __setattr__(self, name, value):
        if isinstance(value, types.ModuleType) and _EXPORTS.get(name) == name \
                and value.__name__ == f"{__name__}.{name}":
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'analysis' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))

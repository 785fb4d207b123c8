"""The starting workload of advise: a shipped or given workload with overrides, a dlio_mpi run
directory (the configuration in its summary.json), or a Darshan log (the workload fitted to it).
Runs on rank 0 only; what advise makes (datasets, checkpoints) goes below its output folder
unless the overrides or the run directory name another place."""

import os
import warnings

from dlio_mpi.config import loader as config
from dlio_mpi.run import outputs
from dlio_mpi.run import summary_layout
from dlio_mpi.advise.measure import AdviseError, minimal_doc


def _named(overrides, key):
    return any(o.split("=", 1)[0].lstrip("+").removeprefix("workload.") == key
               for o in overrides)


def starting_point(source, overrides, config_file, out_dir):
    """(workload document, characterization of the source or None, notes, the DarshanJob of a
    Darshan log source or None): ``source`` is
    None (the workload comes from ``workload=NAME`` or ``config_file``), a run directory or a
    Darshan log."""
    from dlio_mpi_analysis.errors import AnalysisWarning

    notes, char, log = [], None, None
    out_dir = os.path.abspath(out_dir)
    if source is None:
        if not config_file and not _named(overrides, "workload"):
            overrides = ("workload=default",) + tuple(overrides)
        cfg = config.load(overrides, config_file=config_file)
        local = True
    elif os.path.isdir(source):
        summary_path = os.path.join(outputs.results_folder(source), summary_layout.SUMMARY)
        try:
            doc = summary_layout.load(source)[1]["config"]
        except FileNotFoundError:
            raise AdviseError(f"{source}: no summary.json: not a complete dlio_mpi run "
                              "directory") from None
        except (ValueError, KeyError, TypeError):
            raise AdviseError(f"{summary_path}: not a dlio_mpi summary (no configuration in "
                              "it)") from None
        cfg = config.load(overrides, doc=doc, doc_source=summary_path)
        from dlio_mpi_analysis.loading.oplog import is_run_dir
        if is_run_dir(source):
            from dlio_mpi_analysis.characterization.characterize import characterize
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", AnalysisWarning)
                char = characterize(source)
        notes.append(f"started from the run in {source} (its configuration)")
        local = False
    elif os.path.exists(source):
        from dlio_mpi_analysis.characterization.characterize import characterize, load_job
        from dlio_mpi_analysis.fitting.fit import fit
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AnalysisWarning)
            fitted = fit(source, data_folder=os.path.join(out_dir, "data", "fitted"),
                         output_folder=os.path.join(out_dir, "runs", "fitted"))
            log = load_job(source, dxt=True)
            char = characterize(log)
        os.makedirs(out_dir, exist_ok=True)
        fitted.write(os.path.join(out_dir, "fitted.yaml"))
        cfg = config.load(overrides, doc=fitted.workload, doc_source=f"{source} (fitted)")
        notes.append(f"started from the workload fitted to {source} ({fitted.ranks} "
                     "processes in the log); the findings are the log's")
        notes += [f"fit: {n}" for n in fitted.notes]
        local = True
    else:
        raise AdviseError(f"{source}: no such file or directory (give a Darshan log, a "
                          "dlio_mpi run directory, or workload=NAME)")
    doc = minimal_doc(cfg)
    doc.setdefault("dataset", {})["data_folder"] = cfg.dataset.data_folder
    if local and not _named(overrides, "dataset.data_folder"):
        doc["dataset"]["data_folder"] = os.path.join(out_dir, "data", "baseline")
    if local and not _named(overrides, "checkpoint.checkpoint_folder"):
        doc.setdefault("checkpoint", {})["checkpoint_folder"] = os.path.join(out_dir,
                                                                             "checkpoints")
    doc.get("output", {}).pop("folder", None)
    doc.setdefault("io", {}).pop("keep_oplog", None)
    return doc, char, notes, log

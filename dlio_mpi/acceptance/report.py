"""report: everything an acceptance results folder holds, gathered into one document (the
report's JSON; report_page draws it as HTML): the system the runs ran on (hosts, their memory
and CPUs, the file system and mount of the data, the MPI library, the facts the runs' summaries
record), each procedure's rule table (run, checkpoint), every run's AU and throughput, the
accelerators each search found, the checkpoint figures and the dataset's generation.

Only DIR/training and DIR/checkpointing are walked (the datasets and checkpoints beside them
may hold millions of files), never through a `latest` link, so each run counts once."""
import json
import os
import time

from dlio_mpi.acceptance import results_folder
from dlio_mpi.acceptance.rules import AcceptanceError
from dlio_mpi.run import summary_layout

TRAINING = "training"
CHECKPOINTING = "checkpointing"
DATAGEN = "datagen.json"


def _load(path):
    """A JSON object from path; AcceptanceError naming it when it cannot be read."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise AcceptanceError(f"{path} cannot be read: {e}") from None
    if not isinstance(doc, dict):
        raise AcceptanceError(f"{path} cannot be read: not a JSON object")
    return doc


def _walk(results):
    """(folder, file names) of every folder under DIR/training and DIR/checkpointing, in
    order, links to folders not followed."""
    for top in (TRAINING, CHECKPOINTING):
        root = os.path.join(results, top)
        for folder, dirs, files in os.walk(root):
            dirs.sort()
            yield folder, set(files)


def procedure_of(results, folder):
    """"run", "search", "datagen" or "checkpoint": the step a folder belongs to, from its
    place (DIR/training/WORKLOAD/STEP/..., DIR/checkpointing/MODEL/...)."""
    parts = os.path.relpath(folder, results).split(os.sep)
    if parts[0] == CHECKPOINTING:
        return "checkpoint"
    return parts[2] if len(parts) > 2 else "other"


def run_entry(results, folder, summary):
    """A run as the report lists it: where, what ran, its figures (DLIO's names)."""
    metric = summary.get("metric", {})
    own = summary_layout.own(summary)
    rel = os.path.relpath(folder, results)
    entry = {"procedure": procedure_of(results, folder), "folder": rel,
             "workload": summary.get("workload"),
             "accelerators": summary_layout.ranks(summary),
             "num_hosts": summary.get("num_hosts"), "hostname": summary.get("hostname"),
             "start": summary.get("start"), "end": summary.get("end"),
             "au_percentage": metric.get("train_au_mean_percentage"),
             "throughput_samples_per_second":
                 metric.get("train_throughput_mean_samples_per_second"),
             "io_MB_per_second": metric.get("train_io_mean_MB_per_second")}
    for key in ("save_checkpoint_io_mean_GB_per_second", "load_checkpoint_io_mean_GB_per_second",
                "save_checkpoint_duration_mean_seconds",
                "load_checkpoint_duration_mean_seconds"):
        if metric.get(key) is not None:
            entry[key] = metric[key]
    entry["facts"] = own.get("facts", {})
    entry["data_folder"] = own.get("config", {}).get("dataset", {}).get("data_folder")
    entry["checkpoint_folder"] = own.get("config", {}).get("checkpoint", {}).get(
        "checkpoint_folder")
    entry["hosts"] = [{"cpus": c, "memory_GB": m} for c, m in
                      zip(summary.get("host_cpu_count") or [],
                          summary.get("host_memory_GB") or [])]
    return entry


def mount_of(path):
    """The mount holding path, as /proc/mounts of this host says: {"mount_point", "source",
    "type", "options"}, or None (a path this host cannot see)."""
    if not path or not os.path.exists(path):
        return None
    path = os.path.realpath(path)
    best = None
    try:
        with open("/proc/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 4:
                    continue
                point = parts[1].replace("\\040", " ")
                if (path == point or path.startswith(point.rstrip("/") + "/")) and \
                        (best is None or len(point) >= len(best["mount_point"])):
                    best = {"mount_point": point, "source": parts[0], "type": parts[2],
                            "options": parts[3]}
    except OSError:
        return None
    return best


def _distinct(values):
    out = []
    for v in values:
        if v is not None and v not in out:
            out.append(v)
    return out


def system(runs):
    """What the runs ran on, as their summaries record it: each set of hosts seen (the first
    host's name, the count, CPUs and memory of each), the MPI libraries and MPI-IO components,
    the file systems of the data; the mount of each data and checkpoint folder as this host
    sees it; the runs' warnings, once each."""
    hosts = _distinct({"first_host": r["hostname"], "num_hosts": r["num_hosts"],
                       "hosts": r["hosts"]} for r in runs)
    folders = _distinct([r["data_folder"] for r in runs if r["procedure"] != "checkpoint"]
                        + [r["checkpoint_folder"] for r in runs
                           if r["procedure"] == "checkpoint"])
    facts = [r["facts"] for r in runs]
    return {
        "hosts": hosts,
        "mpi": _distinct(f.get("mpi") for f in facts),
        "mpiio": _distinct(f.get("mpiio") for f in facts),
        "filesystem": _distinct(f.get("filesystem") for f in facts),
        "cpus_per_rank_min": _distinct(f.get("cpus_per_rank_min") for f in facts),
        "storage": [{"folder": folder, "mount": mount_of(folder)} for folder in folders],
        "warnings": _distinct(w for f in facts for w in f.get("warnings", [])),
    }


def training_result(results, folder, doc):
    """A training procedure's result.json as the report's rule table and figures."""
    return {"procedure": "run", "folder": os.path.relpath(folder, results),
            "workload": doc.get("workload"),
            "au_threshold_percentage": doc.get("au_threshold_percentage"),
            "verdict": doc.get("verdict"), "pass": doc.get("pass"),
            "compliant": doc.get("compliant"), "division": doc.get("division"),
            "not_compliant_because": doc.get("not_compliant_because", []),
            "figures": doc.get("figures", {}), "rules": doc.get("compliance", []),
            "runs": [r.get("run") for r in ([doc.get("warmup")] if doc.get("warmup") else [])
                     + doc.get("runs", [])]}


def checkpoint_result(results, folder, doc):
    """A checkpointing procedure's result.json: its rule table and figures."""
    return {"procedure": "checkpoint", "folder": os.path.relpath(folder, results),
            "model": doc.get("model"), "mode": doc.get("mode"),
            "processes": doc.get("processes"), "hosts": doc.get("hosts"),
            "num_checkpoints": doc.get("num_checkpoints"),
            "compliant": doc.get("compliant"), "division": doc.get("division"),
            "not_compliant_because": doc.get("not_compliant_because", []),
            "page_cache": doc.get("page_cache"), "figures": doc.get("figures", {}),
            "checkpoints": doc.get("checkpoints", []), "rules": doc.get("compliance", [])}


def search_result(results, folder, doc):
    keys = ("workload", "mode", "launcher", "hosts", "au_threshold_percentage",
            "min_accelerators_per_host", "max_accelerators_per_host", "repeats", "complete",
            "accelerators_per_host", "accelerators", "at_max")
    out = {"folder": os.path.relpath(folder, results)}
    out.update({k: doc.get(k) for k in keys})
    out["points"] = [{k: p.get(k) for k in ("accelerators_per_host", "au_percentage", "pass")}
                     for p in doc.get("points", [])]
    return out


def gather(results):
    """The report's document over the results folder; AcceptanceError when it is not an
    acceptance results folder or holds no results."""
    from dlio_mpi import __version__

    if not os.path.isdir(results):
        raise AcceptanceError(f"results folder {results} does not exist")
    marker = results_folder.read_marker(results)
    if marker is None:
        raise AcceptanceError(f"{results} holds no {results_folder.MARKER}: not an acceptance "
                              "results folder")
    runs, procedures, searches, datagen = [], [], [], []
    for folder, files in _walk(results):
        if summary_layout.SUMMARY in files:
            runs.append(run_entry(results, folder,
                                  _load(os.path.join(folder, summary_layout.SUMMARY))))
        if results_folder.RESULT in files:
            doc = _load(os.path.join(folder, results_folder.RESULT))
            if procedure_of(results, folder) == "checkpoint":
                procedures.append(checkpoint_result(results, folder, doc))
            else:
                procedures.append(training_result(results, folder, doc))
        if "search.json" in files:
            searches.append(search_result(results, folder,
                                          _load(os.path.join(folder, "search.json"))))
        if DATAGEN in files:
            doc = _load(os.path.join(folder, DATAGEN))
            doc["folder"] = os.path.relpath(folder, results)
            datagen.append(doc)
    runs.sort(key=lambda r: r["start"] or "")
    if not (runs or procedures or searches or datagen):
        raise AcceptanceError(f"results folder {results} holds no acceptance results yet "
                              f"(nothing under {TRAINING}/ or {CHECKPOINTING}/)")
    return {
        "report": "MLPerf Storage acceptance",
        "results": os.path.realpath(results),
        "procedure": marker.get("procedure"),
        "workload": marker.get("workload"),
        "generated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "generator": f"dlio_mpi {__version__}",
        "system": system(runs),
        "procedures": procedures,
        "runs": runs,
        "searches": searches,
        "datagen": datagen,
    }

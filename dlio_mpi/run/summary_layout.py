"""summary.json in the DLIO benchmark's layout, the one MLPerf Storage's report and rules code
reads: what ran at the top (num_accelerators, num_hosts, hostname, start, end, each host's CPUs
and memory, the dataset's size), a `metric` object with each training and evaluation figure
per epoch and its mean and standard deviation, and the checkpoint figures, under DLIO's names
and units (MB and GB are 1024² and 1024³ bytes); this project's own figures (bytes moved,
latency histograms, first batch, what the run ran on, every phase in detail) in a section of
their own (OWN). The configuration and the overrides are written beside it as DLIO records
them (CONFIG_FOLDER/config.yaml and overrides.yaml)."""
import datetime
import json
import os

import numpy as np

from dlio_mpi.run import outputs

# 2: the DLIO layout (1: the flat layout of earlier versions, no schema_version key)
SCHEMA_VERSION = 2
OWN = "dlio_mpi"
# the folder MLPerf Storage has DLIO write its Hydra configuration to (hydra.output_subdir),
# and Hydra's own name for it, a link to the same folder
CONFIG_FOLDER = "dlio_config"
HYDRA_FOLDER = ".hydra"
MB = 2**20
GB = 2**30


def timestamp(seconds):
    """A time (seconds since the epoch) as DLIO writes start and end: UTC, ISO 8601."""
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S.%f")


SUMMARY = "summary.json"


def own(summary):
    """The section of a summary that holds this project's own figures: a summary of the
    earlier flat layout (no schema_version) is that section whole; {} when there is none."""
    if not isinstance(summary, dict):
        return {}
    if "schema_version" not in summary and OWN not in summary:
        return summary
    section = summary.get(OWN)
    return section if isinstance(section, dict) else {}


def ranks(summary):
    """The run's ranks (DLIO's num_accelerators; `ranks` in the earlier flat layout)."""
    return summary.get("num_accelerators", summary.get("ranks"))


def load(directory):
    """(summary, its own section) of the run in directory: a run's folder, or an output
    folder (its latest run). OSError or ValueError as open and json.load raise them."""
    with open(os.path.join(outputs.results_folder(directory), SUMMARY)) as f:
        summary = json.load(f)
    return summary, own(summary)


def _series(metric, name, unit, values):
    """DLIO's triple for one figure: the per-epoch list, its mean and standard deviation."""
    values = [float(v) for v in values]
    metric[f"{name}_{unit}"] = values
    metric[f"{name}_mean_{unit}"] = float(np.mean(values))
    metric[f"{name}_stdev_{unit}"] = float(np.std(values))


def _scalars(metric, name, unit, values):
    """DLIO's pair for the checkpoints: mean and standard deviation, no list."""
    metric[f"{name}_mean_{unit}"] = float(np.mean(values))
    metric[f"{name}_stdev_{unit}"] = float(np.std(values))


def metric(trained, evaluations, checkpoints, au_threshold):
    """The `metric` object: trained and evaluations are the job-wide figures of each epoch
    (metrics.reduce_epochs), checkpoints the checkpoints' records, au_threshold the fraction
    of time the accelerators must be busy (metric.au)."""
    out = {}
    for prefix, phases in (("train", trained), ("eval", evaluations)):
        if not phases:
            continue
        _series(out, f"{prefix}_au", "percentage", [100 * e["au"] for e in phases])
        out[f"{prefix}_au_meet_expectation"] = (
            "success" if out[f"{prefix}_au_mean_percentage"] >= 100 * au_threshold else "fail")
        _series(out, f"{prefix}_throughput", "samples_per_second",
                [e["samples_per_s"] for e in phases])
        _series(out, f"{prefix}_io", "MB_per_second", [e["bytes_per_s"] / MB for e in phases])
    if not trained:
        out["train_au_meet_expectation"] = "not applicable"
    for op, name in (("write", "save_checkpoint"), ("read", "load_checkpoint")):
        done = [c for c in checkpoints if c["op"] == op]
        if not done:
            continue
        _scalars(out, f"{name}_duration", "seconds", [c["duration_s"] for c in done])
        _scalars(out, f"{name}_io", "GB_per_second",
                 [c["bandwidth_bytes_per_s"] / GB for c in done])
    if checkpoints:
        writes = [c for c in checkpoints if c["op"] == "write"]
        out["checkpoint_size_GB"] = (writes or checkpoints)[0]["bytes"] / GB
    return out


def layout(own_figures, cfg, *, trained, evaluations, checkpoints, hosts, started, ended):
    """The whole summary: DLIO's keys, then this project's figures under OWN. hosts: one
    (name, CPUs, memory bytes) per host, rank 0's first; started, ended: seconds since the
    epoch."""
    return {
        "schema_version": SCHEMA_VERSION,
        "workload": cfg.workload,
        "start": timestamp(started),
        "end": timestamp(ended),
        "num_accelerators": own_figures["facts"]["ranks"],
        "num_hosts": len(hosts),
        "hostname": hosts[0][0],
        "host_cpu_count": [h[1] for h in hosts],
        "host_memory_GB": [h[2] / GB for h in hosts],
        "num_files_train": cfg.dataset.num_files_train,
        "num_files_eval": cfg.dataset.num_files_eval,
        "num_samples_per_file": cfg.dataset.num_samples_per_file,
        "epochs": len(trained),
        "metric": metric(trained, evaluations, checkpoints, cfg.metric.au),
        OWN: own_figures,
    }


# keys this project names otherwise than the DLIO benchmark does today (it reads both)
DLIO_NAMES = {("dataset", "record_length"): "record_length_bytes",
              ("dataset", "record_length_stdev"): "record_length_bytes_stdev",
              ("dataset", "record_length_resize"): "record_length_bytes_resize"}


def dlio_config(cfg):
    """The configuration as DLIO's config.yaml holds it: the workload's sections under
    `workload:`, its keys under DLIO's names."""
    doc = cfg.to_dict()
    for (section, ours), theirs in DLIO_NAMES.items():
        body = doc.get(section, {})
        if ours in body:
            body[theirs] = body.pop(ours)
    return {"workload": doc}


def dlio_overrides(overrides):
    """The command line's overrides as DLIO records them in overrides.yaml: `workload=NAME`
    as given, a setting as Hydra's `++workload.section.key=value`."""
    out = []
    for item in overrides:
        key = item.split("=", 1)[0].lstrip("+")
        value = item.split("=", 1)[1] if "=" in item else ""
        out.append(f"workload={value}" if key == "workload" else f"++workload.{key}={value}")
    return out

"""The `*_metadata.json` beside a run's summary.json by which MLPerf Storage's report code
(mlpstorage/rules.py get_runs_files) finds a run: a folder counts as a run when it holds
summary.json and exactly one file whose name ends in `_metadata.json`, which must load as
JSON. The name and fields are those mlpstorage's benchmarks write
(`<benchmark type>_<YYYYmmdd_HHMMSS>_metadata.json`: the benchmark's type, when it ran, its
arguments, the workload's parameters and the overrides), filled with what this run did."""
import datetime
import json
import os

from dlio_mpi.files import safe_files
from dlio_mpi.run import summary_layout

SUFFIX = "_metadata.json"
# mlpstorage's run datetime (utils.get_datetime_string), in the run's local time
DATETIME_FORMAT = "%Y%m%d_%H%M%S"


def benchmark_type(cfg):
    """mlpstorage's benchmark type of a run, decided as its rules decide it from the
    workflow: generating or training data is "training", checkpoints only "checkpointing"."""
    if cfg.workflow.generate_data or cfg.workflow.train:
        return "training"
    return "checkpointing"


def command(cfg):
    """mlpstorage's command: "run" for a training or checkpointing run, "datagen" for a run
    that only generates the dataset."""
    if cfg.workflow.generate_data and not cfg.workflow.train:
        return "datagen"
    return "run"


def name(cfg, started):
    when = datetime.datetime.fromtimestamp(started).strftime(DATETIME_FORMAT)
    return f"{benchmark_type(cfg)}_{when}{SUFFIX}"


def metadata(cfg, summary, run_dir, overrides, started, ended):
    from dlio_mpi import __version__
    from dlio_mpi.acceptance.configs import given

    kind = benchmark_type(cfg)
    filename = name(cfg, started)
    hosts = summary.get("num_hosts")
    memory = summary.get("host_memory_GB") or []
    args = {"program": kind, "command": command(cfg), "model": cfg.model.name,
            "num_processes": summary_layout.ranks(summary), "num_client_hosts": hosts,
            "results_dir": os.path.abspath(cfg.output.folder), "exec_type": "mpi"}
    if kind == "training":
        args["data_dir"] = os.path.abspath(cfg.dataset.data_folder)
    if cfg.workflow.checkpoint:
        args["checkpoint_folder"] = os.path.abspath(cfg.checkpoint.checkpoint_folder)
        args["num_checkpoints_write"] = cfg.checkpoint.num_checkpoints_write
        args["num_checkpoints_read"] = cfg.checkpoint.num_checkpoints_read
    return {
        "benchmark_type": kind,
        "run_datetime": filename[len(kind) + 1:-len(SUFFIX)],
        "run_number": 0,
        "runtime": ended - started,
        "args": args,
        "config_name": cfg.workload,
        "params_dict": given(o for o in overrides if not o.startswith("workload=")),
        "combined_params": summary_layout.dlio_config(cfg)["workload"],
        "cluster_information": {
            "num_hosts": hosts,
            "total_memory_bytes": int(sum(memory) * summary_layout.GB),
            "total_cores": sum(summary.get("host_cpu_count") or [])},
        "run_result_output": os.path.abspath(run_dir),
        "metadata_filename": filename,
        "metadata_file_path": os.path.join(os.path.abspath(run_dir), filename),
        "verification": None,
        "generator": f"dlio_mpi {__version__}",
    }


def write(cfg, summary, run_dir, overrides, started, ended):
    """The run's metadata file in its folder (rank 0, once the summary is written)."""
    doc = metadata(cfg, summary, run_dir, overrides, started, ended)
    safe_files.write_whole(os.path.join(run_dir, doc["metadata_filename"]),
                           json.dumps(doc, indent=1), fsync=True)

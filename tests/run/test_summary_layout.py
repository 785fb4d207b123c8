"""summary.json in the DLIO benchmark's layout, read as MLPerf Storage's mlpstorage reads a DLIO
result folder (mlpstorage/rules.py: BenchmarkResult, BenchmarkRun._process_benchmark_result,
ClusterInformation.from_dlio_summary_json, calculate_training_data_size, the rules' checks;
mlpstorage/reporting.py: the metric printout): every key path it reads is there, with the type
it uses it as. Each run keeps its own folder, `latest` names the newest."""
import json
import os

import numpy as np
import pytest
import yaml

from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

REC, SPF, FILES, BATCH, EPOCHS = 65536, 4, 8, 2, 2
# mlpstorage's result folder's configuration folder (config.HYDRA_OUTPUT_SUBDIR)
CONFIG_FOLDER = "dlio_config"


def read_as_mlpstorage(result_dir):
    """Every key path mlpstorage's reporting and rules code reads of a DLIO result folder,
    read the way it reads it; returns what it got."""
    with open(os.path.join(result_dir, "summary.json")) as f:
        summary = json.load(f)
    hydra = {}
    folder = os.path.join(result_dir, CONFIG_FOLDER)
    for name in os.listdir(folder):
        if name.endswith(".yaml"):
            with open(os.path.join(folder, name)) as f:
                hydra[name] = yaml.load(f, Loader=yaml.Loader)
    summary.get("workload", {})
    workload = hydra.get("config.yaml", {}).get("workload", {})
    workflow = workload.get("workflow", {})
    flow = (workflow.get("generate_data", {}), workflow.get("train", {}),
            workflow.get("checkpoint", {}))
    got = {"workflow": flow, "model": workload.get("model", {}).get("name"),
           "num_processes": summary["num_accelerators"], "start": summary.get("start"),
           "metrics": summary.get("metric"), "overrides": {}}
    for param in hydra.get("overrides.yaml", list()):
        p, v = param.split("=")
        if p.startswith("++workload."):
            got["overrides"][p[len("++workload."):]] = v
    # ClusterInformation.from_dlio_summary_json
    got["memory_bytes"] = sum(summary.get("host_memory_GB")) * 1024 * 1024 * 1024
    got["cores"] = sum(summary.get("host_cpu_count"))
    got["num_hosts"] = summary.get("num_hosts")
    # the rules: check_num_files_train, calculate_training_data_size, check_odirect_...
    dataset, reader = workload["dataset"], workload["reader"]
    got["files"] = int(dataset["num_files_train"])
    got["file_bytes"] = dataset["num_samples_per_file"] * dataset["record_length_bytes"]
    got["min_samples"] = 500 * got["num_processes"] * reader["batch_size"]
    got["odirect"] = workload.get("reader", {}).get("odirect")
    # reporting: each metric printed as a number, a list of numbers, or as it is
    for metric, value in got["metrics"].items():
        if isinstance(value, (int, float)):
            f"{value:,.1f}"
        elif isinstance(value, list):
            ", ".join(f"{v:,.1f}" for v in value)
        else:
            str(value)
    return summary, got


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Two runs into one output folder, 2 ranks, training with a checkpoint per epoch."""
    base = tmp_path_factory.mktemp("layout")
    out = base / "out"
    args = ["run", "workload=default", f"dataset.data_folder={base / 'data'}",
            f"output.folder={out}", f"checkpoint.checkpoint_folder={base / 'ckpt'}",
            f"dataset.num_files_train={FILES}", f"dataset.num_samples_per_file={SPF}",
            f"dataset.record_length={REC}", f"reader.batch_size={BATCH}",
            f"train.epochs={EPOCHS}", "train.computation_time=0.01",
            "workflow.generate_data=true", "workflow.checkpoint=true",
            "checkpoint.epochs_between_checkpoints=1", "model.model_size_bytes=256k"]
    first = run_mpi(2, "run_cli.py", *args, timeout=180)
    second = run_mpi(2, "run_cli.py", *args, timeout=180)
    return out, first, second


def test_mlpstorage_reads_every_key_it_needs(two_runs):
    out, _, _ = two_runs
    summary, got = read_as_mlpstorage(out / "latest")
    assert summary["schema_version"] == 2
    assert got["num_processes"] == 2 and got["num_hosts"] == 1
    assert got["workflow"] == (True, True, True) and got["model"] == "default"
    assert got["files"] == FILES and got["file_bytes"] == SPF * REC
    assert got["min_samples"] == 500 * 2 * BATCH and got["odirect"] is False
    assert got["cores"] == os.cpu_count() and got["memory_bytes"] > 2**30
    assert got["overrides"]["dataset.num_files_train"] == str(FILES)
    assert got["overrides"]["train.epochs"] == str(EPOCHS)
    assert summary["start"] < summary["end"] and summary["start"][:2] == "20"
    assert summary["hostname"] == os.uname().nodename and summary["epochs"] == EPOCHS
    m = got["metrics"]
    for name, unit in (("train_au", "percentage"),
                       ("train_throughput", "samples_per_second"),
                       ("train_io", "MB_per_second")):
        values = m[f"{name}_{unit}"]
        assert len(values) == EPOCHS
        assert m[f"{name}_mean_{unit}"] == pytest.approx(np.mean(values))
        assert m[f"{name}_stdev_{unit}"] == pytest.approx(np.std(values))
    assert m["train_au_meet_expectation"] in ("success", "fail")
    for key in ("save_checkpoint_duration_mean_seconds", "save_checkpoint_duration_stdev_seconds",
                "save_checkpoint_io_mean_GB_per_second", "save_checkpoint_io_stdev_GB_per_second",
                "checkpoint_size_GB"):
        assert isinstance(m[key], float) and m[key] >= 0, key
    own = summary["dlio_mpi"]
    writes = [c for c in own["checkpoints"] if c["op"] == "write"]
    assert m["checkpoint_size_GB"] == pytest.approx(writes[0]["bytes"] / 2**30)
    assert m["save_checkpoint_io_mean_GB_per_second"] == pytest.approx(
        np.mean([c["bandwidth_bytes_per_s"] for c in writes]) / 2**30)


def test_io_figures_are_in_mebibytes_and_epochs_numbered_from_1(two_runs):
    """train_io_* divide bytes by 1024² as DLIO does; the epochs in the file are numbered as
    on screen (from 1), in summary.json and per_rank.csv alike."""
    out, _, second = two_runs
    summary = json.loads((out / "latest" / "summary.json").read_text())
    own, m = summary["dlio_mpi"], summary["metric"]
    assert m["train_io_MB_per_second"] == pytest.approx(
        [e["bytes_per_s"] / 2**20 for e in own["epochs"]])
    assert m["train_io_mean_MB_per_second"] == pytest.approx(
        own["bytes_moved"] / EPOCHS / np.mean([e["duration_s"] for e in own["epochs"]])
        / 2**20, rel=0.05)
    assert [e["epoch"] for e in own["epochs"]] == list(range(1, EPOCHS + 1))
    assert [c["epoch"] for c in own["checkpoints"]] == list(range(1, EPOCHS + 1))
    for e in own["epochs"]:
        assert f"epoch {e['epoch']}: {e['samples']} samples" in second.stdout
        assert f"Ending epoch {e['epoch']} of {EPOCHS}" in second.stdout
    header = (out / "latest" / "per_rank.csv").read_text().splitlines()[0]
    assert "train1_wall_s" in header and "train0_wall_s" not in header


def test_each_run_keeps_its_folder(two_runs):
    out, first, second = two_runs
    runs = sorted(p for p in os.listdir(out) if p[:2] == "20")
    assert len(runs) == 2, os.listdir(out)
    assert os.readlink(out / "latest") == runs[1]
    for name in runs:
        folder = out / name
        assert (folder / "summary.json").is_file() and (folder / "per_rank.csv").is_file()
        assert (folder / CONFIG_FOLDER / "config.yaml").is_file()
        assert os.readlink(folder / ".hydra") == CONFIG_FOLDER
        assert "Ending epoch 1" in (folder / "dlio_mpi.log").read_text()
    starts = [json.loads((out / n / "summary.json").read_text())["start"] for n in runs]
    assert starts[0] < starts[1]
    assert f"{out}/latest/summary.json" in second.stdout


def runs_as_mlpstorage(results_dir):
    """The runs mlpstorage's report finds under results_dir (rules.get_runs_files and
    BenchmarkResult): each folder holding exactly one *_metadata.json and a summary.json, the
    metadata loaded as JSON; returns [(folder, metadata, benchmark type from the workflow)]."""
    runs = []
    for root, _, files in os.walk(results_dir):
        metadata_files = [f for f in files if f.endswith("_metadata.json")]
        if len(metadata_files) != 1 or "summary.json" not in files:
            continue
        with open(os.path.join(root, metadata_files[0])) as f:
            metadata = json.load(f)
        _, got = read_as_mlpstorage(root)
        generate, train, checkpoint = got["workflow"]
        kind = "training" if generate or train else "checkpointing" if checkpoint else None
        runs.append((root, metadata_files[0], metadata, kind))
    return runs


def test_mlpstorage_finds_each_run_by_its_metadata(two_runs):
    """Each run folder holds one <type>_<YYYYmmdd_HHMMSS>_metadata.json (mlpstorage's name)
    whose fields say what the run was, as summary.json and the configuration do."""
    import datetime

    out, _, _ = two_runs
    runs = runs_as_mlpstorage(out)
    assert sorted(os.path.basename(r[0]) for r in runs) == sorted(
        p for p in os.listdir(out) if p[:2] == "20")
    for folder, name, meta, kind in runs:
        assert kind == meta["benchmark_type"] == "training"
        datetime.datetime.strptime(meta["run_datetime"], "%Y%m%d_%H%M%S")
        assert name == meta["metadata_filename"] == f"training_{meta['run_datetime']}" \
            "_metadata.json"
        assert meta["metadata_file_path"] == os.path.join(folder, name)
        assert meta["run_result_output"] == folder
        with open(os.path.join(folder, "summary.json")) as f:
            summary = json.load(f)
        args = meta["args"]
        assert args["command"] == "run" and args["model"] == "default"
        assert args["num_processes"] == summary["num_accelerators"] == 2
        assert args["num_client_hosts"] == summary["num_hosts"]
        assert args["data_dir"] == os.path.abspath(out.parent / "data")
        assert meta["params_dict"]["dataset.num_files_train"] == str(FILES)
        assert meta["combined_params"]["dataset"]["record_length_bytes"] == REC
        assert 0 < meta["runtime"] < 180

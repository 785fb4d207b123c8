"""The acceptance procedure at a tiny scale under mpiexec (2 ranks, resnet50 shrunk, the
dataset under the rules' minimum with the explicit flag): datagen once, a warm-up and five
runs with the seed changed, each run's outputs kept, result.json's figures the mean and
standard deviation of the runs' own summaries, the threshold, and compliance naming the
undersized dataset; and the procedure's refusals, one line and exit 2 with nothing started."""
import json
import os
import statistics

import pytest

from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

SHRINK = ("dataset.num_files_train=8", "dataset.num_samples_per_file=16",
          "dataset.record_length=4096", "reader.batch_size=4", "train.computation_time=0.001",
          "reader.read_threads=1")


def acceptance(*args, check=True):
    return run_mpi(2, "run_cli.py", "acceptance", *args, timeout=240, check=check)


def refused(p):
    """The one line of a refusal (exit 2), or a failure naming what came instead."""
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("dlio_mpi: ")]
    assert p.returncode == 2, p.stdout[-3000:]
    assert "Traceback" not in p.stdout
    assert len(lines) == 1, p.stdout[-3000:]
    return lines[0]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    res = tmp_path_factory.mktemp("acceptance") / "results"
    acceptance("datagen", "resnet50", "--results", res, "--accelerators", "2",
               "--allow-undersized-dataset", *SHRINK)
    return res


def test_datagen_refuses_an_undersized_dataset_without_the_flag(tmp_path):
    line = refused(acceptance("datagen", "resnet50", "--results", tmp_path / "r",
                              "--accelerators", "2", *SHRINK, check=False))
    assert line.startswith("dlio_mpi: acceptance: dataset.num_files_train=8 is under the "
                           "rules' minimum of ")
    assert "--allow-undersized-dataset" in line
    assert not (tmp_path / "r").exists()


def test_datagen_again_completes_nothing_twice(results):
    p = acceptance("datagen", "resnet50", "--results", results, "--accelerators", "2",
                   "--allow-undersized-dataset", *SHRINK)
    assert "0 files written, 8 already complete" in p.stdout
    marker = json.loads((results / "acceptance.json").read_text())
    assert marker["workload"] == "resnet50" and marker["dataset"]["num_files_train"] == 8
    assert marker["dataset"]["num_subfolders_train"] == 0
    gen = results / "training" / "resnet50" / "datagen" / "latest"
    assert json.loads((gen / "datagen.json").read_text())["files_written"] == 0
    assert (gen / "dlio_mpi.log").exists()


def test_warmup_and_five_runs(results):
    p = acceptance("run", "resnet50", "--results", results, "--allow-undersized-dataset",
                   check=False)
    assert p.returncode in (0, 3), p.stdout[-3000:]        # pass or fail on AU, both fine here
    folder = results / "training" / "resnet50" / "run" / "latest"
    doc = json.loads((folder / "result.json").read_text())
    assert doc["workload"] == "resnet50" and doc["au_threshold_percentage"] == 90.0
    runs = doc["runs"]
    assert [r["run"] for r in runs] == [f"run_{i}" for i in range(1, 6)]
    assert doc["warmup"]["run"] == "warmup"
    seeds = [doc["warmup"]["seed"]] + [r["seed"] for r in runs]
    assert len(set(seeds)) == 6
    for r in [doc["warmup"]] + runs:
        # each run's outputs kept, in DLIO's layout, and its figures the summary's own
        summary = json.loads((folder / r["folder"] / "summary.json").read_text())
        assert summary["metric"]["train_au_mean_percentage"] == r["au_percentage"]
        assert summary["metric"]["train_throughput_mean_samples_per_second"] == \
            r["throughput_samples_per_second"]
        assert summary["num_accelerators"] == 2
        assert summary["dlio_mpi"]["config"]["train"]["seed"] == r["seed"]
        assert summary["dlio_mpi"]["files_generated"] == 0
        assert (folder / r["folder"] / "per_rank.csv").exists()
    for name in ("au_percentage", "throughput_samples_per_second", "io_MB_per_second"):
        values = [r[name] for r in runs]
        assert doc["figures"][name]["mean"] == pytest.approx(statistics.fmean(values))
        assert doc["figures"][name]["stdev"] == pytest.approx(statistics.pstdev(values))
    assert doc["pass"] == (statistics.fmean(r["au_percentage"] for r in runs) >= 90.0)
    assert p.returncode == (0 if doc["pass"] else 3)
    rules = {c["rule"]: c for c in doc["compliance"]}
    size = rules["dataset at least 5x the summed memory of the client hosts"]
    assert not size["compliant"] and "in 8 files" in size["evidence"]
    steps = rules["at least 500 steps per epoch at the largest process count"]
    assert not steps["compliant"]
    assert steps["evidence"] == "16 steps per epoch with 2 accelerators at batch 4"
    for ok in ("a warm-up run before the measured runs", "5 measured runs, the result their mean",
               "the random seed changed for each run",
               "the dataset generated once, before the runs",
               "every host runs the same number of accelerators"):
        assert rules[ok]["compliant"], rules[ok]
    assert not rules["only the parameters a CLOSED submission may change were changed"][
        "compliant"]
    assert not doc["compliant"] and doc["division"] == "invalid"
    assert doc["not_compliant_because"][0].startswith(
        "dataset at least 5x the summed memory of the client hosts: ")
    assert "NOT COMPLIANT" in p.stdout


def test_run_refuses_an_undersized_dataset_without_the_flag(results):
    before = sorted(os.listdir(results / "training" / "resnet50"))
    line = refused(acceptance("run", "resnet50", "--results", results, check=False))
    assert line.startswith("dlio_mpi: acceptance: dataset.num_files_train=8 is under the "
                           "rules' minimum of ")
    assert sorted(os.listdir(results / "training" / "resnet50")) == before


def test_run_refuses_fewer_runs_without_the_flag(results):
    line = refused(acceptance("run", "resnet50", "--results", results, "--runs", "2",
                              "--allow-undersized-dataset", check=False))
    assert line == ("dlio_mpi: acceptance: --runs 2 is under the rules' 5 runs: give "
                    "--allow-fewer-runs to go on (the result is then reported not compliant)")


def test_fewer_runs_with_the_flag_not_compliant(results):
    acceptance("run", "resnet50", "--results", results, "--runs", "1", "--allow-fewer-runs",
               "--allow-undersized-dataset", "--seed", "7", check=False)
    doc = json.loads((results / "training" / "resnet50" / "run" / "latest" / "result.json")
                     .read_text())
    assert [r["seed"] for r in [doc["warmup"]] + doc["runs"]] == [7, 8]
    rule = next(c for c in doc["compliance"] if c["rule"].startswith("5 measured runs"))
    assert not rule["compliant"] and rule["evidence"].startswith("1 runs: run_1/")


@pytest.mark.parametrize("args,start", [
    (("run", "cosmoflow"), "dlio_mpi: acceptance: results folder {res} holds the runs of "
     "mlperf_storage_training resnet50, not of mlperf_storage_training cosmoflow"),
    (("run", "bert"), "dlio_mpi: acceptance: workload 'bert': MLPerf Storage's training rules "
     "define cosmoflow, resnet50, unet3d"),
    (("run", "resnet50", "train.seed=5"), "dlio_mpi: acceptance: 'train.seed=5': the "
     "procedure sets train.seed (--seed)"),
    (("run", "resnet50", "--allow-undersized-dataset", "dataset.record_length=8192"),
     "dlio_mpi: acceptance: {res}/data/resnet50 holds another dataset than the one these "
     "settings read"),
])
def test_bad_input_refused(results, args, start):
    line = refused(acceptance(*args, "--results", results, check=False))
    assert line.startswith(start.format(res=results)), line


def test_run_without_a_dataset_refused(tmp_path):
    line = refused(acceptance("run", "unet3d", "--results", tmp_path, check=False))
    assert line.startswith(f"dlio_mpi: acceptance: results folder {tmp_path} holds no "
                           "acceptance dataset")


def test_a_folder_of_other_files_refused(tmp_path):
    (tmp_path / "status.json").write_text("{}")
    line = refused(acceptance("datagen", "unet3d", "--results", tmp_path, "--accelerators", "2",
                              "--allow-undersized-dataset", "dataset.num_files_train=2",
                              check=False))
    assert line == (f"dlio_mpi: acceptance: results folder {tmp_path} holds files but no "
                    "acceptance.json: it is not an acceptance procedure's; give an empty or "
                    "new folder")


def test_a_failed_run_is_named(tmp_path):
    res = tmp_path / "r"
    acceptance("datagen", "resnet50", "--results", res, "--accelerators", "2",
               "--allow-undersized-dataset", *SHRINK)
    damaged = res / "data" / "resnet50" / "train" / "img_0000003_of_8.tfrecord"
    os.truncate(damaged, 100)
    p = acceptance("run", "resnet50", "--results", res, "--allow-undersized-dataset",
                   check=False)
    assert p.returncode == 1
    folder = os.path.realpath(res / "training" / "resnet50" / "run" / "latest")
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("dlio_mpi: ")]
    assert lines == [f"dlio_mpi: acceptance resnet50: warmup failed ({folder}/warmup): rank 1: "
                     f"unexpected end of file in {damaged}: wanted 65792 bytes from offset 0, "
                     "got 100; the runs before it are kept"]
    state = json.loads((res / "training" / "resnet50" / "run" / "latest" / "warmup" /
                        "status.json").read_text())
    assert state["status"] == "failed"
    assert not os.path.exists(os.path.join(folder, "result.json"))

"""python -m dlio_mpi acceptance search at a tiny scale (resnet50 shrunk, 1 to 3 accelerators,
1 repeat): the runs launched by the command itself, or made of the processes it started on
inside an allocation; search.json lists every count tried with its AU and verdict, each run
kept in DLIO's layout, and the answer is the largest count that passed; a count under the
threshold (no compute: AU 0) ends the search there; bad input is one line and exit 2 with
nothing started."""
import json
import os
import subprocess
import sys

import pytest

from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

SHRINK = ("dataset.num_files_train=12", "dataset.num_samples_per_file=16",
          "dataset.record_length=4096", "reader.batch_size=4", "train.computation_time=0.01",
          "reader.read_threads=1")


def launched(*args):
    """The command as a process of its own (it launches its runs with mpiexec)."""
    return subprocess.run(
        [sys.executable, "-m", "dlio_mpi", "acceptance", "search", *map(str, args)],
        capture_output=True, text=True, timeout=240, env=dict(os.environ))


def refused(p):
    out = p.stdout + p.stderr
    lines = [ln for ln in out.splitlines() if ln.startswith("dlio_mpi: ")]
    assert p.returncode == 2, out[-3000:]
    assert "Traceback" not in out
    assert len(lines) == 1, out[-3000:]
    return lines[0]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    res = tmp_path_factory.mktemp("search") / "results"
    run_mpi(2, "run_cli.py", "acceptance", "datagen", "resnet50", "--results", res,
            "--accelerators", "3", "--allow-undersized-dataset", *SHRINK, timeout=240)
    return res


def searches(results):
    return results / "training" / "resnet50" / "search"


def check_document(doc, folder, low, high):
    """search.json against its runs: every count's runs kept, their AU the summaries' own, the
    verdicts the threshold's, and the answer the largest count that passed."""
    assert doc["workload"] == "resnet50" and doc["au_threshold_percentage"] == 90.0
    assert doc["min_accelerators_per_host"] == low and doc["max_accelerators_per_host"] == high
    assert doc["repeats"] == 1 and doc["majority"] == 1 and doc["complete"]
    assert doc["dataset"]["undersized"] and doc["dataset"]["num_files_train"] == 12
    for point in doc["points"]:
        n = point["accelerators_per_host"]
        assert point["accelerators"] == n and len(point["runs"]) == 1
        assert point["runs"][0].startswith(f"accelerators_{n}/repeat_1/")
        summary = json.loads((folder / point["runs"][0] / "summary.json").read_text())
        assert summary["num_accelerators"] == n
        assert summary["dlio_mpi"]["files_generated"] == 0
        assert point["au_percentage"] == [summary["metric"]["train_au_mean_percentage"]]
        assert point["pass"] == (point["au_percentage"][0] >= 90.0)
        assert point["passing_repeats"] == int(point["pass"])
        assert list((folder / point["runs"][0]).glob("training_*_metadata.json"))
    tried = [p["accelerators_per_host"] for p in doc["points"]]
    assert len(tried) == len(set(tried)) and tried[0] == low
    passed = [p["accelerators_per_host"] for p in doc["points"] if p["pass"]]
    answer = doc["accelerators_per_host"]
    assert answer == (max(passed) if passed else 0)
    assert doc["accelerators"] == answer and doc["at_max"] == (answer == high)
    if 0 < answer < high:
        assert answer + 1 in tried and answer + 1 not in passed


def test_launched_search_keeps_each_run_and_finds_the_largest_passing_count(results):
    p = launched("resnet50", "--results", results, "--max", 3, "--repeats", 1,
                 "--allow-undersized-dataset")
    folder = searches(results) / "latest"
    doc = json.loads((folder / "search.json").read_text())
    assert p.returncode == (0 if doc["accelerators_per_host"] else 3), p.stderr[-3000:]
    assert doc["mode"] == "launched" and doc["launcher"] == "mpiexec (from PATH)"
    check_document(doc, folder, 1, 3)
    # one progress line per count tried, in the order tried
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("search resnet50: ")]
    assert [int(ln.split()[2]) for ln in lines] == \
        [pt["accelerators_per_host"] for pt in doc["points"]]
    assert p.stdout.splitlines()[-1] == f"search: {os.path.realpath(folder)}/search.json"


def test_a_count_under_the_threshold_ends_the_search(results):
    # without compute every step waits on I/O only: AU 0 at 1 accelerator already
    p = launched("resnet50", "--results", results, "--max", 3, "--repeats", 1,
                 "--allow-undersized-dataset", "train.computation_time=0")
    assert p.returncode == 3, p.stdout[-3000:] + p.stderr[-3000:]
    doc = json.loads((searches(results) / "latest" / "search.json").read_text())
    assert [pt["accelerators_per_host"] for pt in doc["points"]] == [1]
    assert doc["points"][0]["au_percentage"] == [0.0] and not doc["points"][0]["pass"]
    assert doc["accelerators_per_host"] == 0 and doc["complete"]
    assert "1 accelerators per host already fall under the AU threshold of 90 %" in p.stdout


def test_search_inside_an_allocation_uses_its_processes(results):
    p = run_mpi(3, "run_cli.py", "acceptance", "search", "resnet50", "--results", results,
                "--repeats", 1, "--allow-undersized-dataset", "--inside-allocation",
                timeout=240, check=False)
    folder = searches(results) / "latest"
    doc = json.loads((folder / "search.json").read_text())
    assert p.returncode == (0 if doc["accelerators_per_host"] else 3), p.stdout[-3000:]
    assert doc["mode"] == "inside allocation" and doc["launcher"] is None
    check_document(doc, folder, 1, 3)        # --max: the allocation's 3 processes


@pytest.mark.parametrize("args,line", [
    (("bert",), "dlio_mpi: acceptance: workload 'bert': MLPerf Storage's training rules "
     "define cosmoflow, resnet50, unet3d"),
    (("resnet50", "--min", "3", "--max", "2"),
     "dlio_mpi: acceptance: --max 2 is below --min 3: the search needs min <= max"),
])
def test_bad_input_refused(results, args, line):
    before = sorted(os.listdir(searches(results))) if searches(results).exists() else []
    p = launched(*args, "--results", results, "--allow-undersized-dataset")
    assert refused(p) == line
    after = sorted(os.listdir(searches(results))) if searches(results).exists() else []
    assert after == before


def test_inside_an_allocation_refuses_more_than_its_processes(results):
    p = run_mpi(2, "run_cli.py", "acceptance", "search", "resnet50", "--results", results,
                "--max", 3, "--allow-undersized-dataset", "--inside-allocation", timeout=120,
                check=False)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("dlio_mpi: ")]
    assert p.returncode == 2 and "Traceback" not in p.stdout
    assert lines == ["dlio_mpi: acceptance: --max 3: the allocation has 2 processes on its "
                     f"smallest host ({os.uname().nodename}: 2)"]

"""python -m dlio_mpi acceptance report over results folders made by tiny procedures (those of
the run and checkpoint tests): a training folder with its dataset's generation, a warm-up and
one run, and a search; a checkpointing folder with its write and read runs. report.json holds
the system, each procedure's rules, every run with the figures of its summary, the search's
answer and the checkpoint figures; report.html exists, embeds the figure and names each run;
a folder that is not an acceptance results folder is one line and exit 2."""
import json
import os
import subprocess
import sys

import pytest

from mpirun import run_mpi
from test_acceptance_checkpoint import SHRINK as CHECKPOINT_SHRINK
from test_acceptance_run import SHRINK

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec


def cli(*args):
    return subprocess.run([sys.executable, "-m", "dlio_mpi", "acceptance", *map(str, args)],
                          capture_output=True, text=True, timeout=240, env=dict(os.environ))


@pytest.fixture(scope="module")
def training(tmp_path_factory):
    res = tmp_path_factory.mktemp("report") / "training"
    run_mpi(2, "run_cli.py", "acceptance", "datagen", "resnet50", "--results", res,
            "--accelerators", "2", "--allow-undersized-dataset", *SHRINK, timeout=240)
    p = run_mpi(2, "run_cli.py", "acceptance", "run", "resnet50", "--results", res, "--runs",
                "1", "--allow-fewer-runs", "--allow-undersized-dataset", timeout=240,
                check=False)
    assert p.returncode in (0, 3), p.stdout[-3000:]
    p = cli("search", "resnet50", "--results", res, "--max", 2, "--repeats", 1,
            "--allow-undersized-dataset")
    assert p.returncode in (0, 3), p.stdout[-3000:] + p.stderr[-3000:]
    p = cli("report", res)
    assert p.returncode == 0, p.stderr[-3000:]
    return res, p


@pytest.fixture(scope="module")
def checkpointing(tmp_path_factory):
    res = tmp_path_factory.mktemp("report") / "checkpointing"
    run_mpi(2, "run_cli.py", "acceptance", "checkpoint", "llama3_8b", "--results", res,
            "--num-checkpoints", 2, *CHECKPOINT_SHRINK, timeout=240)
    p = cli("report", res, "--output", res / "report")
    assert p.returncode == 0, p.stderr[-3000:]
    return res, p


def summaries(res):
    """{run folder relative to res: summary} of every run in the folder."""
    out = {}
    for folder, dirs, files in os.walk(res):
        if "summary.json" in files:
            with open(os.path.join(folder, "summary.json")) as f:
                out[os.path.relpath(folder, res)] = json.load(f)
    return out


def test_training_report_holds_every_run_the_rules_and_the_search(training):
    res, p = training
    assert p.stdout.split() == [str(res / "report_runs.png"), str(res / "report.json"),
                                str(res / "report.html")]
    doc = json.loads((res / "report.json").read_text())
    assert doc["procedure"] == "mlperf_storage_training" and doc["workload"] == "resnet50"
    # every run of the folder, the warm-up, run_1 and each search run, with its summary's own
    # figures
    runs = {r["folder"]: r for r in doc["runs"]}
    have = summaries(res)
    assert set(runs) == set(have) and len(have) >= 3
    for folder, summary in have.items():
        r = runs[folder]
        assert r["au_percentage"] == summary["metric"]["train_au_mean_percentage"]
        assert r["throughput_samples_per_second"] == \
            summary["metric"]["train_throughput_mean_samples_per_second"]
        assert r["accelerators"] == summary["num_accelerators"]
    assert {r["procedure"] for r in doc["runs"]} == {"run", "search"}
    # the system the summaries record, and the data's mount as this host sees it
    s = doc["system"]
    assert s["hosts"][0]["first_host"] == os.uname().nodename
    assert s["hosts"][0]["hosts"][0]["cpus"] == os.cpu_count()
    assert s["mpi"] and s["filesystem"]
    storage = s["storage"][0]
    assert storage["folder"] == str(res / "data" / "resnet50")
    assert storage["mount"]["type"] == s["filesystem"][0]
    # the rule table of the procedure, as its result.json holds it
    (proc,) = doc["procedures"]
    result = json.loads((res / proc["folder"] / "result.json").read_text())
    assert proc["procedure"] == "run" and proc["rules"] == result["compliance"]
    assert proc["verdict"] == result["verdict"] and proc["runs"] == ["warmup", "run_1"]
    assert proc["figures"] == result["figures"]
    # the search's answer, as its search.json holds it
    (found,) = doc["searches"]
    search = json.loads((res / found["folder"] / "search.json").read_text())
    assert found["accelerators_per_host"] == search["accelerators_per_host"]
    assert [pt["accelerators_per_host"] for pt in found["points"]] == \
        [pt["accelerators_per_host"] for pt in search["points"]]
    assert doc["datagen"][0]["files_written"] == 8
    page = (res / "report.html").read_text()
    assert "data:image/png;base64," in page
    for folder in have:
        assert folder in page, folder
    assert (res / "report_runs.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_checkpoint_report_holds_the_checkpoint_figures(checkpointing):
    res, p = checkpointing
    doc = json.loads((res / "report" / "report.json").read_text())
    (proc,) = doc["procedures"]
    result = json.loads((res / proc["folder"] / "result.json").read_text())
    assert proc["procedure"] == "checkpoint" and proc["model"] == "llama3_8b"
    assert proc["figures"] == result["figures"] and proc["rules"] == result["compliance"]
    assert set(proc["figures"]) == {"write", "read"}
    runs = {r["folder"]: r for r in doc["runs"]}
    assert set(runs) == set(summaries(res)) and len(runs) == 2
    write = next(r for r in runs.values() if "/write/" in r["folder"])
    assert write["save_checkpoint_io_mean_GB_per_second"] > 0
    assert doc["searches"] == [] and doc["system"]["storage"][0]["folder"] == \
        str(res / "checkpoints" / "llama3_8b")
    assert not (res / "report" / "report_runs.png").exists()     # no run with an AU
    page = (res / "report" / "report.html").read_text()
    for folder in runs:
        assert folder in page
    assert "llama3_8b, default mode: 2 checkpoints" in page


@pytest.mark.parametrize("make,line", [
    (lambda tmp: tmp / "none", "dlio_mpi: acceptance: results folder {tmp}/none does not "
     "exist"),
    (lambda tmp: tmp, "dlio_mpi: acceptance: {tmp} holds no acceptance.json: not an "
     "acceptance results folder"),
])
def test_a_folder_without_results_refused(tmp_path, make, line):
    p = cli("report", make(tmp_path))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip() == line.format(tmp=tmp_path)
    assert os.listdir(tmp_path) == []

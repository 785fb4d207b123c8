"""scripts/bench-accelerators --quick: one workload at tiny sizes ends with one JSON object
holding the accelerators found, the limit and their ratio."""
import argparse
import json
import os
import subprocess
import sys
import pytest

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_quick_run_prints_the_figures(tmp_path):
    p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "benchmarks", "bench_accelerators.py"),
                        "--quick", "--workloads", "cosmoflow", "--dir", str(tmp_path)],
                       capture_output=True, text=True, timeout=120,
                       # explicit: a test process that initialized MPI carries Open MPI's
                       # variables in its C environment, which would confuse the child mpiexec
                       env=dict(os.environ))
    assert p.returncode == 0, p.stderr[-3000:]
    last = json.loads(p.stdout.strip().splitlines()[-1])
    for k in ("accelerators_cosmoflow", "limit_cosmoflow", "ratio_cosmoflow", "scale"):
        assert k in last
    assert 0 <= last["accelerators_cosmoflow"] <= 2 and last["limit_cosmoflow"] > 0
    assert last["ratio_cosmoflow"] == round(last["accelerators_cosmoflow"]
                                            / last["limit_cosmoflow"], 3)
    assert last["scale"] == {"cosmoflow": 1}
    assert last["warm_before_each_run"] is True   # the dataset read before each run
    # ... and its bandwidth kept: the limit while N and N + 1 were decided
    during = last["bandwidth_before_runs_GBps_cosmoflow"]
    assert during and all(x > 0 for x in during)
    assert last["limit_during_runs_cosmoflow"] > 0
    assert last["ratio_during_runs_cosmoflow"] == round(
        last["accelerators_cosmoflow"] / last["limit_during_runs_cosmoflow"], 3)
    assert os.listdir(tmp_path) == []          # the datasets are removed


def test_resnet50_runs_on_the_workloads_files():
    """resnet50's dataset is the workload's files (1,024 of 1,251 records), their number
    divided by the scale; with more ranks than that, as many files as ranks holding the same
    records (a stream gives each rank files of its own)."""
    sys.path.insert(0, os.path.join(ROOT, "scripts", "benchmarks"))
    try:
        import bench_accelerators as ba
    finally:
        sys.path.pop(0)
    ba.ARGS = argparse.Namespace(read_threads=None, direct=False)
    for max_ranks, files, spf in ((8, 64, 1251), (64, 64, 1251), (80, 80, 1001)):
        over, demand, s, dataset_bytes = ba.scaled("resnet50", 16, max_ranks, False)
        assert s == 16
        for kv in (f"dataset.num_files_train={files}", f"dataset.num_samples_per_file={spf}",
                   "dataset.record_length=114660", "reader.batch_size=25",
                   "train.computation_time=0.014"):
            assert kv in over
        assert dataset_bytes == files * spf * 114660
        assert files * spf >= 64 * 1251
        assert demand == 25 * 114660 / 0.014       # the workload's: 400 records every 0.224 s
    over, _, _, _ = ba.scaled("cosmoflow", 16, 32, False)   # elsewhere: steps at --max-ranks
    assert "dataset.num_files_train=2048" in over

"""scripts/bench-acceptance --quick without the DLIO benchmark: dlio_mpi's side of the procedure
measured, the DLIO benchmark's skipped with its note, one JSON object on the last line."""
import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "benchmarks", "bench_acceptance.py")


def test_quick_run_without_the_dlio_benchmark(tmp_path):
    # explicit environment: a test process that initialized MPI carries Open MPI's variables
    # in its C environment, which would confuse the child mpiexec
    env = {k: v for k, v in os.environ.items() if k != "DLIO_BENCHMARK"}
    p = subprocess.run([sys.executable, SCRIPT, "--quick", "--dir", str(tmp_path)],
                       capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    lines = p.stdout.strip().splitlines()
    last = json.loads(lines[-1])
    assert last["dlio"] is None and last["cpu_per_accelerator_step_ratio"] is None
    assert "DLIO benchmark not given" in last["note"]
    assert sum("DLIO benchmark not given" in x for x in p.stderr.splitlines()) == 1
    ours = last["dlio_mpi"]
    # --quick: 28 files, batch 7, 2 ranks, 1 epoch: 2 steps a rank, the warm-up and 1 run
    assert (last["files"], last["ranks"], last["epochs"], last["runs"]) == (28, 2, 1, 1)
    assert ours["accelerator_steps"] == 2 * 2 * 1 * 2 and ours["launches"] == 1
    assert ours["cpu_s"] > 0 and ours["wall_s"] > 0
    assert ours["cpu_ms_per_accelerator_step"] == pytest.approx(
        1000 * ours["cpu_s"] / ours["accelerator_steps"], rel=0.01)
    # the largest process's peak RSS: a Python rank with numpy and MPI holds tens of MiB
    assert 20 < ours["peak_rss_mib"] < 2048
    assert len(ours["au_percentage_runs"]) == 1 and 0 < ours["au_percentage_runs"][0] <= 100
    assert last["search"] is None
    assert any(x.startswith("DLIO benchmark") and "skipped" in x for x in lines)
    assert os.listdir(tmp_path) == []          # the dataset and the runs are removed


def test_bad_counts_are_one_line():
    p = subprocess.run([sys.executable, SCRIPT, "--runs", "0"], capture_output=True,
                       text=True, timeout=60, env=dict(os.environ))
    assert p.returncode != 0
    assert p.stderr.strip() == "bench-acceptance: --runs 0: at least 1"

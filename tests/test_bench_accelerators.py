"""scripts/bench-accelerators --quick: one workload at tiny sizes ends with one JSON object
holding the accelerators found, the limit and their ratio."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_quick_run_prints_the_figures(tmp_path):
    p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "bench_accelerators.py"),
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
    assert os.listdir(tmp_path) == []          # the datasets are removed

"""`analyze diagnose` in a fresh process imports what its rules need and nothing else: not the
fitting (and its YAML), the comparison or the report, whose imports cost a fresh process more
than the diagnosis of a small log does."""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(REPO, "tests", "fixtures", "darshan")

# modules `python -m dlio_mpi analyze diagnose` once imported without using them; PyDarshan
# ("darshan", which imports pandas and its report) since logs are read through darshan-util
NOT_ON_THE_DIAGNOSE_PATH = ("yaml", "darshan", "dlio_mpi_analysis.fitting.fit", "dlio_mpi_analysis.fitting.fit_measures",
                            "dlio_mpi_analysis.fitting.fit_checkpoints", "dlio_mpi_analysis.comparison.compare",
                            "dlio_mpi_analysis.reporting.report", "dlio_mpi_analysis.characterization.text")

DIAGNOSE_THEN_LIST_MODULES = """
import json, sys
from dlio_mpi.cli import main
try:
    main(["analyze", "diagnose", sys.argv[1], "--json"])
except SystemExit as done:
    if done.code:
        raise
sys.stderr.write("MODULES " + json.dumps(sorted(sys.modules)) + "\\n")
"""


@pytest.mark.parametrize("path", ["ior_mpiio_coll_4ranks.darshan", "spawn_npy_workers"])
def test_diagnose_imports_no_fitting_comparison_or_report(path):
    done = subprocess.run([sys.executable, "-c", DIAGNOSE_THEN_LIST_MODULES,
                           os.path.join(FIXTURES, path)], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["findings"] is not None
    line = next(line for line in done.stderr.splitlines() if line.startswith("MODULES "))
    imported = set(json.loads(line[len("MODULES "):]))
    assert "dlio_mpi_analysis.diagnosis.diagnose" in imported
    assert sorted(imported.intersection(NOT_ON_THE_DIAGNOSE_PATH)) == []
    assert not any(name.startswith("darshan.") for name in imported)


@pytest.mark.parametrize("path", [os.path.join(FIXTURES, "ior_mpiio_coll.darshan"),
                                  os.path.join(FIXTURES, "spawn_npy_workers"),
                                  os.path.join(REPO, "tests", "fixtures", "runs",
                                               "replay_mpiio_coll_in_order")])
def test_diagnose_imports_no_pandas(path):
    """A log, a job folder of logs and a run directory are diagnosed from numpy column tables
    (dlio_mpi_analysis.loading.table): pandas, whose import costs a fresh process more than
    the diagnosis of a small log, is not imported."""
    done = subprocess.run([sys.executable, "-c", DIAGNOSE_THEN_LIST_MODULES, path], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["findings"] is not None
    line = next(line for line in done.stderr.splitlines() if line.startswith("MODULES "))
    imported = set(json.loads(line[len("MODULES "):]))
    assert "dlio_mpi_analysis.diagnosis.diagnose" in imported
    assert "pandas" not in imported

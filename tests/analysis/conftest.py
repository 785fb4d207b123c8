"""Fixtures for the analysis tests: the directory of real Darshan logs, and log lookup by name."""

import functools
import glob
import os
import warnings

import pytest

import dlio_mpi_analysis as analysis
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_LOGS = os.path.join(os.path.dirname(REPO), "shared", "darshan-logs")


def find_logs_dir():
    """The real-log collection: $DLIO_MPI_DARSHAN_LOGS if set, else the first
    shared/darshan-logs beside the repository or beside one of its parent directories."""
    if "DLIO_MPI_DARSHAN_LOGS" in os.environ:
        return os.environ["DLIO_MPI_DARSHAN_LOGS"]
    d = REPO
    while True:
        parent = os.path.dirname(d)
        cand = os.path.join(parent, "shared", "darshan-logs")
        if os.path.isdir(cand):
            return cand
        if parent == d:
            return DEFAULT_LOGS
        d = parent


@pytest.fixture(scope="session")
def logs_dir():
    path = find_logs_dir()
    if not os.path.isdir(path):
        pytest.skip(f"Darshan log collection not found at {path} (set DLIO_MPI_DARSHAN_LOGS)")
    return path


@pytest.fixture(scope="session")
def log(logs_dir):
    """log(prefix) -> the path of the one log whose file name starts with prefix."""
    def find(prefix):
        matches = glob.glob(os.path.join(logs_dir, glob.escape(prefix) + "*.darshan"))
        assert len(matches) == 1, f"{prefix!r} names {len(matches)} logs"
        return matches[0]
    return find


@pytest.fixture(scope="session")
def all_logs(logs_dir):
    return sorted(glob.glob(os.path.join(logs_dir, "*.darshan")))


@pytest.fixture(scope="session")
def characterized():
    """characterized(path, dxt=False) -> Characterization, cached for the session, with the
    analysis warnings muted (test_darshan_loader checks them)."""
    @functools.lru_cache(maxsize=None)
    def run(path, dxt=False):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", analysis.AnalysisWarning)
            return analysis.characterize(path, dxt=dxt)
    return run


@pytest.fixture(scope="session")
def emulate(tmp_path_factory):
    """emulate(*overrides, ranks=2) -> the output directory of a dlio_mpi run (under mpiexec,
    with io.keep_oplog=true and no compute unless asked), cached for the session by its
    arguments; data and outputs under a session temporary directory."""
    from mpirun import run_mpi

    cache = {}

    def run(*overrides, ranks=2):
        key = (ranks, overrides)
        if key not in cache:
            base = tmp_path_factory.mktemp("run")
            out = base / "out"
            run_mpi(ranks, "run_cli.py", "run", f"dataset.data_folder={base / 'data'}",
                    f"output.folder={out}", f"checkpoint.checkpoint_folder={base / 'ckpt'}",
                    "io.keep_oplog=true", "train.computation_time=0", *overrides, timeout=180)
            cache[key] = out
        return cache[key]
    return run


@pytest.fixture(scope="session")
def paper_run(tmp_path_factory):
    """(CliRunner result, output directory) of `analyze paper --ranks 2 --json`, run once."""
    from click.testing import CliRunner

    from dlio_mpi_analysis.cli import analyze

    out = tmp_path_factory.mktemp("paper")
    result = CliRunner().invoke(analyze, ["paper", "--out", str(out), "--ranks", "2", "--json"])
    return result, out

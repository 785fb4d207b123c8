"""Fixtures for the analysis tests: the directory of real Darshan logs, and log lookup by name."""

import functools
import glob
import os
import warnings

import pytest

import analysis

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_LOGS = os.path.join(os.path.dirname(REPO), "shared", "darshan-logs")


@pytest.fixture(scope="session")
def logs_dir():
    """The real-log collection: $DLIO_MPI_DARSHAN_LOGS, else <repo>/../shared/darshan-logs."""
    path = os.environ.get("DLIO_MPI_DARSHAN_LOGS", DEFAULT_LOGS)
    if not os.path.isdir(path):
        pytest.skip(f"Darshan log collection not found at {path}")
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

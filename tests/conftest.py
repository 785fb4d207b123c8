import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from datautil import pattern  # noqa: E402


@pytest.fixture
def datafile(tmp_path):
    """make(size, seed=0) -> (path, content) of a file written with known bytes."""
    def make(size, seed=0, name="data.bin"):
        data = pattern(size, seed)
        path = tmp_path / name
        data.tofile(path)
        return path, data
    return make


def pytest_terminal_summary(terminalreporter):
    """Say plainly when the tests on real Darshan logs did not run."""
    skipped = terminalreporter.stats.get("skipped", [])
    missing = [r for r in skipped if "Darshan log collection not found" in str(r.longrepr)]
    if missing:
        terminalreporter.write_line(
            f"NOTE: {len(missing)} analysis tests skipped: the real Darshan log collection was "
            "not found (set DLIO_MPI_DARSHAN_LOGS to its directory)", yellow=True, bold=True)


# what a test module's source says when its tests launch ranks (directly, or through a run of
# the emulator, the paper study or a replay)
_LAUNCHES = ("mpirun", "mpiexec", "run_paper", "replay(", "run_emulator")
_launching = {}


def pytest_collection_modifyitems(config, items):
    """Tests that launch mpiexec carry the `mpi` marker, set by their module
    (`pytestmark = pytest.mark.mpi`): `pytest -m "not mpi"` is the quick loop of the tests that
    run in this process alone. A module that launches ranks without it is refused, so that the
    quick loop never starts a job."""
    unmarked = set()
    for item in items:
        path = str(item.fspath)
        if path not in _launching:
            with open(path) as f:
                text = f.read()
            _launching[path] = any(word in text for word in _LAUNCHES)
        if _launching[path] and item.get_closest_marker("mpi") is None:
            unmarked.add(path)
    if unmarked:
        raise pytest.UsageError("these test modules launch ranks but are not marked "
                                "`pytestmark = pytest.mark.mpi`: " + ", ".join(sorted(unmarked)))

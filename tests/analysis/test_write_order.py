"""The write phase follows the log's write order: IOR's -z writes each rank's block at random
offsets (ior_random_write.darshan, truth.json), which the fit sees in the DXT trace or, without
one, in the POSIX counters, and fits as io.write_order=shuffled; a replay's writes then have the
real job's sequential and consecutive shares. Jobs that wrote in order keep the default."""
import os

import pytest

import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.characterization.characterize import characterize
from dlio_mpi_analysis.replays.replay import replay

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                    "darshan")


def log(name):
    return os.path.join(HERE, f"{name}.darshan")


@pytest.mark.parametrize("name,source", [("ior_random_write", "DXT_POSIX"),
                                         ("ior_random_write_nodxt", "POSIX counters")])
def test_random_writes_are_fitted_shuffled(name, source):
    f = analysis.fit(log(name))
    assert f.workload["io"]["write_first"] is True
    assert f.workload["io"]["write_order"] == "shuffled"
    order = f.evidence["write_order"]
    assert order["from"] == source and order["writes"] == 1024
    assert 0.4 < order["seq"] < 0.6 and order["consec"] < 0.01


@pytest.mark.parametrize("name", ["ior_fpp", "ior_strided", "ior_mpiio_coll", "ior_hdf5"])
def test_writes_in_order_keep_the_default(name):
    f = analysis.fit(log(name))
    assert f.workload["io"]["write_first"] is True
    assert "write_order" not in f.workload["io"]
    assert f.evidence["write_order"]["order"] == "sequential"


def test_the_replay_writes_in_the_real_jobs_order(tmp_path):
    """Darshan's sequential and consecutive shares of the writes, real against emulated. The
    real job's are a random order's: of each rank's n = 512 writes, the ones past the previous
    write's end are the ascents of a random permutation (mean (n - 1) / 2, standard deviation
    sqrt((n + 1) / 12): 0.9 points of the job's 1024 writes, 1.3 for the difference of two
    draws), and about one write a rank is consecutive. The emulator's seeded permutation is
    another draw of the same: within 5 points of sequential writes (almost 4 standard
    deviations) and 1 point of consecutive ones; writes in order (what the replay did before
    it followed the log) are 99.9 % sequential."""
    r = replay(log("ior_random_write"), tmp_path / "replay")
    real = characterize(log("ior_random_write")).modules["POSIX"]
    emulated = characterize(r.run_dir).modules["POSIX"]
    assert r.emulated["bytes_written"] == 4194304 and r.emulated["write_ops"] == 1024
    assert emulated.sequential_write_pct == pytest.approx(real.sequential_write_pct, abs=5)
    assert emulated.consecutive_write_pct == pytest.approx(real.consecutive_write_pct, abs=1)

"""Reads at random offsets are replayed at random: IOR's -z reads each rank's block in a
shuffled order of its transfers (ior_random_write.darshan: written, then read, in one burst
each, truth.json). A burst of reads is a load at start only when it goes forward (a load reads
each file front to back); jumping about, it is samples read on demand in a shuffled order."""
import pytest

import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.replays.replay import replay

from fitted_runs import log

pytestmark = pytest.mark.mpi      # its replay launches ranks under mpiexec


@pytest.mark.parametrize("name", ["ior_random_write", "ior_random_write_nodxt", "ior_random"])
def test_random_reads_are_fitted_as_shuffled_reads_on_demand(name):
    f = analysis.fit(log(name))
    assert f.workload["reader"]["sample_shuffle"] == "seed"
    assert f.workload["io"]["read_type"] == "on_demand"
    assert f.evidence["forward_jump_share"] < 0.6


def test_the_replay_reads_in_the_real_jobs_random_order(tmp_path):
    """The real job's reads are about half sequential and none consecutive (a random order);
    a load at start (what the replay did before) read them 99.9 % sequential."""
    r = replay(log("ior_random_write"), tmp_path / "replay")
    real, emulated = r.comparison.row("sequential_read_fraction")
    assert 0.4 < real < 0.6 and emulated == pytest.approx(real, abs=0.05)
    real, emulated = r.comparison.row("consecutive_read_fraction")
    assert emulated < 0.01
    assert r.score >= 0.95, r.comparison.table

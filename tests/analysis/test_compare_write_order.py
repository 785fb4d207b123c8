"""compare's write order (dlio_mpi_analysis.comparison.compare: write_order, part of the structure gate) on real
logs: IOR's -z writes at random offsets (ior_random_write.darshan, truth.json) against its
replay in the same order and in order; collective writes' order from the aggregators' POSIX
writes (IOR -c, mpiio_checkpoint_train)."""
import pytest

from dlio_mpi_analysis.characterization.characterize import load_job
from dlio_mpi_analysis.characterization.read_order import write_order
from dlio_mpi_analysis.replays.replay import replay

from fitted_runs import log, run_changed

pytestmark = pytest.mark.mpi      # its replays launch ranks under mpiexec


def test_compare_tells_writes_in_order_from_random_ones(tmp_path):
    """At POSIX, Darshan's sequential share of the writes. The replay that writes in the real
    job's random order has its share (a random order's ascents: about 1 point of spread, 5
    allowed); one that writes the same bytes in order (io.write_order left at its default) is
    99.9 % sequential against 48 %, and the structure gate holds its score under 0.6."""
    right = replay(log("ior_random_write"), tmp_path / "replay").comparison
    assert right.layer == "POSIX"
    real, emulated = right.row("write_order")
    assert 0.4 < real < 0.6 and emulated == pytest.approx(real, abs=0.05)
    (tmp_path / "in_order").mkdir()

    def in_order(w):
        del w["io"]["write_order"]
    wrong = run_changed("ior_random_write", tmp_path / "in_order", in_order)
    assert wrong.row("write_order")[1] > 0.99
    assert wrong.score < 0.6, wrong.table
    assert right.score > wrong.score + 0.3


@pytest.mark.parametrize("name", ["ior_mpiio_coll", "ior_hdf5_coll_segments",
                                  "mpiio_checkpoint_train"])
def test_the_order_of_collective_writes_comes_from_the_aggregators(name):
    """Above POSIX a collective write's DXT_MPIIO offset is unknown (-1): the order is that of
    the aggregators' POSIX writes inside each call, every rank's block written forward."""
    job = load_job(log(name), dxt=True)
    assert (job.dxt_segments["DXT_MPIIO"]["offset"] < 0).all()
    assert write_order(job.dxt_segments, "MPI-IO") == 1.0


def test_collective_writes_at_shuffled_offsets_are_fitted_and_told_from_writes_in_order(tmp_path):
    """mpiio_shuffled_writes (truth.json): collective writes of each rank's block at shuffled
    offsets, read back in order by collective calls. The fit says both orders (writes
    shuffled, reads off) and no shuffled read order of the aggregators' POSIX reads; its
    replay writes in the same order (0.5 continuity: the aggregators' POSIX writes inside
    each call) and scores >= 0.95; the same workload writing in order is held under 0.6."""
    from dlio_mpi_analysis.fitting.fit import fit
    fitted = fit(log("mpiio_shuffled_writes"), data_folder=str(tmp_path / "d"),
                 output_folder=str(tmp_path / "o"))
    w = fitted.workload
    assert (w["io"]["interface"], w["io"]["layout"]) == ("mpiio_coll", "shared")
    assert (w["io"]["write_first"], w["io"]["write_order"]) == (True, "shuffled")
    assert w["reader"]["sample_shuffle"] == "off"
    assert not any("burst but in a shuffled order" in n for n in fitted.notes)
    right = replay(log("mpiio_shuffled_writes"), tmp_path / "replay").comparison
    assert right.layer == "MPI-IO"
    real, emulated = right.row("write_order")
    assert real < 0.7 and emulated == pytest.approx(real, abs=0.1)
    assert right.score >= 0.95, right.table
    (tmp_path / "in_order").mkdir()

    def in_order(w):
        del w["io"]["write_order"]
    wrong = run_changed("mpiio_shuffled_writes", tmp_path / "in_order", in_order)
    assert wrong.row("write_order")[1] > 0.99
    assert wrong.score < 0.6, wrong.table

"""Jobs whose first ranks alone read the data (real logs, Darshan 3.5.0 with DXT, truth in
truth.json): the fit says how many read (reader.reading_ranks), the replay's other ranks
read nothing, and a replay whose every rank reads is a wrong shape."""
import pytest

from dlio_mpi_analysis.fitting.fit import fit
from dlio_mpi_analysis.replays.replay import replay
from fitted_runs import TRUTH, fitted_shape, log, replay_like

pytestmark = pytest.mark.mpi      # its replays launch ranks under mpiexec


def test_only_rank_zero_of_two_reads(tmp_path):
    """IOR -N 1 on 2 ranks: rank 0 writes and reads its 16 MiB, rank 1 does nothing (fitted
    before as both ranks sharing the file: 0.0, the shared-files gate)."""
    name = "ior_mpiio_one_task_of_2"
    f, w = fitted_shape(name, "sample_bytes", "read_threads")
    assert w["reader"]["reading_ranks"] == TRUTH[name]["reading_ranks"] == 1
    assert f.ranks == 2 and f.evidence["reading_ranks"] == 1
    r = replay_like(name, tmp_path)
    assert r.comparison.row("rank_imbalance") == pytest.approx((2.0, 2.0))
    assert r.comparison.row("shared_file_fraction") == (0, 0)


def test_rank_zero_reads_what_every_rank_opened(tmp_path):
    """h5bench's cross-stencil read: both ranks open the file, rank 0 alone reads the
    stencil's blocks (rank 1's reads are libhdf5's metadata: under 5 % of rank 0's): rank 0
    reads, the other opens the file and reads nothing (0.972 before with both ranks reading
    halves; 0.0 with the other rank opening nothing, a file of one rank against a shared
    one)."""
    name = "h5bench_cs_read_2r"
    f = fit(log(name))
    rd = f.workload["reader"]
    assert (rd["reading_ranks"], rd["idle_ranks_open"]) == (1, True)
    assert f.ranks == TRUTH[name]["ranks"]
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.comparison.row("rank_imbalance") == pytest.approx((2.0, 2.0))
    assert r.comparison.row("shared_file_fraction") == (1, 1)


def test_every_rank_reading_is_no_reading_ranks():
    """A job whose ranks all read keeps reader.reading_ranks out of its workload."""
    for name in ("ior_mpiio_fpp", "ior_mpiio_coll_4ranks", "h5bench_contig_coll_read"):
        f = fit(log(name))
        assert "reading_ranks" not in f.workload["reader"], name
        assert "reading_ranks" not in f.evidence, name

"""Jobs whose first ranks alone read the data (real logs, Darshan 3.5.0 with DXT, truth in
truth.json): the fit says how many read (reader.reading_ranks), the replay's other ranks
read nothing, and a replay whose every rank reads is a wrong shape."""
import pytest

from dlio_mpi_analysis.fitting.fit import fit
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


def test_every_rank_reading_is_no_reading_ranks():
    """A job whose ranks all read keeps reader.reading_ranks out of its workload."""
    for name in ("ior_mpiio_fpp", "ior_mpiio_coll_4ranks", "h5bench_contig_coll_read"):
        f = fit(log(name))
        assert "reading_ranks" not in f.workload["reader"], name
        assert "reading_ranks" not in f.evidence, name

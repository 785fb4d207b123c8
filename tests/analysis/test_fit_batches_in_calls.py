"""A batch read in one call, and reads of one size that run on across the steps (real logs,
Darshan 3.5.0 with DXT, truth in truth.json): a batch's scattered samples in one collective
MPI-IO call through a file view (mpiio_coll_view_batches), a batch's scattered rows of an HDF5
dataset in one H5Dread, independent and collective (h5py_mpio_scattered_rows,
h5py_mpio_coll_scattered_rows), a file's samples read in order a pread each, four to a step
(c_pread_batches_in_order), collective transfers on files opened alone (mpi4py's Read_at_all
and IOR's HDF5 -F -c), and IOR's -C on four ranks (ior_fpp_reorder_4r: the shift's
direction, which two ranks cannot show)."""
import pytest

import dlio_mpi_analysis as analysis

from fitted_runs import TRUTH, fitted_shape, log, replay_like, run_changed

pytestmark = pytest.mark.mpi      # its replays launch ranks under mpiexec


def test_a_batch_of_scattered_samples_in_one_collective_call():
    """Each rank's batch of 8 shuffled samples in one MPI_File_read_all through a view: the
    MPI-IO counters give 8 samples a call a rank, and the steps are the ranks' own calls
    (DXT_MPIIO), not the aggregator's reads of every rank's samples (fitted before as one
    collective call a sample, batch 32: 1536 calls for 192, 0.46)."""
    f, w = fitted_shape("mpiio_coll_view_batches", "sample_bytes", "read_threads")
    assert (w["io"]["interface"], w["reader"]["transfer_size"]) == ("mpiio_coll", 0)
    assert w["reader"]["sample_shuffle"] == "seed"
    assert f.evidence["collective_call_samples"] == 8
    assert w["train"]["computation_time"] == pytest.approx(0.01, rel=0.1)


def test_a_view_set_once_each_call_a_batch_through_it(tmp_path):
    """mpi4py ranks set a vector view once (every 2nd 8 KiB record from their own) and read 4
    records in each MPI_File_read_all: a batch in one collective call, in order, round robin
    (fitted before with a call a sample: 2,048 calls of 8 KiB for 512 of 32 KiB, 0.755)."""
    name = "mpi4py_view_strided_coll_2r"
    f, w = fitted_shape(name, "sample_bytes", "read_threads")
    rd = w["reader"]
    assert (w["io"]["interface"], rd["transfer_size"]) == ("mpiio_coll", 0)
    assert (rd["sample_shuffle"], rd["sharding"]) == ("off", "round_robin")
    assert f.evidence["collective_call_samples"] == 4
    r = replay_like(name, tmp_path)
    assert r.emulated["read_ops"] == r.real["read_ops"]


def test_collective_calls_on_a_file_one_process_opened_are_independent(tmp_path):
    """mpi4py ranks each open their own 2 files on MPI_COMM_SELF and read them with
    Read_at_all: Darshan counts the calls collective (MPIIO_COLL_READS) and the opens
    independent; no other process takes part, so the job's interface is independent MPI-IO,
    the fit's and the replay's alike (0.31 before: collective against independent)."""
    name = "mpi4py_read_at_all_self_4r"
    f, w = fitted_shape(name, "sample_bytes", "read_threads")
    assert (w["io"]["interface"], w["io"]["layout"]) == ("mpiio", "multi")
    assert analysis.characterize(log(name)).interfaces == ["POSIX", "MPI-IO independent"]
    r = replay_like(name, tmp_path)
    assert r.emulated["interfaces"] == ["MPI-IO independent", "POSIX"]


def test_collective_hdf5_transfers_on_a_file_one_process_opened_are_independent(tmp_path):
    """IOR -a HDF5 -F -c: each rank's own file, opened on MPI_COMM_SELF, read through
    collective H5Dread transfers (H5D_USE_MPIIO_COLLECTIVE) that no other process takes part
    in: independent I/O at HDF5 as at MPI-IO, so a replay through independent transfers is
    the same interfaces (0.625 before: "HDF5 collective" against none, the structure gate)."""
    from dlio_mpi_analysis.comparison.compare import interfaces_at
    name = "ior_hdf5_fpp_coll"
    f, w = fitted_shape(name, "sample_bytes", "read_threads")
    assert (w["io"]["interface"], w["io"]["layout"]) == ("hdf5", "multi")
    c = analysis.characterize(log(name))
    assert int(c.records["H5D"]["H5D_USE_MPIIO_COLLECTIVE"].max()) == 1
    assert interfaces_at(c, "HDF5") == ["HDF5", "HDF5 through MPI-IO"]
    replay_like(name, tmp_path)


def test_collective_slices_keep_the_calls_order(tmp_path):
    """4 ranks each read their own quarter in order, 8 rows a collective H5Dread: the one
    aggregator reads every rank's piece of each call in turn (3 of 4 reads move forward), so
    the order is the calls' (all forward: in order), not the aggregator's reads' (fitted
    before as shuffled slices: 0.107, the order gate)."""
    name = "h5py_mpio_coll_row_blocks_4r"
    f, w = fitted_shape(name, "sample_bytes", "read_threads")
    rd = w["reader"]
    assert (w["io"]["interface"], rd["sample_shuffle"]) == ("hdf5_coll", "off")
    assert "shuffle_block" not in rd
    assert f.evidence["collective_read_order"] > 0.99
    replay_like(name, tmp_path)


def test_alone_collectives():
    from dlio_mpi_analysis.characterization.counters import alone_collectives
    from dlio_mpi_analysis.loading.table import Table
    t = Table({"id": [1, 2], "MPIIO_INDEP_OPENS": [2, 0], "MPIIO_COLL_OPENS": [0, 4],
               "MPIIO_COLL_READS": [32, 8], "MPIIO_INDEP_READS": [1, 0]})
    out = alone_collectives(t)
    assert out["MPIIO_COLL_READS"].tolist() == [0, 8]
    assert out["MPIIO_INDEP_READS"].tolist() == [33, 0]
    assert t["MPIIO_COLL_READS"].tolist() == [32, 8]        # the records themselves kept


@pytest.mark.parametrize("name", ["h5py_mpio_scattered_rows", "h5py_mpio_coll_scattered_rows"])
def test_a_batch_of_scattered_rows_in_one_h5dread(name):
    """dset[sorted(idx)] of 16 shuffled rows: H5D_IRREGULAR_HYPERSLAB_SELECTS on every
    H5Dread of a contiguous dataset, each row read on its own beneath: a row is the sample and
    the H5Dread a batch's union (fitted before as 64 samples of 256 KiB of a chunked dataset,
    read in order)."""
    f, w = fitted_shape(name, "sample_bytes", "read_threads")
    ds, rd = w["dataset"], w["reader"]
    assert "enable_chunking" not in ds and "chunk_size" not in ds
    assert rd.get("hdf5_reads", "batch") == "batch" and rd["sample_shuffle"] == "seed"
    assert f.evidence["h5d_scattered_rows"]["row"] == TRUTH[name]["sample_bytes"]
    assert w["io"]["interface"] == ("hdf5_coll" if "coll" in name else "hdf5")


def test_a_files_samples_read_in_order_a_read_each():
    """A pread a sample, 4 to a step with 5 ms between: a file read whole across 16 pauses
    is its 64 samples, not one whole-file load (fitted before as 8 samples of 8 MiB, a pause
    a file)."""
    f, w = fitted_shape("c_pread_batches_in_order", "sample_bytes", "read_threads")
    assert "whole_file_loads" not in f.evidence
    assert w["train"]["computation_time"] == pytest.approx(0.005, rel=0.1)


def test_ior_reorder_shift_is_the_rank_read():
    """IOR -C on 4 ranks: rank r reads back the file rank r + 1 wrote; the emulator's rank r
    reads the share of rank (r + rank_shift) mod 4: 1 (3 before, rank r - 1's)."""
    f = analysis.fit(log("ior_fpp_reorder_4r"))
    assert f.workload["reader"]["rank_shift"] == 1
    assert f.evidence["read_shift"] == {"1": TRUTH["ior_fpp_reorder_4r"]["bytes_read_total"]}


@pytest.mark.parametrize("name", ["mpiio_coll_view_batches", "h5py_mpio_scattered_rows"])
def test_replay_looks_like_the_real_program(tmp_path, name):
    replay_like(name, tmp_path)


def test_a_collective_call_a_sample_scores_low(tmp_path):
    """The batch's samples in a collective call each (the fit before): 8 times the calls of an
    eighth of the size (the same bytes, files and order: read calls, their mean size and
    histogram cost it)."""
    def change(w):
        w["reader"]["transfer_size"] = w["dataset"]["record_length"]
    wrong = run_changed("mpiio_coll_view_batches", tmp_path, change)
    assert wrong.score < 0.75, wrong.table


@pytest.mark.filterwarnings("ignore::dlio_mpi_analysis.errors.HeatmapMismatchWarning")
def test_collective_writes_in_order_on_three_ranks(tmp_path):
    """IOR -c on 3 ranks: the aggregator's POSIX writes go back within every call to each
    rank's piece (0.745 of them sequential); the calls themselves go forward: written in order
    (fitted before as shuffled writes: 0.07)."""
    f = analysis.fit(log("ior_mpiio_coll_3r"))
    assert "write_order" not in f.workload["io"]
    assert f.evidence["write_order"]["order"] == "sequential"
    assert f.evidence["write_order"]["from"].startswith("collective calls")
    replay_like("ior_mpiio_coll_3r", tmp_path)

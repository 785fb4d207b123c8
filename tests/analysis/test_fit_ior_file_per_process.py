"""IOR's file-per-process runs through MPI-IO and HDF5, and its MMAP backend, on real logs
(truth.json): ior_mpiio_fpp, ior_hdf5_fpp (its reads a burst after its writes: a load at
start in one H5Dread a transfer, as IOR's), ior_mmap (no read Darshan sees), ior_fsync_each
(-Y), ior_random_task and ior_reorder (-Z and -C: each rank reads back another's data)."""
import pytest

from dlio_mpi_analysis.errors import FitError
from dlio_mpi_analysis.fitting.fit import fit
from dlio_mpi_analysis.replays.replay import replay

from fitted_runs import TRUTH, log, replay_like, run_changed

pytestmark = pytest.mark.mpi      # the replays launch ranks under mpiexec


@pytest.mark.parametrize("name,interface", [("ior_mpiio_fpp", "mpiio"),
                                            ("ior_hdf5_fpp", "hdf5")])
def test_file_per_process_through_a_library_replays(name, interface, tmp_path):
    truth = TRUTH[name]
    f = fit(log(name), data_folder=str(tmp_path / "d"), output_folder=str(tmp_path / "o"))
    w = f.workload
    assert (w["io"]["interface"], w["io"]["layout"]) == (interface, truth["layout"])
    assert w["dataset"]["num_files_train"] == truth["num_files"]
    assert w["dataset"]["format"] == truth["format"]
    assert w["io"]["write_first"] is True
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.emulated["read_ops"] == r.real["read_ops"]
    assert r.emulated["mean_read_size"] == r.real["mean_read_size"] == truth["transfer_bytes"]


def test_a_load_at_start_reads_as_many_rows_an_h5dread_as_the_job(tmp_path):
    """IOR's HDF5 reads come in one burst after its writes (a load at start), one 256 KiB
    row an H5Dread: reader.hdf5_reads=sample; the load's rows of a file in one H5Dread (8
    MiB) make 2 reads for 64 and score under 0.6."""
    f = fit(log("ior_hdf5_fpp"), data_folder=str(tmp_path / "d"),
            output_folder=str(tmp_path / "o"))
    assert f.workload["io"]["read_type"] == "memory"
    assert f.workload["reader"]["hdf5_reads"] == "sample"
    assert any("loaded in one burst" in n for n in f.notes)
    assert not any("without a DXT trace" in n for n in f.notes)
    (tmp_path / "one_call").mkdir()

    def one_call(w):
        del w["reader"]["hdf5_reads"]
    wrong = run_changed("ior_hdf5_fpp", tmp_path / "one_call", one_call)
    assert wrong.row("read_ops") == (TRUTH["ior_hdf5_fpp"]["h5d"]["H5D_READS"], 2)
    assert wrong.score < 0.75, wrong.table


def test_reads_through_a_mapping_are_refused_naming_the_file():
    with pytest.raises(FitError, match="Darshan does not record"):
        fit(log("ior_mmap"))


def test_repetitions_write_again_before_every_epoch(tmp_path):
    """IOR -i 3 writes its files and reads them back three times: io.write_each_epoch with 3
    epochs; the replay writes and reads as much (0.94 when it wrote once)."""
    truth = TRUTH["ior_repetitions"]
    f = fit(log("ior_repetitions"), data_folder=str(tmp_path / "d"),
            output_folder=str(tmp_path / "o"))
    w = f.workload
    assert w["train"]["epochs"] == truth["repetitions"]
    assert (w["io"]["write_first"], w["io"]["write_each_epoch"]) == (True, True)
    r = replay(log("ior_repetitions"), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.emulated["bytes_written"] == r.real["bytes_written"] \
        == truth["posix"]["POSIX_BYTES_WRITTEN"]
    assert r.emulated["write_ops"] == r.real["write_ops"] == truth["posix"]["POSIX_WRITES"]
    assert r.emulated["read_ops"] == r.real["read_ops"]


def test_a_sync_after_every_write_is_fitted_and_replayed(tmp_path):
    """IOR -Y (ior_fsync_each): an fsync after each of a rank's 64 writes (IOR calls it twice:
    256 in the log); fitted as io.write_fsync_per_write, replayed with a sync a write call
    (and one a file), so that the syncs differ by IOR's second call only."""
    truth = TRUTH["ior_fsync_each"]
    f = fit(log("ior_fsync_each"))
    io = f.workload["io"]
    assert (io["write_first"], io["write_fsync"], io["write_fsync_per_write"]) == (True,) * 3
    assert f.evidence["write_first"]["syncs"] == truth["posix"]["POSIX_FSYNCS"]
    r = replay(log("ior_fsync_each"), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    writes = truth["posix"]["POSIX_WRITES"]
    assert r.comparison.row("syncs") == (2 * writes, writes + truth["num_files"])


def test_a_replay_that_syncs_each_file_once_costs_the_syncs(tmp_path):
    def once_a_file(w):
        w["io"].pop("write_fsync_per_write")
    c = run_changed("ior_fsync_each", tmp_path, once_a_file)
    assert c.row("syncs") == (256, 2)
    row = c.table[(c.table["metric"] == "syncs") & (c.table["job"] == "emulated")]
    assert float(row["similarity"].iloc[0]) == 0.0


@pytest.mark.parametrize("name,layout", [("ior_random_task", "multi"),
                                         ("ior_reorder", "shared")])
def test_reading_back_another_ranks_data(tmp_path, name, layout):
    """IOR -Z on a file per process and -C on a shared file (-O numTasksOnNode0=1 so that one
    host shifts): each rank reads back what the other wrote, in DXT; reader.rank_shift 1.
    Replayed each reading its own, the files were shared by no rank where both were (0.00)."""
    truth = TRUTH[name]
    f = fit(log(name))
    w = f.workload
    assert (w["reader"]["rank_shift"], w["io"]["layout"]) == (1, layout)
    assert f.evidence["read_shift"] == {"1": truth["bytes_read"]}
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.comparison.row("shared_file_fraction") == (1.0, 1.0)
    assert r.emulated["bytes_read"] == r.real["bytes_read"] == truth["bytes_read"]


def test_a_replay_reading_its_own_data_back_scores_low(tmp_path):
    def own(w):
        w["reader"].pop("rank_shift")
    c = run_changed("ior_random_task", tmp_path, own)
    assert c.row("shared_file_fraction") == (1.0, 0.0)
    assert c.score < 0.6, c.table


def test_o_direct_on_a_shared_file_from_the_read_back_rate():
    """IOR --posix.odirect on one shared file at 4 ranks: Darshan reduces the file's record over
    the ranks (rank -1), so which rank wrote and read what comes from the trace; each rank's
    own block read back at 0.3 GiB/s, no page cache's: posix_direct (buffered before)."""
    f = fit(log("ior_posix_direct_shared"))
    assert (f.workload["io"]["interface"], f.workload["io"]["layout"]) \
        == ("posix_direct", "shared")
    assert f.evidence["readback_rate"] < 2 << 30
    assert f.ranks == TRUTH["ior_posix_direct_shared"]["ranks"]


def test_syncs_after_every_collective_write():
    """IOR -a MPIIO -c -e -Y: 16 MPI_File_sync after the writes and 2 at close, as the replay
    makes them (io.write_fsync_per_write through MPI-IO)."""
    io = fit(log("ior_mpiio_fsync")).workload["io"]
    assert (io["interface"], io["write_fsync"], io["write_fsync_per_write"]) \
        == ("mpiio_coll", True, True)


@pytest.mark.parametrize("name", ["ior_posix_direct_shared", "ior_fpp_random_reps",
                                  "ior_mpiio_fsync", "ior_hdf5_coll_reorder",
                                  "mdtest_small_files"])
def test_more_ior_programs_replay(tmp_path, name):
    replay_like(name, tmp_path, bytes_rel=0)

"""Checkpoints written through MPI-IO and parallel HDF5, recovered by the fit from real logs,
written the same way by the replay and counted by compare at their layer.

mpiio_checkpoint_train: after every epoch both ranks write their contiguous 4 MiB share of an
8 MiB state into one shared file, by MPI_File_write_at_all calls of 1 MiB, then
MPI_File_sync. h5py_checkpoint_train: every 6 steps (0.75 of an epoch) both ranks create an
HDF5 file through the mpio driver and write their half of four datasets collectively (truth.json
holds both programs' parameters and counters)."""
import pytest

import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.replays.replay import replay

from fitted_runs import TRUTH, log, run_changed

pytestmark = pytest.mark.mpi      # its replays launch ranks under mpiexec


def test_mpiio_checkpoints_are_one_shared_file_written_collectively():
    t = TRUTH["mpiio_checkpoint_train"]["checkpoints"]
    f = analysis.fit(log("mpiio_checkpoint_train"))
    w = f.workload
    assert w["workflow"]["checkpoint"] is True
    assert w["model"]["model_size_bytes"] == t["bytes"]
    ck = w["checkpoint"]
    assert (ck["format"], ck["writers"]) == ("mpiio", "all")
    assert ck["collective_transfer_size"] == t["bytes_per_rank_per_call"]
    assert (ck["checkpoint_after_epoch"], ck["epochs_between_checkpoints"]) == (1, 1)
    assert ck["fsync"] is True
    e = f.evidence["checkpoint_writes"]
    assert (e["checkpoints"], e["files"], e["writer_ranks"]) == (t["count"], [1] * 3, [0, 1])
    assert (e["interface"], e["collective"]) == ("mpiio", True)
    assert e["write_calls"] == t["mpiio"]["MPIIO_COLL_WRITES"]
    assert e["epochs_done"] == pytest.approx(t["after_epochs"], abs=0.01)
    assert e["names"] == t["names"]
    # the checkpoint's MPI-IO says nothing of how the data was read: through POSIX
    assert w["io"]["interface"] == "posix"


def test_hdf5_checkpoints_are_one_shared_file_of_collective_h5dwrites():
    t = TRUTH["h5py_checkpoint_train"]["checkpoints"]
    f = analysis.fit(log("h5py_checkpoint_train"))
    w = f.workload
    assert w["model"]["model_size_bytes"] == t["bytes"]      # the tensors, not the metadata
    ck = w["checkpoint"]
    assert (ck["format"], ck["writers"]) == ("hdf5", "all")
    assert ck["collective_transfer_size"] == t["bytes_per_rank_per_call"]
    assert "fsync" not in ck
    e = f.evidence["checkpoint_writes"]
    assert (e["interface"], e["collective"]) == ("hdf5", True)
    assert e["datasets"] == [t["datasets_per_file"]] * t["count"]
    assert e["write_calls"] == t["h5d"]["H5D_WRITES"]
    assert e["names"] == t["names"]
    # every 0.75 epoch: every 6 of a rank's 8 steps an epoch (a read a sample, 2 a step)
    assert e["epochs_done"] == pytest.approx([0.75, 1.5, 2.25, 3.0], abs=0.01)
    assert ck["steps_between_checkpoints"] == 6
    assert any("4 datasets per checkpoint file" in n for n in f.notes)
    assert w["io"]["interface"] == "posix"


@pytest.mark.parametrize("name,layer", [("mpiio_checkpoint_train", "MPI-IO"),
                                        ("h5py_checkpoint_train", "HDF5")])
def test_replay_writes_the_checkpoints_through_the_same_layer(tmp_path, name, layer):
    t = TRUTH[name]["checkpoints"]
    r = replay(log(name), tmp_path / "replay")
    c = r.comparison
    assert r.score >= 0.95, c.table
    assert c.layer == layer
    assert c.row("checkpoint_files") == (t["count"],) * 2
    assert c.row("interfaces")[0] == c.row("interfaces")[1]
    assert r.emulated["bytes_written"] == r.real["bytes_written"] == t["count"] * t["bytes"]
    assert r.emulated["write_ops"] == r.real["write_ops"]
    assert r.emulated["files"] == r.real["files"]


@pytest.mark.parametrize("name", ["mpiio_checkpoint_train", "h5py_checkpoint_train"])
def test_a_replay_without_the_checkpoints_scores_low(tmp_path, name):
    def no_checkpoints(w):
        w["workflow"]["checkpoint"] = False
    c = run_changed(name, tmp_path, no_checkpoints)
    assert c.row("checkpoint_files")[1] == 0
    assert c.score < 0.6, c.table


@pytest.mark.parametrize("name", ["mpiio_checkpoint_train", "h5py_checkpoint_train"])
def test_posix_checkpoints_against_shared_ones_score_low(tmp_path, name):
    """The same bytes and cadence in a file per rank through POSIX: the interfaces part."""
    def file_per_rank(w):
        w["checkpoint"]["format"] = "file_per_rank"
    c = run_changed(name, tmp_path, file_per_rank)
    assert set(c.row("interfaces")[0]) != set(c.row("interfaces")[1])
    assert c.score < 0.6, c.table

"""Jobs that read no data file and wrote files of data-like names are fitted as checkpoint-only
workloads that read nothing back: IOR's write phase alone (a file per process through POSIX
with an fsync at close; one shared file of collective MPI-IO writes in two segments), and the
emulator's own checkpoint-only runs that write checkpoints one after the other into one
folder."""
import pytest

import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.replays.replay import replay

from fitted_runs import TRUTH, log

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec


def test_a_file_per_process_write_phase_is_one_checkpoint_of_every_rank():
    t = TRUTH["ior_write_only_fpp"]
    w = analysis.fit(log("ior_write_only_fpp")).workload
    assert w["workflow"] == {"generate_data": False, "train": False, "checkpoint": True}
    ck = w["checkpoint"]
    assert (ck["format"], ck["writers"], ck["fsync"]) == ("file_per_rank", "all", True)
    assert (ck["num_checkpoints_write"], ck["num_checkpoints_read"]) == (1, 0)
    assert ck["transfer_size"] == t["transfer_bytes"]
    assert w["model"]["model_size_bytes"] == t["bytes_written"]


def test_a_collective_write_phase_is_one_shared_mpiio_checkpoint():
    t = TRUTH["ior_write_only_shared"]
    f = analysis.fit(log("ior_write_only_shared"))
    ck = f.workload["checkpoint"]
    assert (ck["format"], ck["writers"]) == ("mpiio", "all")
    # 16 collective calls of 1 MiB a rank: as many calls as IOR's
    assert ck["collective_transfer_size"] == t["transfer_bytes"]
    assert (ck["num_checkpoints_write"], ck["num_checkpoints_read"]) == (1, 0)
    assert f.workload["model"]["model_size_bytes"] == t["bytes_written"]
    assert not any("read back" in n and "of 0 files" in n for n in f.notes)


@pytest.mark.parametrize("name", ["ior_write_only_fpp", "ior_write_only_shared"])
def test_a_write_phase_replays(tmp_path, name):
    t = TRUTH[name]
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.emulated["bytes_written"] == r.real["bytes_written"] == t["bytes_written"]
    assert r.emulated["bytes_read"] == r.real["bytes_read"] == 0
    assert r.emulated["write_ops"] == r.real["write_ops"]
    assert r.emulated["files"] == r.real["files"] == t["num_files"]


def test_checkpoints_written_one_after_the_other_into_one_folder_are_told_apart(emulate):
    """3 checkpoints of a model and an optimizer file a rank, none read back, all in one
    folder: a second file of a kind a rank already wrote starts the next checkpoint (they were
    one checkpoint of 12 files)."""
    out = emulate("workflow.train=false", "workflow.checkpoint=true",
                  "model.model_size_bytes=1m", "checkpoint.format=model_optimizer",
                  "checkpoint.writers=all", "checkpoint.optimizer_multiplier=2",
                  "checkpoint.num_checkpoints_write=3", "checkpoint.num_checkpoints_read=0",
                  "checkpoint.time_between_checkpoints=0")
    f = analysis.fit(out)
    ck = f.workload["checkpoint"]
    assert (ck["num_checkpoints_write"], ck["num_checkpoints_read"]) == (3, 0)
    assert (ck["format"], ck["writers"]) == ("model_optimizer", "all")
    assert f.evidence["checkpoint_writes"]["files"] == [4, 4, 4]
    assert f.workload["model"]["model_size_bytes"] == 1 << 20

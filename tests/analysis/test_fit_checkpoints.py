"""Checkpoints recovered by the fit from a real log (checkpoint_train: rank 0 saves a
torch.save-like file into global_epochN_stepM/ after every epoch), written by the replay and
counted by compare."""
import os

import pytest

import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.replays.replay import replay

from fitted_runs import TRUTH, log, run_changed

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec


def test_checkpoint_cadence_size_ranks_and_files():
    t = TRUTH["checkpoint_train"]["checkpoints"]
    f = analysis.fit(log("checkpoint_train"), output_folder="/scratch/out/run")
    w = f.workload
    assert w["workflow"]["checkpoint"] is True
    assert w["model"]["model_size_bytes"] == t["bytes"]
    ck = w["checkpoint"]
    assert (ck["checkpoint_after_epoch"], ck["epochs_between_checkpoints"]) == (1, 1)
    assert "steps_between_checkpoints" not in ck
    assert (ck["writers"], ck["format"]) == ("rank0", "file_per_rank")
    assert "fsync" not in ck
    # as many write calls per file as the real file took
    assert ck["transfer_size"] == -(-t["bytes"] // t["POSIX_WRITES_per_file"])
    assert ck["checkpoint_folder"] == "/scratch/out/checkpoints"
    e = f.evidence["checkpoint_writes"]
    assert (e["checkpoints"], e["files"], e["writer_ranks"]) == (t["count"], [1] * 3, [0])
    assert e["epochs_done"] == pytest.approx(t["after_epochs"], abs=0.01)
    assert e["names"] == [os.path.basename(n) for n in t["names"]]
    assert w["train"]["epochs"] == TRUTH["checkpoint_train"]["epochs"]


def test_a_job_without_checkpoints_fits_none():
    w = analysis.fit(log("python_train_reader")).workload
    assert "checkpoint" not in w and "checkpoint" not in w["workflow"]


def test_replay_writes_the_checkpoints(tmp_path):
    t = TRUTH["checkpoint_train"]
    r = replay(log("checkpoint_train"), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.emulated["bytes_written"] == r.real["bytes_written"] == t["posix"][
        "POSIX_BYTES_WRITTEN"]
    assert r.emulated["write_ops"] == r.real["write_ops"] == t["posix"]["POSIX_WRITES"]
    assert r.comparison.row("checkpoint_files") == (3, 3)
    assert r.emulated["files"] == r.real["files"]


def test_a_replay_without_the_checkpoints_scores_low(tmp_path):
    def no_checkpoints(w):
        w["workflow"]["checkpoint"] = False
    c = run_changed("checkpoint_train", tmp_path, no_checkpoints)
    assert c.row("checkpoint_files") == (3, 0)
    assert c.score < 0.6, c.table


@pytest.mark.parametrize("pattern,tensors", [("torch_zip", [50]), ("pieces", None)])
def test_how_checkpoints_were_read_back_is_fitted(emulate, pattern, tensors):
    """A checkpoint-only run of the emulator, 2 checkpoints written, the first (a file a rank)
    read back as torch.load reads a zip (of 50 tensors: its central directory is read in calls of more than 4 KiB, no tensor's) or
    in pieces: the fit gives the same read pattern and tensor count."""
    out = emulate("workflow.train=false", "workflow.checkpoint=true",
                  "model.model_size_bytes=4m", "checkpoint.writers=all",
                  "checkpoint.num_checkpoints_write=2", "checkpoint.num_checkpoints_read=1",
                  f"checkpoint.read_pattern={pattern}",
                  *([f"checkpoint.tensors_per_file=[{tensors[0]}]"] if tensors else []))
    ck = analysis.fit(out).workload["checkpoint"]
    assert ck.get("read_pattern", "pieces") == pattern
    assert ck.get("tensors_per_file") == tensors


def test_safetensors_checkpoints_after_each_epoch():
    """safetensors.torch.save_file after each epoch (a temporary name renamed into place, 3
    writes: the header and the tensors), the last read back by a memory map Darshan cannot
    see: 3 checkpoints of the file's bytes by the one process, none read back."""
    name = "safetensors_epoch_checkpoints"
    f = analysis.fit(log(name))
    w = f.workload
    ck = w["checkpoint"]
    assert f.ranks == 1 and w["train"]["epochs"] == 3
    assert (ck["checkpoint_after_epoch"], ck["epochs_between_checkpoints"]) == (1, 1)
    assert w["model"]["model_size_bytes"] == 16783224
    assert ck.get("num_checkpoints_read", 0) == 0


def test_a_stream_written_checkpoint_synced_through_its_descriptor(tmp_path):
    """A C program's checkpoint: 4 fwrite calls of 4 MiB, fflush, then fsync(fileno(fp)).
    Darshan counts the writes at STDIO and the fsync in a POSIX record of the file that wrote
    no bytes (fitted before without checkpoint.fsync: syncs 1 against 0). The emulator's stream
    sync is the same two calls, its op log a flush at STDIO and an fsync at POSIX."""
    name = "c_pread_two_passes_ckpt_fsync_2r"
    ck = analysis.fit(log(name)).workload["checkpoint"]
    assert (ck["write_pattern"], ck["transfer_size"], ck["fsync"]) \
        == ("stream", 4 << 20, True)
    r = replay(log(name), tmp_path / "replay")
    assert r.comparison.row("syncs") == (1, 1)
    assert r.comparison.row("checkpoint_files") == (1, 1)

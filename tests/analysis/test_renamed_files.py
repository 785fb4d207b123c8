"""A file written under a temporary name and renamed to a name the job opened again is one file
(dlio_mpi_analysis.loading.renamed_files): the emulator's checkpoints, written as ``NAME.part``,
renamed and read back by ``NAME``, counted as the real job's torch.save and torch.load files
are; a temporary file whose final name the job never opened stays as it is."""
import pytest

import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.loading.renamed_files import final_name, renamed_datasets, renamed_ids

from fitted_runs import TRUTH, log

pytestmark = pytest.mark.mpi      # its runs launch ranks under mpiexec

MODEL = 1 << 20
CHECKPOINT_ONLY = ("workflow.train=false", "workflow.checkpoint=true",
                   f"model.model_size_bytes={MODEL}", "checkpoint.format=model_optimizer",
                   "checkpoint.writers=all", "checkpoint.optimizer_multiplier=2",
                   "checkpoint.num_checkpoints_write=2", "checkpoint.num_checkpoints_read=1",
                   "checkpoint.time_between_checkpoints=0")


def test_final_name_of_temporary_names():
    assert final_name("/c/ckpt-000001-r000000.model.bin.part") == "/c/ckpt-000001-r000000.model.bin"
    assert final_name("/c/model.pt.tmp") == "/c/model.pt"
    assert final_name("/c/ckpt.h5.part:/checkpoint") == "/c/ckpt.h5:/checkpoint"
    assert final_name("/c/model.pt") is None and final_name("/c/partial.bin") is None


def test_only_a_temporary_name_whose_final_name_was_opened_is_joined():
    names = {1: "/c/a.pt.part", 2: "/c/a.pt", 3: "/c/b.pt.part", 4: "/c/c.pt.tmp", 5: "/c/c.pt"}
    # c.pt is named but has no record: the job never opened it
    assert renamed_ids(names, {1, 2, 3, 4}) == {1: 2}


def test_a_dataset_written_in_a_renamed_file_follows_its_file():
    """An HDF5 checkpoint written as ckpt-1.h5.part and renamed: Darshan's records of the file
    are joined to ckpt-1.h5 (the job stat'ed it), its dataset's record, of a final name no record
    has, takes the final file's name; otherwise its bytes stay under a file whose own records are
    gone, counted as one more file (3 files and 192 MiB written for a parallel HDF5
    checkpoint-only run's 2 and 128 MiB)."""
    names = {1: "/c/ckpt-0.h5.part", 2: "/c/ckpt-0.h5", 3: "/c/ckpt-0.h5.part:/checkpoint",
             4: "/c/ckpt-0.h5:/checkpoint", 5: "/c/ckpt-1.h5.part", 6: "/c/ckpt-1.h5",
             7: "/c/ckpt-1.h5.part:/checkpoint", 8: "/c/ckpt-2.h5.part:/checkpoint",
             9: "/c/ckpt-2.h5.part"}
    aliases = renamed_ids(names, set(names))
    assert aliases == {1: 2, 3: 4, 5: 6}
    # ckpt-1's dataset follows its file; ckpt-2, never renamed, keeps its name
    assert renamed_datasets(names, aliases) == {7: "/c/ckpt-1.h5:/checkpoint"}


def test_checkpoints_written_renamed_and_read_back_are_one_file_each(emulate):
    """2 ranks, 2 checkpoints of a model and an optimizer file a rank, the first read back:
    8 files, the 4 read back written and read under one name (not 8 .part files and 4 more)."""
    out = emulate(*CHECKPOINT_ONLY)
    c = analysis.characterize(out, dxt=True)
    assert c.totals.files.total == 8
    # the second checkpoint, never read back, keeps its temporary names
    assert sorted(n.rsplit("/", 1)[1] for n in c.names.values() if n.endswith(".part")) \
        == sorted(f"ckpt-000001-r00000{r}.{part}.bin.part" for part in ("model", "optim")
                  for r in (0, 1))
    read_back, only_written = c.file_roles["data"], c.file_roles["checkpoint"]
    assert (read_back["files"], only_written["files"]) == (4, 4)
    # each file read back is the file written: its bytes written and read alike
    assert read_back["bytes_written"] == read_back["bytes_read"] == MODEL + 2 * MODEL
    assert only_written["bytes_read"] == 0
    # the trace's rows follow their records
    ids = {int(i) for i in c.records["POSIX"]["id"]}
    assert {int(i) for i in c.dxt_segments["DXT_POSIX"]["id"]} == ids


def test_checkpoints_never_read_back_keep_their_temporary_names(emulate):
    out = emulate(*CHECKPOINT_ONLY[:-2], "checkpoint.num_checkpoints_read=0",
                  "checkpoint.time_between_checkpoints=0")
    c = analysis.characterize(out)
    assert c.totals.files.total == 8
    assert len([n for n in c.names.values() if n.endswith(".part")]) == 8
    assert c.file_roles["checkpoint"]["files"] == 8 and "data" not in c.file_roles


def test_replay_of_the_checkpoint_only_job_counts_its_files(tmp_path):
    """The DLIO benchmark's checkpoint-only mode: torch.save wrote 12 files, torch.load read 4 of
    them back; the replay counted 16 files (its 12 .part names and the 4 read back) and 12
    checkpoint files for 8."""
    from dlio_mpi_analysis.replays.replay import replay

    r = replay(log("dlio_ckpt_only"), tmp_path / "replay")
    assert r.real["files"] == TRUTH["dlio_ckpt_only"]["posix"]["files"]
    assert r.emulated["files"] == r.real["files"]
    assert r.comparison.row("checkpoint_files") == (8, 8)

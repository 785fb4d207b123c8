"""reader.epoch_overrun: after each epoch's last step the next epoch's first batches are read
and dropped (a prefetching input pipeline over a repeated dataset reading on before its
iterator is dropped); every epoch still reads each of its samples once."""
import numpy as np
import pytest

from dlio_mpi.config import loader as config
from datautil import load_npz, own_summary
from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

BASE = ["workload=default", "dataset.format=tfrecord", "dataset.num_files_train=8",
        "dataset.num_samples_per_file=1", "dataset.record_length=8192", "reader.access=stream",
        "reader.batch_size=1", "reader.read_threads=0", "reader.transfer_size=8208",
        "reader.eof_reads=1", "io.interface=posix", "train.epochs=2", "reader.sample_shuffle=off",
        "train.computation_time=0"]


def starts(z, i):
    """The files whose start (a read at offset 0 of some bytes) phase i read, in order."""
    op, off, nb, fid = (z[f"e{i}_{k}"] for k in ("op", "offset", "bytes", "file"))
    mine = (op == 0) & (off == 0) & (nb > 0)
    return fid[mine].tolist()


@pytest.mark.parametrize("shuffle", ["off", "seed"])
def test_the_next_epochs_first_batches_are_read_after_each_epoch(tmp_path, shuffle):
    args = BASE + [f"dataset.data_folder={tmp_path}/d", f"output.folder={tmp_path}/o",
                   "io.keep_oplog=true", "reader.epoch_overrun=3",
                   f"reader.file_shuffle={shuffle}", "train.seed_change_epoch=true"]
    run_mpi(2, "run_cli.py", "run", *args[1:], timeout=240)
    s = own_summary(tmp_path / "o")
    assert s["steps_per_epoch"] == 4
    for r in range(2):
        z = load_npz(tmp_path / "o" / "latest" / f"oplog_rank{r:05d}.npz")
        names = z["phases"].tolist()
        assert names == ["train0", "overrun0", "train1", "overrun1"]
        train0, over0, train1, over1 = (starts(z, i) for i in range(4))
        # each epoch its rank's 4 files once; then the next epoch's first 3 files
        assert len(set(train0)) == len(train0) == len(set(train1)) == len(train1) == 4
        assert over0 == train1[:3]
        assert len(set(over1)) == len(over1) == 3
        if shuffle == "off":
            assert train0 == train1 == list(range(r, 8, 2)) and over1 == train0[:3]
        else:
            assert train0 != train1     # a new file order each epoch


@pytest.mark.parametrize("overrides", [["reader.read_threads=2"], ["io.read_type=memory"]])
def test_an_overrun_needs_the_ranks_own_reads(overrides):
    with pytest.raises(config.ConfigError) as e:
        config.load(BASE + ["reader.epoch_overrun=2"] + overrides)
    assert "reader.epoch_overrun=2" in str(e.value) and "\n" not in str(e.value)

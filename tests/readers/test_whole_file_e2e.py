"""reader.whole_file: a sample's file read whole in one call from its start, header included
(a reader that loads the file and parses it in memory, as the DLIO benchmark's O_DIRECT NPY
reader does), by the rank's own thread and by read-ahead threads."""
import os

import pytest

from dlio_mpi.config import loader as config
from datautil import load_npz, own_summary
from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

BASE = ["workload=default", "dataset.format=npy", "dataset.num_files_train=8",
        "dataset.num_samples_per_file=1", "dataset.record_length=65536",
        "reader.batch_size=2", "reader.sample_shuffle=off", "reader.whole_file=true",
        "io.interface=posix", "train.epochs=2", "train.computation_time=0"]


@pytest.mark.parametrize("extra", [["reader.read_threads=0", "reader.reopen=true"],
                                   ["reader.read_threads=0"], ["reader.read_threads=2"]])
def test_every_file_read_whole_from_its_start_once_an_epoch(tmp_path, extra):
    args = BASE + extra + [f"dataset.data_folder={tmp_path}/d", f"output.folder={tmp_path}/o",
                           "io.keep_oplog=true"]
    run_mpi(2, "run_cli.py", "run", *args[1:], timeout=240)
    own_summary(tmp_path / "o")
    size = os.path.getsize(tmp_path / "d" / "train" / "img_0000000_of_8.npy")
    assert size > 65536                 # the header's bytes besides the sample's
    for e in range(2):
        assert sorted(_whole_reads(tmp_path, e, {size})) == list(range(8))   # once an epoch


def _whole_reads(tmp_path, epoch, sizes, tail=None):
    """The files both ranks read whole in ``epoch`` (one entry a read from the file's start,
    of a size in ``sizes``); every other read is Python's f.read() closing read at offset
    ``tail`` (none without it)."""
    seen = []
    for r in range(2):
        z = load_npz(tmp_path / "o" / "latest" / f"oplog_rank{r:05d}.npz")
        op, off, nb, fid = (z[f"e{epoch}_{k}"] for k in ("op", "offset", "bytes", "file"))
        reads = op == 0
        assert set(nb[reads & (off == 0)].tolist()) <= set(sizes)
        assert set(off[reads & (off != 0)].tolist()) <= ({tail} if tail else set())
        seen += fid[reads & (off == 0)].tolist()
    return seen


@pytest.mark.parametrize("threads", [0, 2])
def test_a_file_of_two_samples_read_whole_for_each(tmp_path, threads):
    """The DLIO benchmark's O_DIRECT NPY reader on files of 2 samples: each sample's load
    reads its file whole, so each file is read whole twice an epoch."""
    args = BASE + [f"reader.read_threads={threads}", "dataset.num_samples_per_file=2",
                   f"dataset.data_folder={tmp_path}/d", f"output.folder={tmp_path}/o",
                   "io.keep_oplog=true"]
    run_mpi(2, "run_cli.py", "run", *args[1:], timeout=240)
    own_summary(tmp_path / "o")
    size = os.path.getsize(tmp_path / "d" / "train" / "img_0000000_of_8.npy")
    assert size > 2 * 65536
    for e in range(2):
        assert sorted(_whole_reads(tmp_path, e, {size})) == sorted(list(range(8)) * 2)


@pytest.mark.parametrize("overrides", [["io.layout=shared", "dataset.num_files_train=1"],
                                       ["reader.access=numpy"]])
def test_whole_files_need_ranges_of_a_file_per_rank(overrides):
    with pytest.raises(config.ConfigError) as e:
        config.load(BASE + overrides)
    assert "reader.whole_file" in str(e.value) and "\n" not in str(e.value)


def test_each_sample_of_a_file_reads_it_whole_through_python(tmp_path):
    """reader.access=file with 4 samples a file (a zarr chunk read for each row it holds):
    every sample's read is Python's f.read() of its whole file, so each file is read whole 4
    times an epoch, in the samples' shuffled order."""
    args = ["dataset.format=raw", "dataset.num_files_train=8", "dataset.num_samples_per_file=4",
            "dataset.record_length=4096", "reader.batch_size=4", "reader.sample_shuffle=seed",
            "reader.access=file", "reader.transfer_size=0", "io.interface=posix",
            "train.epochs=2", "train.computation_time=0", "reader.read_threads=0",
            f"dataset.data_folder={tmp_path}/d", f"output.folder={tmp_path}/o",
            "io.keep_oplog=true"]
    run_mpi(2, "run_cli.py", "run", *args, timeout=240)
    own_summary(tmp_path / "o")
    sizes = {os.path.getsize(p) for p in (tmp_path / "d" / "train").iterdir()}
    assert sizes == {4 * 4096}
    size = 4 * 4096
    for e in range(2):      # f.read() asks for a byte more than the file, then reads its end
        whole = _whole_reads(tmp_path, e, {size, size + 1}, tail=size)
        assert sorted(whole) == sorted(list(range(8)) * 4)     # 4 whole reads a file

"""Reader.plan_epoch, before an epoch's barrier: the indexes of the epoch's files, where the
format's layout gives them without I/O, are computed there and not inside the epoch's steps;
where a file's index is read from its headers (the application's I/O), nothing is done."""
import numpy as np

from dlio_mpi import formats
from dlio_mpi.config import loader as config
from dlio_mpi.data.dataset import Dataset


def dataset(tmp_path, fmt, files=64, spf=4):
    # the data folder is never written: an index computed here was computed without I/O
    cfg = config.load([f"dataset.format={fmt}", f"dataset.num_files_train={files}",
                       f"dataset.num_samples_per_file={spf}", "dataset.record_length=4096",
                       "dataset.record_length_stdev=512",
                       f"dataset.data_folder={tmp_path / 'absent'}"])
    return Dataset(cfg, "train")


def test_computed_layouts_are_cached_without_io(tmp_path):
    d = dataset(tmp_path, "tfrecord")
    files = np.array([5, 3, 9, 3], dtype=np.int64)
    assert d.compute_indexes(files) == 3                  # each file once
    assert sorted(d._indexes) == [3, 5, 9]
    for f in (3, 5, 9):                                   # the index the format gives
        want = formats.layout(d.spec, f)
        assert np.array_equal(d._indexes[f].offsets, want.offsets)
        assert np.array_equal(d._indexes[f].lengths, want.lengths)
    assert d.compute_indexes(files) == 0                  # already cached
    assert not (tmp_path / "absent").exists()


def test_more_files_than_the_cache_holds_are_left_to_the_steps(tmp_path):
    d = dataset(tmp_path, "tfrecord", files=64)
    d.CACHE_FILES = 8
    assert d.compute_indexes(np.arange(9)) == 0 and not d._indexes
    assert d.compute_indexes(np.arange(8)) == 8
    d.CACHE_SAMPLES = 4 * 8 - 1                           # the samples bound too
    d._indexes.clear()
    assert d.compute_indexes(np.arange(8)) == 0 and not d._indexes


def test_indexes_read_from_headers_are_not_touched(tmp_path):
    # an NPZ directory is read from the file (numpy reads it): the file does not exist, so
    # any attempt would raise
    d = dataset(tmp_path, "npz")
    assert d.compute_indexes(np.arange(4)) == 0 and not d._indexes

"""Encoded JPEG images kept as variable-length bytes in one HDF5 file (real logs in
tests/fixtures/darshan/torch_h5py_vlen_jpeg_workers2: a DataLoader's 2 forked workers new each
epoch reading ds[i] and its label, decoding with PIL; truth in truth.json). The H5Dread calls
moved the rows' 16-byte descriptors, the sequences came from libhdf5's global heap beneath
them (before: a sample of 24 bytes, 0.60)."""
import pytest

import dlio_mpi_analysis as analysis
from fitted_runs import TRUTH, log, replay_like, run_changed

pytestmark = pytest.mark.mpi      # its replays launch ranks under mpiexec

NAME = "torch_h5py_vlen_jpeg_workers2"


def test_a_sample_is_a_sequence_from_the_heap():
    f = analysis.fit(log(NAME))
    w, t = f.workload, TRUTH[NAME]
    ds, rd = w["dataset"], w["reader"]
    assert (f.ranks, rd["read_threads"], w["train"]["epochs"]) \
        == (t["ranks"], t["read_threads"], t["epochs"])
    assert (ds["format"], ds["num_files_train"], ds["num_samples_per_file"]) \
        == ("hdf5", t["num_files"], t["samples_per_file"])
    assert ds["hdf5_vlen"] is True and rd["hdf5_reads"] == "sample"
    assert ds["hdf5_fields"] == [{"name": "labels", "bytes": 8, "dtype": "int64"}]
    # the sequence (its label beside it): the JPEG's mean bytes, within 1 %
    assert ds["record_length"] - 8 == pytest.approx(t["sample_bytes"], rel=0.01)
    # the images range from 17 KB to 57 KB
    assert 6000 < ds["record_length_stdev"] < 12000
    vlen = f.evidence["hdf5_vlen_reads"]
    assert (vlen["dataset"], vlen["rows"]) == ("images", 256)


def test_fixed_rows_of_16_bytes_are_no_sequences():
    """A dataset of 16-byte elements whose file moved no more beneath its reads (IOR's and
    h5bench's rows, compound records) is no variable-length one."""
    for name in ("h5bench_contig_coll_read", "py_h5py_compound", "dlio_hdf5"):
        assert "hdf5_vlen" not in analysis.fit(log(name)).evidence, name


def test_replay_and_fixed_rows(tmp_path):
    replay_like(NAME, tmp_path, bytes_rel=0.05)

    def rows(w):
        del w["dataset"]["hdf5_vlen"]
        w["dataset"].pop("record_length_stdev", None)
    (tmp_path / "wrong").mkdir()
    wrong = run_changed(NAME, tmp_path / "wrong", rows)
    assert wrong.score < 0.6, wrong.table

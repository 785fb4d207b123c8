"""A sample kept in several HDF5 datasets of one file, read together (real logs, Darshan 3.5.0
with DXT, truth in truth.json): an image and its label read for each item by a DataLoader's
workers, the DLIO benchmark's records split into 3 datasets (num_dset_per_record), against a
file's datasets read one after another (IOR's segments), which are no fields."""
import pytest

import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.replays.replay import replay

from fitted_runs import fitted_shape, log, replay_like

pytestmark = pytest.mark.mpi      # its replays launch ranks under mpiexec


def test_an_image_and_its_label_read_for_each_item(tmp_path):
    """2 forked workers read images[i] (3,072 B) and labels[i] (8 B) of one contiguous file:
    the label a field of the sample, 3,080 bytes in all, read after the image; the replay
    makes the label's reads to the file's end too (0.895 before: 2,064 reads for 4,132)."""
    name = "torch_h5py_images_labels_workers2"
    f, w = fitted_shape(name, "sample_bytes", "read_threads")
    assert w["dataset"]["hdf5_fields"] == [{"name": "labels", "bytes": 8, "dtype": "int64"}]
    r = replay_like(name, tmp_path, bytes_rel=0.02)
    assert r.emulated["read_ops"] == pytest.approx(r.real["read_ops"], rel=0.02)


def test_a_record_split_in_three_datasets(tmp_path):
    """The DLIO benchmark's HDF5 reader reads records_0[i], records_1[i], records_2[i] for a
    sample, the file opened for each: a sample of 3 x 3,072 bytes, 4 a file, batch 2, the
    file reopened per sample (12 samples of 3,072 bytes a file, batch 6 and a shuffled order
    before: the replay scored 0.000)."""
    name = "dlio_hdf5_three_datasets_2r"
    f, w = fitted_shape(name, "sample_bytes")
    assert w["dataset"]["hdf5_fields"] == [
        {"name": "records_1", "bytes": 3072, "dtype": "uint8"},
        {"name": "records_2", "bytes": 3072, "dtype": "uint8"}]
    assert w["reader"]["reopen"] is True and w["reader"]["sample_shuffle"] == "off"
    replay_like(name, tmp_path, bytes_rel=0.05)


@pytest.mark.filterwarnings("ignore::dlio_mpi_analysis.errors.HeatmapMismatchWarning")
@pytest.mark.parametrize("name", ["ior_hdf5_fpp_two_segments_2r", "ior_hdf5_coll_reorder"])
def test_datasets_read_one_after_another_are_no_fields(name):
    """IOR writes and reads a dataset a segment, one after the other: as many reads of each,
    of the same size, but one's reads over before the other's begin (in a process, or, in a
    shared file's record of all ranks, windows far from coinciding): parts of the rows, no
    fields."""
    f = analysis.fit(log(name))
    assert "hdf5_fields" not in f.workload["dataset"]
    assert "hdf5_fields" not in f.evidence


def test_a_netcdf_files_metadata_reads_are_no_share_of_a_step(tmp_path):
    """h5netcdf in 2 forked workers, x[i] of a netCDF-4 file: about 15 metadata reads at each
    open (dimensions, attributes) between the sieve buffer's 64 KiB fills weigh nothing in a
    step's samples (batch 3 for 4 before: 512 samples over 720 reads); the dimension scales,
    opened but never read, are no fields."""
    name = "h5netcdf_workers2"
    f, w = fitted_shape(name, "sample_bytes", "read_threads")
    assert "hdf5_fields" not in w["dataset"]


def test_a_replay_without_the_labels_is_told_apart(tmp_path):
    """The same workload with its label field dropped (the images alone, a dataset a file):
    half the job's reads, their sizes moved up a bucket: scored well under the right shape
    (0.90 against 0.99)."""
    from fitted_runs import run_changed

    name = "h5py_images_labels_shuffled"

    def images_alone(w):
        del w["dataset"]["hdf5_fields"]
    wrong = run_changed(name, tmp_path, images_alone)
    real, emulated = wrong.row("read_ops")
    assert emulated < 0.6 * real
    assert wrong.score < 0.93


def test_gzip_images_in_chunks_of_8_beside_their_labels(tmp_path):
    """A log outside the fits' making: 2 forked workers read images[i] (4 KiB rows, gzip, 8
    rows a chunk, each chunk inflated again for every row: the dataset opened per read) and
    labels[i]: a sample of 4,104 bytes, the label a field, chunks of 8 samples."""
    name = "torch_h5py_gzip_images_labels_workers2"
    f, w = fitted_shape(name, "sample_bytes")
    ds = w["dataset"]
    assert ds["hdf5_fields"] == [{"name": "labels", "bytes": 8, "dtype": "int64"}]
    assert (ds["compression"], ds["chunk_size"] // ds["record_length"]) == ("gzip", 8)
    replay_like(name, tmp_path, bytes_rel=0.05)


def test_a_record_in_two_chunked_datasets(tmp_path):
    """The DLIO benchmark's hdf5 on 3 ranks, each record split in 2 datasets of 8 KiB rows in
    chunks of 2 rows: the rows' dataset chunked as its fields are, 2 rows a chunk (32,768
    bytes of whole samples; before: the chunk taken for one sample counting its field, so
    the rows' dataset contiguous, libhdf5 reading to its end: 0.955)."""
    name = "dlio_hdf5_two_datasets_chunked_3r"
    f = analysis.fit(log(name))
    ds = f.workload["dataset"]
    assert ds["record_length"] == 16384 and ds["chunk_size"] == 2 * 16384
    assert ds["hdf5_fields"] == [{"name": "records_1", "bytes": 8192, "dtype": "uint8",
                                  "chunk_rows": 2}]
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.97, r.comparison.table
    assert r.emulated["read_ops"] == pytest.approx(r.real["read_ops"], rel=0.02)


def test_a_chunk_a_sample_read_whole(tmp_path):
    """3 forked workers read x[i] of a (1024, 3, 64, 64) float32 dataset in chunks of one
    sample: each read a whole 48 KiB chunk. Chunked, a chunk a sample (before: contiguous,
    libhdf5's 64 KiB sieve reads instead, bytes +33 %, 0.960)."""
    name = "torch_h5py_4d_chunked_workers3"
    f, w = fitted_shape(name, "sample_bytes", "read_threads")
    assert w["dataset"]["chunk_size"] == 49152 and w["dataset"]["enable_chunking"] is True
    replay_like(name, tmp_path, bytes_rel=0.03)


def test_batches_of_scattered_rows_with_their_labels(tmp_path):
    """mpi4py ranks read x[sorted(idx)] and y[sorted(idx)] for 16 shuffled rows a step:
    libhdf5 reads each x row on its own (4,096 B), each H5Dread a batch's union; the sample
    is a row with its label (4,104 B), 2,048 a file, batch 16, shuffled (fitted before as
    128 samples of 16 rows and their labels, batch 1, in order: the label's bytes hid the
    rows' union)."""
    name = "h5py_mpio_xy_scattered_batches_2r"
    f, w = fitted_shape(name)
    ds, rd = w["dataset"], w["reader"]
    assert ds["record_length"] == 4096 + 8
    assert ds["hdf5_fields"] == [{"name": "y", "bytes": 8, "dtype": "int64"}]
    assert f.evidence["h5d_scattered_rows"]["rows"] == 16
    assert (rd["sample_shuffle"], rd["hdf5_reads"] if "hdf5_reads" in rd else "batch") \
        == ("seed", "batch")
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.emulated["read_ops"] == r.real["read_ops"]
    assert r.emulated["bytes_read"] == pytest.approx(r.real["bytes_read"], rel=0.01)

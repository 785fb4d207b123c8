"""Fit and replay of small programs' logs (tests/fixtures/darshan, Darshan 3.5.0 with DXT, 2
ranks, the programs beside them, truth in truth.json) that read their data as no fixture before:
one preadv of a batch's records in each rank's half of a shared file, numpy.fromfile with an
offset (a POSIX open and seek, the read through C stdio), and h5py reading a sample's image and
label from two datasets of a contiguous file (libhdf5's sieve buffer reading 64 KiB about each),
POSIX aio with reads in flight over the compute pauses, zarr's chunk files, h5py behind its chunk
cache, and PIL's loads of JPEG files smaller than its request."""
import pytest

import dlio_mpi_analysis as analysis

from fitted_runs import TRUTH, log, replay_like, run_changed

pytestmark = pytest.mark.mpi      # the replays launch ranks under mpiexec


def test_a_ranks_half_read_in_order_through_a_shared_record():
    """Darshan reduced the shared file's record over the ranks: its counters count rank 1's
    first read, half way in, and each epoch's new pass as jumps back (fitted as a shuffle,
    0.52); the trace shows each rank's half read in order, a pass an epoch."""
    f = analysis.fit(log("c_preadv_batches"))
    w = f.workload
    assert (w["reader"]["sample_shuffle"], w["io"]["layout"]) == ("off", "shared")
    assert w["train"]["epochs"] == TRUTH["c_preadv_batches"]["epochs"]


def test_numpy_fromfile_reads_through_stdio():
    """numpy.fromfile leaves POSIX records of its opens and seeks and no read: the read size is
    STDIO's (1-byte samples before, 0.18), and POSIX, which moved no byte, is no interface of
    the data."""
    t = TRUTH["py_fromfile_offsets"]
    f = analysis.fit(log("py_fromfile_offsets"))
    ds, io = f.workload["dataset"], f.workload["io"]
    assert (ds["num_files_train"], ds["num_samples_per_file"], ds["record_length"]) \
        == (t["num_files"], t["samples_per_file"], t["sample_bytes"])
    assert io["interface"] == "stdio"


def test_a_sample_of_two_datasets_under_the_sieve_buffer():
    """256 rows of a 4 KiB image and an 8-byte label, two H5Dread a sample: a sample is one read
    of each (4104 bytes); the epochs are the H5Dread bytes over the datasets' (libhdf5 read 15
    times more beneath them: 30 epochs before); a step's samples are its reads' share of them
    (batch 479 before)."""
    t = TRUTH["py_h5py_compound"]
    f = analysis.fit(log("py_h5py_compound"))
    w = f.workload
    assert (w["dataset"]["num_files_train"], w["dataset"]["num_samples_per_file"],
            w["dataset"]["record_length"]) == (t["num_files"], t["samples_per_file"], 4104)
    assert (w["train"]["epochs"], w["reader"]["batch_size"]) == (t["epochs"], t["batch_size"])
    assert f.evidence["h5d_epochs"] == t["epochs"]


def test_pauses_of_reads_in_flight_are_the_submissions():
    """POSIX aio, 4 reads in flight, a 10 ms pause every 8 records: Darshan times an aio read
    from aio_read to aio_return, so reads in flight cover the pauses (batch 20 before, 0.84);
    the pauses of the submissions, start to start, cut even batches of 8."""
    t = TRUTH["c_aio_reads"]
    w = analysis.fit(log("c_aio_reads")).workload
    assert (w["reader"]["batch_size"], w["reader"]["read_threads"]) == (8, 4)
    assert (w["dataset"]["num_samples_per_file"], w["dataset"]["record_length"]) \
        == (t["samples_per_file"], t["sample_bytes"])
    assert w["train"]["computation_time"] == pytest.approx(0.01, rel=0.2)


def test_chunk_files_in_numeric_order():
    """zarr's chunk files c/0/0/0, c/1/0/0 .. c/10/0/0, each rank its half in order: in order
    with their numbers taken as numbers (as strings, c/10 comes before c/2: a shuffle, 0.55)."""
    f = analysis.fit(log("zarr_chunks"))
    assert f.evidence["files_in_name_order"] is True
    assert f.workload["reader"]["sample_shuffle"] == "off"
    assert f.workload["dataset"]["num_files_train"] == 32


def test_rows_from_the_datasets_and_a_batch_that_keeps_files_to_their_rank():
    """A chunked dataset of 1024 rows a file, most reads served by libhdf5's chunk cache: the
    rows are the datasets' bytes over a row's (1028 from the file's size before, metadata
    counted), and a batch the reads cannot show (28) lowered to one that divides a rank's
    share (16), so that each file stays one rank's (a shared file halved the score)."""
    t = TRUTH["h5py_chunk_cache"]
    w = analysis.fit(log("h5py_chunk_cache")).workload
    assert (w["dataset"]["num_samples_per_file"], w["dataset"]["record_length"]) \
        == (t["samples_per_file"], t["sample_bytes"])
    assert w["reader"]["batch_size"] == t["batch_size"]


def test_images_smaller_than_pils_request():
    """PIL asks a 64 KiB block of files of about 50 KB: the second read reaches the file's
    end, whatever the request (taken as the file's size, the image pattern did not match:
    0.36 with raw samples and no shuffle)."""
    f = analysis.fit(log("torch_imagefolder_ddp"))
    assert (f.workload["dataset"]["format"], f.workload["reader"]["access"]) == ("jpeg", "image")
    assert f.evidence["image_reads"] == {"buffer_size": 4096, "request": 65536}


@pytest.mark.parametrize("name", ["c_preadv_batches", "py_fromfile_offsets",
                                  "py_h5py_compound", "c_aio_reads", "zarr_chunks",
                                  "h5py_chunk_cache", "torch_imagefolder_ddp"])
def test_replay_looks_like_the_real_program(tmp_path, name):
    replay_like(name, tmp_path, bytes_rel=0.05)


def test_a_shuffled_replay_of_the_halves_read_in_order_scores_low(tmp_path):
    def shuffled(w):
        w["reader"]["sample_shuffle"] = "seed"
    c = run_changed("c_preadv_batches", tmp_path, shuffled)
    assert c.score < 0.6, c.table

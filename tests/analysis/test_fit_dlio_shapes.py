"""Fit, replay and wrong shapes on logs of the DLIO benchmark's shapes the other fixtures do not
have (tests/fixtures/darshan, Darshan 3.5.0 with DXT, 2 ranks, truth in truth.json): an LLM's
checkpoints of a model file and an optimizer file per rank between training steps, its
checkpoint-only mode (with a checkpoint read back, and with none), checkpoints every N steps of
each epoch, files in subfolders read in the order of their base names, a Megatron-like indexed binary file beside its index files, CSV files
loaded whole by each sample, NPY files under DLIO's shuffle settings, and an HDF5 job whose
forked loader workers made every read (an MPI-mode log without a record)."""
import pytest

import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.errors import FitError
from dlio_mpi_analysis.replays.replay import replay

from fitted_runs import TRUTH, log, replay_like, run_changed

pytestmark = pytest.mark.mpi      # its replays launch ranks under mpiexec


def _data_shape(name):
    f = analysis.fit(log(name))
    w = f.workload
    ds, rd, io = w["dataset"], w["reader"], w["io"]
    t = TRUTH[name]
    assert f.ranks == t["ranks"]
    assert (ds["format"], ds["num_files_train"], ds["num_samples_per_file"], io["layout"]) \
        == (t["format"], t["num_files"], t["samples_per_file"], t["layout"])
    assert ds["record_length"] == pytest.approx(t["sample_bytes"], rel=0.05)
    assert (rd["batch_size"], rd["read_threads"]) == (t["batch_size"], t["read_threads"])
    assert rd["sample_shuffle"] == "off"      # DLIO's PyTorch path reads each rank's range in order
    return f, w


def test_llm_checkpoints_of_a_model_file_and_optimizer_shards():
    """ZeRO stage 1: rank 0 saves the weights, every rank its optimizer shard, every 2 steps;
    fitted before as 2 files per rank of equal shares (12 checkpoint files replayed as 8, the
    rank imbalance lost)."""
    t = TRUTH["dlio_llm_ckpt"]
    f, w = _data_shape("dlio_llm_ckpt")
    ck, c = w["checkpoint"], t["checkpoints"]
    assert w["train"]["epochs"] == t["epochs"]
    assert (ck["format"], ck["writers"], ck["optimizer_writers"]) \
        == ("model_optimizer", c["model_writers"], c["optimizer_writers"])
    assert w["model"]["model_size_bytes"] == c["model_bytes"]
    assert round(c["model_bytes"] * ck["optimizer_multiplier"]) == c["optimizer_bytes"]
    assert ck["steps_between_checkpoints"] == c["steps_between"]
    assert f.evidence["checkpoint_writes"]["checkpoints"] == c["count"]
    assert f.evidence["checkpoint_writes"]["files"] == [c["files_per_checkpoint"]] * c["count"]
    assert "fsync" not in ck


def test_checkpoint_only_job():
    """Three checkpoints written, the first read back, no data: fitted before as 4 raw data
    files written then read (the checkpoint read back) and one checkpoint of the rest."""
    t = TRUTH["dlio_ckpt_only"]["checkpoints"]
    f = analysis.fit(log("dlio_ckpt_only"))
    w = f.workload
    ck = w["checkpoint"]
    assert f.ranks == 2 and "dataset" not in w
    assert (w["workflow"]["train"], w["workflow"]["checkpoint"]) == (False, True)
    assert (ck["num_checkpoints_write"], ck["num_checkpoints_read"]) == (t["written"], t["read"])
    assert ck["time_between_checkpoints"] == pytest.approx(t["time_between_s"], abs=0.1)
    assert (ck["format"], ck["writers"], ck["optimizer_writers"]) \
        == ("model_optimizer", "all", "same")
    assert w["model"]["model_size_bytes"] == t["model_bytes"]
    assert round(t["model_bytes"] * ck["optimizer_multiplier"]) == t["optimizer_bytes"]
    # torch.load read each file as a zip; the trace's reads of a whole tensor: 10 in each
    # model file, 3 in each optimizer file
    assert (ck["read_pattern"], ck["tensors_per_file"]) == ("torch_zip", [10, 3])


def test_checkpoint_only_job_that_reads_none_back():
    """Three checkpoints of a ZeRO-1 model (rank 0's model file, each rank's optimizer shard),
    one folder each, nothing read: refused before ("no data file was read")."""
    t = TRUTH["dlio_ckpt_write_only"]["checkpoints"]
    f = analysis.fit(log("dlio_ckpt_write_only"))
    ck = f.workload["checkpoint"]
    assert (ck["num_checkpoints_write"], ck["num_checkpoints_read"]) == (t["count"], 0)
    assert (ck["format"], ck["writers"], ck["optimizer_writers"]) \
        == ("model_optimizer", "rank0", "all")
    e = f.evidence["checkpoint_writes"]
    assert sum(e["bytes"]) == t["total_bytes"] and e["write_calls"] == t["write_calls"]
    assert e["files"] == [t["files"] // t["count"]] * t["count"]


def test_checkpoint_only_job_that_reads_every_checkpoint_back():
    """2 checkpoints written, both read back by torch.load: no checkpoint is left never read,
    and every file read was written before and read as a zip (its end record first): the
    checkpoints, not a dataset (fitted as 6 raw files of 3 samples before, 0.50)."""
    t = TRUTH["dlio_llama_ckpt_read"]["checkpoints"]
    f = analysis.fit(log("dlio_llama_ckpt_read"))
    ck = f.workload["checkpoint"]
    assert f.workload["workflow"]["train"] is False and "dataset" not in f.workload
    assert (ck["num_checkpoints_write"], ck["num_checkpoints_read"]) == (t["written"],
                                                                         t["read_back"])
    assert (ck["format"], ck["read_pattern"]) == ("model_optimizer", "torch_zip")


def test_checkpoints_of_a_job_whose_data_darshan_did_not_see():
    """Megatron-DeepSpeed's indexed data read through a memory mapping (no read Darshan saw)
    and 5 checkpoint files a checkpoint over 2 ranks: the checkpoints alone, said so, in 2
    files a writer (checkpoint.files_per_rank; one before: 4 files for 10)."""
    f = analysis.fit(log("dlio_megatron"))
    ck = f.workload["checkpoint"]
    assert (ck["format"], ck["files_per_rank"], ck["num_checkpoints_write"]) \
        == ("file_per_rank", 2, 2)
    assert any("opened with no read or write" in n and "checkpoints alone" in n
               for n in f.notes)


def test_the_default_workloads_few_steps_an_epoch():
    """The DLIO benchmark's default workload shrunk: 4 steps a rank an epoch, 2 epochs, an
    evaluation after each: 6 compute pauses and one longer at the epochs' end; one pause above
    a jump is an epoch's end, not the steps (batch 1 and no compute before)."""
    t = TRUTH["dlio_default"]
    w = analysis.fit(log("dlio_default")).workload
    assert w["reader"]["batch_size"] == t["batch_size"]
    assert w["train"]["computation_time"] == pytest.approx(t["computation_time_per_step_s"],
                                                           rel=0.3)
    # the training and the evaluation files each in 2 subfolders (train/0, valid/1, ...)
    ds = w["dataset"]
    assert (ds["num_subfolders_train"], ds["num_files_eval"], ds["num_subfolders_eval"]) \
        == (2, 8, 2)


def test_checkpoints_every_n_steps_of_each_epoch():
    """steps_between_checkpoints=3 at 8 steps an epoch: the DLIO benchmark counts its steps
    from 1 in each epoch (checkpoints after steps 3 and 6 of each, 4 in all); counted over the
    run the emulator wrote 5."""
    t = TRUTH["dlio_npz_ckpt_steps"]
    f = analysis.fit(log("dlio_npz_ckpt_steps"))
    ck = f.workload["checkpoint"]
    assert ck["steps_between_checkpoints"] == 3 and "step_count" not in ck
    assert f.evidence["checkpoint_writes"]["checkpoints"] == 4
    assert f.workload["train"]["epochs"] == t["epochs"]


def test_files_in_subfolders_read_in_the_order_of_their_base_names():
    """48 NPZ files in train/0 .. train/3, file i in folder i mod 4: the DLIO benchmark sorts
    them by base name, so each rank reads its range in order though its paths hop between the
    folders; taken for a shuffle before (both ranks reading 38 of the 48 files: 0.199)."""
    t = TRUTH["dlio_npz_subfolders_shuffle"]
    f = analysis.fit(log("dlio_npz_subfolders_shuffle"))
    w = f.workload
    assert f.evidence["files_in_name_order"] is True
    assert w["reader"]["sample_shuffle"] == "off" and "file_shuffle" not in w["reader"]
    assert (w["dataset"]["num_files_train"], w["dataset"]["num_subfolders_train"]) \
        == (t["num_files"], 4)
    assert w["dataset"]["num_samples_per_file"] == t["samples_per_file"]


def test_hdf5_samples_each_read_through_their_own_open():
    """h5py opens a file for every sample (libhdf5 2.0's 4 metadata reads, then the row): the
    pauses of those opens, 1-10 ms, are no step's end (batch 4 for 8 before: they cut the reads
    into uneven steps, the compute's do not); the 48-byte superblock read of libhdf5 2.0 is a
    version 2 or 3 superblock (dataset.hdf5_libver latest: 6 reads an open for 5, 9 before)."""
    t = TRUTH["dlio_hdf5_multi"]
    f = analysis.fit(log("dlio_hdf5_multi"))
    ds, rd = f.workload["dataset"], f.workload["reader"]
    assert (ds["format"], ds["num_files_train"], ds["num_samples_per_file"],
            ds["record_length"]) == ("hdf5", t["num_files"], t["samples_per_file"],
                                     t["sample_bytes"])
    assert (rd["batch_size"], rd["reopen"], ds["hdf5_libver"]) == (t["batch_size"], True,
                                                                   "latest")
    assert f.workload["train"]["computation_time"] == pytest.approx(
        t["computation_time_per_step_s"], rel=0.25)


def test_chunked_gzip_hdf5_from_the_h5d_record():
    """HDF5 datasets of (1, 128, 256) uint8 chunks through gzip: the chunk's bytes from
    Darshan's H5D record (its dimensions times the type's size), the filter from the chunks read
    in sizes of their own (32,784 bytes for 32,768: random data does not shrink); fitted as a
    contiguous dataset before (0.962)."""
    f = analysis.fit(log("dlio_hdf5_chunked_gzip"))
    ds = f.workload["dataset"]
    assert (ds["enable_chunking"], ds["chunk_size"], ds["compression"]) == (True, 32768, "gzip")
    assert (ds["num_files_train"], ds["num_samples_per_file"], ds["record_length"]) \
        == (32, 4, 65536)


def test_indexed_binary_file_read_a_sample_an_open():
    """One shared file of 256 samples of 32,761 bytes, each opened and read by itself; the
    two index files read whole once by each rank are no samples, and being DLIO's .off.idx
    and .sz.idx beside the file they make it indexed_binary (fitted before as raw, the
    index files not made: 1 file replayed for 3)."""
    t = TRUTH["dlio_indexed_binary"]
    f, w = _data_shape("dlio_indexed_binary")
    assert w["train"]["epochs"] == t["epochs"]
    assert w["reader"]["reopen"] is True and w["io"]["interface"] == "posix"
    assert len(f.evidence["index_files"]) == t["index_files"]


def test_replay_of_indexed_binary_makes_and_reads_its_index_files(tmp_path):
    """The replay writes the .off.idx and .sz.idx beside its .bin and each rank reads both
    whole once: 3 files as the real job's, its 4 index reads of 2,048 bytes among the 516
    (0.505 before: 1 file for 3, the structure gate)."""
    t = TRUTH["dlio_indexed_binary"]
    r = replay(log("dlio_indexed_binary"), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    for key in ("files", "interfaces", "read_ops", "bytes_written"):
        assert r.emulated[key] == r.real[key], key
    assert r.emulated["files"] == t["num_files"] + t["index_files"]
    assert r.emulated["bytes_read"] == r.real["bytes_read"] == t["posix"]["POSIX_BYTES_READ"]
    train = tmp_path / "replay" / "data" / "train"
    assert sorted(p.name.split(".", 1)[1] for p in train.iterdir()) \
        == ["bin", "bin.off.idx", "bin.sz.idx"]


def test_npy_files_under_dlio_shuffle_settings():
    """sample_shuffle and file_shuffle seed: DLIO's PyTorch path still reads in order."""
    t = TRUTH["dlio_npy_shuffle"]
    f, w = _data_shape("dlio_npy_shuffle")
    assert w["train"]["epochs"] == t["epochs"]
    assert (w["reader"]["access"], w["io"]["interface"]) == ("numpy", "posix")


def test_csv_files_loaded_whole_by_each_sample():
    """pandas loads the whole file for each of its 2 samples: a rank's passes over a file come
    two in a row before it reads its next file, so a pass is a sample's load, not an epoch
    (fitted before as a stream read once an epoch: 4 epochs, the samples a file only by the
    block size's chance)."""
    t = TRUTH["dlio_csv"]
    f, w = _data_shape("dlio_csv")
    assert (w["reader"]["access"], w["reader"]["stream_pass"]) == ("stream", "sample")
    assert w["train"]["epochs"] == t["epochs"]
    assert w["train"]["epochs"] * t["samples_per_file"] == t["loads_per_file"]
    assert f.evidence["passes_in_a_row"] == t["samples_per_file"]


def test_a_file_s_samples_loaded_by_two_workers_at_once(tmp_path):
    """The DLIO benchmark's CSV reader in 2 forked workers, 4 samples a file, batch 2: each
    worker loads 2 of a file's samples in a row (its batch) while the other loads the other
    2. Each worker visits a file once an epoch: 2 epochs, 4 samples a file, a batch a
    worker's run (fitted before as 2 samples a file, 4 epochs)."""
    name = "dlio_csv_workers2_shared_files"
    f = analysis.fit(log(name))
    w = f.workload
    ds, rd = w["dataset"], w["reader"]
    assert (ds["num_files_train"], ds["num_samples_per_file"], w["train"]["epochs"]) \
        == (8, 4, 2)
    assert ds["record_length"] == pytest.approx(14623, abs=2)
    assert (rd["batch_size"], rd["read_threads"], rd["stream_pass"]) == (2, 2, "sample")
    assert f.evidence["worker_visits"] == {"visits": 2, "run": 2}
    replay_like(name, tmp_path)


@pytest.mark.parametrize("name", ["dlio_tfrecord", "tfdata_list_files_interleave"])
def test_a_stream_read_once_an_epoch_is_no_load_per_sample(name):
    """TFRecord files streamed once an epoch (a rank moves on to its next file after each
    pass): no reader.stream_pass."""
    f = analysis.fit(log(name))
    assert f.workload["reader"]["access"] == "stream"
    assert "stream_pass" not in f.workload["reader"]


def test_a_log_the_forked_workers_left_empty():
    """read_threads=2 under MPI: the workers made every read and an MPI-mode log holds none
    of a forked process's I/O. The fit says so in its one line."""
    with pytest.raises(FitError, match="no file record at all.*forked workers"):
        analysis.fit(log("dlio_hdf5_threads_mpi"))


@pytest.mark.parametrize("name", ["dlio_llm_ckpt", "dlio_npy_shuffle", "dlio_ckpt_only",
                                  "dlio_ckpt_write_only", "dlio_npz_ckpt_steps",
                                  "dlio_npz_subfolders_shuffle", "dlio_hdf5_multi",
                                  "dlio_hdf5_chunked_gzip", "dlio_llama_ckpt_read"])
def test_replay_looks_like_the_real_program(tmp_path, name):
    replay_like(name, tmp_path)


def _no_checkpoints(w):
    w["workflow"]["checkpoint"] = False
    del w["checkpoint"]


def _npz(w):
    w["dataset"]["format"] = "npz"


def _no_read_back(w):
    w["checkpoint"]["num_checkpoints_read"] = 0


def _shuffled(w):
    w["reader"]["sample_shuffle"] = "seed"


@pytest.mark.parametrize("name,change", [("dlio_llm_ckpt", _no_checkpoints),
                                         ("dlio_npy_shuffle", _npz),
                                         ("dlio_ckpt_only", _no_read_back),
                                         ("dlio_npz_subfolders_shuffle", _shuffled)])
def test_a_replay_of_the_wrong_shape_scores_low(tmp_path, name, change):
    """The LLM job without its checkpoints; the NPY files as NPZ ones (numpy.load reads an
    NPZ member through Python's file alone, an NPY array through C stdio); the checkpoint-only
    job with no checkpoint read back; the files in subfolders read in a shuffled order."""
    wrong = run_changed(name, tmp_path, change)
    assert wrong.score < 0.6, wrong.table


def test_npy_files_of_arrays_of_varied_sizes():
    """The DLIO benchmark's npy with record_length_bytes_stdev: numpy.load reads each array
    by one fread, whose bytes per file (its STDIO record) give each file's array; their mean
    and spread, with a checkpoint after each epoch (before: every file the mean's size)."""
    name = "dlio_npy_size_spread_ckpt_2r"
    f = analysis.fit(log(name))
    w, t = f.workload, TRUTH[name]
    ds = w["dataset"]
    assert f.ranks == t["ranks"]
    assert (ds["format"], ds["num_files_train"], ds["num_samples_per_file"]) \
        == ("npy", t["num_files"], t["samples_per_file"])
    assert ds["record_length"] == pytest.approx(t["sample_bytes"], rel=0.02)
    assert ds["record_length_stdev"] == pytest.approx(45684, rel=0.1)
    assert f.evidence["size_seed"]["total_difference"] < 0.01
    assert (w["reader"]["batch_size"], w["train"]["epochs"]) == (t["batch_size"], t["epochs"])
    assert (w["checkpoint"]["checkpoint_after_epoch"],
            w["checkpoint"]["epochs_between_checkpoints"]) == (1, 1)

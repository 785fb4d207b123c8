"""The DLIO benchmark's loaders in shapes the other fixtures do not have, and a PyTorch
DataLoader's forked workers over h5py (real logs, Darshan 3.5.0 with DXT, truth in
truth.json): the benchmark run without mpiexec (an Open MPI singleton: MPI_Init starts orted,
and Darshan sees Python read the entry script), NPY files of 4 samples each loaded whole for
every sample, NPZ files of arrays of their own sizes, indexed binary files whose samples are
each read in an open of their own, libhdf5's sieve buffer over a contiguous dataset, and a
file a sample loaded by pickle."""
import numpy as np
import pytest

import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.characterization.characterize import characterize
from dlio_mpi_analysis.replays.replay import replay

from fitted_runs import TRUTH, fitted_shape, log, replay_like

pytestmark = pytest.mark.mpi      # its replays launch ranks under mpiexec


def test_a_singleton_run_is_one_rank_with_its_workers():
    """orted (its session files and an unread hardware walk, no data byte) is a helper, not a
    second rank, and the entry script Python read is code (fitted before as 2 ranks, with the
    script a data file: 0.46)."""
    f, w = fitted_shape("dlio_npz_workers_singleton")
    assert w["reader"]["read_threads"] == TRUTH["dlio_npz_workers_singleton"]["read_threads"]
    c = characterize(log("dlio_npz_workers_singleton"))
    assert c.process_roles == {"main": 1, "forked worker": 2, "helper": 2}
    script = [i for i, n in c.names.items() if n.endswith("/bin/dlio_benchmark")]
    assert script and all(c.roles[i] == "other" for i in script)


def test_npy_files_loaded_whole_for_each_sample():
    """np.load of the file for every sample, 4 in a row: 4 samples of a quarter of the array
    (fitted before as 1 sample a file, 8 epochs for 2)."""
    f, w = fitted_shape("dlio_npy_samples_per_file")
    assert w["dataset"]["record_length"] == TRUTH["dlio_npy_samples_per_file"]["sample_bytes"]
    assert f.evidence["loads_in_a_row"] == 4


def test_npz_files_of_their_own_sizes():
    """record_length_bytes_stdev: the arrays' mean and spread (fitted before as the median
    file's, bytes -3 %)."""
    f, w = fitted_shape("dlio_unet3d_sizes")
    sizes = TRUTH["dlio_unet3d_sizes"]["sample_bytes"]
    assert w["dataset"]["record_length"] == pytest.approx(sizes["mean_x_array_bytes"], rel=0.01)
    assert w["dataset"]["record_length_stdev"] == pytest.approx(sizes["stdev_x_array_bytes"],
                                                                rel=0.01)


def test_stacked_files_of_their_own_sizes(tmp_path):
    """2 samples a file, each loading the stacked array whole, files of 87 to 177 KB: a size a
    file for both its samples, their mean 67,271 B and spread 8,936 B (fitted before as 32
    files of the median file's size, no spread)."""
    name = "dlio_npz_stacked_sizes_2r"
    f, w = fitted_shape(name)
    ds = w["dataset"]
    assert (ds["npz_layout"], ds["record_length"], ds["record_length_stdev"]) \
        == ("stacked", 67271, 8936)
    r = replay_like(name, tmp_path, bytes_rel=0.01)
    assert r.emulated["mean_read_size"] == pytest.approx(r.real["mean_read_size"], rel=0.01)


def test_a_chunk_file_read_whole_for_each_of_its_rows(tmp_path):
    """zarr v2 rows a[i] in 2 forked workers, new every epoch: each row reads its 64 KiB
    chunk file whole (Python's f.read()), 16 times an epoch in a shuffled order; the workers'
    2 generations are the epochs, a file's 16 whole reads an epoch its samples (fitted
    before as 32 epochs of 130 files a sample each, .zarray and .zattrs among them)."""
    name = "zarr_v2_chunks_workers2"
    f, w = fitted_shape(name, "sample_bytes", "read_threads")
    rd = w["reader"]
    assert (rd["access"], rd["sample_shuffle"]) == ("file", "seed")
    assert f.evidence["worker_generations"] == 2
    assert sorted(n.rsplit("/", 1)[1] for n in f.evidence["index_files"]) \
        == [".zarray", ".zattrs"]
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.emulated["bytes_read"] == pytest.approx(r.real["bytes_read"], rel=0.01)


def test_balanced_passes():
    """The most equal parts of a rank's loads in each of which every file was loaded as
    often: 2 shuffled epochs of 3 files of 2 samples; none in a quarter of an epoch."""
    import pandas as pd
    from dlio_mpi_analysis.fitting.fit_patterns import balanced_passes
    ids = [1, 3, 2, 2, 1, 3, 3, 1, 1, 2, 2, 3]
    loads = pd.DataFrame({"rank": 0, "id": ids, "start": np.arange(len(ids), dtype=float)})
    assert balanced_passes(loads) == 2
    assert balanced_passes(loads.assign(id=[1, 1, 3, 2, 2, 1, 3, 3, 1, 2, 2, 3])) == 1
    assert balanced_passes(loads.iloc[:0]) == 0


def test_worker_generations():
    """Groups of loader workers alive together, the next once the group before has ended."""
    from dlio_mpi_analysis.fitting.fit_patterns import worker_generations
    assert worker_generations({0: [(1.0, 5.0), (1.1, 5.2), (6.0, 9.0), (6.1, 9.5)]}) == 2
    assert worker_generations({0: [(1.0, 9.0), (1.1, 9.2)], 1: [(1, 9), (2, 9)]}) == 1
    assert worker_generations({}) == 0


def test_the_same_share_read_every_epoch_is_a_step_limit(tmp_path):
    """The DLIO benchmark with total_training_steps 8 of 16 (its count restarting every
    epoch, a 9th batch loaded before the check): each rank reads its first 4 files and half
    of its 5th every epoch, the other 6 files never opened. The files' names count 16; 3
    epochs of at most 9 steps (fitted before as whole epochs over 10 files, 720 reads for
    648)."""
    name = "dlio_hdf5_steps_capped_2r"
    f = analysis.fit(log(name))
    w = f.workload
    assert (w["dataset"]["num_files_train"], w["dataset"]["num_samples_per_file"]) == (16, 4)
    assert (w["train"]["epochs"], w["train"]["total_training_steps"]) == (3, 9)
    assert f.evidence["capped_epochs"] == {"epochs": 3, "samples": 36, "steps": 9}
    r = replay_like(name, tmp_path)
    assert r.emulated["read_ops"] == r.real["read_ops"]


def test_each_rank_s_first_files_every_epoch_is_a_step_limit(tmp_path):
    """The DLIO benchmark's npz on 4 ranks, total_training_steps 4 of 8 (a 5th batch loaded
    before the check): each rank reads the first 10 files of its 16 every epoch, whole. The
    files' names count 64: 64 files, at most 5 steps an epoch (fitted before as 40 files
    read whole every epoch)."""
    name = "dlio_npz_steps_capped_4r"
    f = analysis.fit(log(name))
    w = f.workload
    assert (w["dataset"]["num_files_train"], w["train"]["epochs"]) == (64, 2)
    assert w["train"]["total_training_steps"] == 5
    r = replay_like(name, tmp_path)
    assert r.emulated["read_ops"] == r.real["read_ops"]


def test_a_file_s_loads_in_a_row_each_pass_are_no_hops(tmp_path):
    """The DLIO benchmark's npy, 2 samples a file on 4 ranks: each rank loads its 8 files in
    name order, each twice in a row, 4 epochs; its runs of one file's reads are 4 whole
    passes over its files, not reads hopping between files (fitted before as shuffled within
    each rank's files)."""
    name = "dlio_npy_loads_in_a_row_4r"
    f, w = fitted_shape(name)
    assert w["reader"]["sample_shuffle"] == "off" and "shuffle_scope" not in w["reader"]
    assert f.evidence["files_in_name_order"] is True
    assert w["checkpoint"]["epochs_between_checkpoints"] == 2
    replay_like(name, tmp_path)


def test_an_evaluation_of_one_step_is_its_phase_s_samples(tmp_path):
    """The DLIO benchmark's jpeg on 4 ranks, an evaluation after every epoch of one step of 2
    images a rank: no pause inside a phase, so the phase's samples a rank are its batch (1
    before: each image a step of its own)."""
    name = "dlio_jpeg_eval_one_step_4r"
    w = analysis.fit(log(name)).workload
    assert (w["dataset"]["num_files_train"], w["dataset"]["num_files_eval"]) == (16, 8)
    assert (w["reader"]["batch_size"], w["reader"]["batch_size_eval"]) == (2, 2)
    assert w["evaluation"]["eval_after_epoch"] == 1
    replay_like(name, tmp_path)


def test_evaluations_after_equal_training_through_libhdf5s_sieve(tmp_path):
    """The DLIO benchmark's hdf5 on 4 ranks, an evaluation and a checkpoint after every epoch:
    libhdf5's sieve buffer reads far more than each sample, so the training files' bytes count
    2.9 passes for 2; the valid/ phases, after equal amounts of training, still end passes
    (fitted before as one training set of 48 files in 2 subfolders)."""
    name = "dlio_hdf5_eval_ckpt_4r"
    w = analysis.fit(log(name)).workload
    assert (w["dataset"]["num_files_train"], w["dataset"]["num_files_eval"]) == (32, 16)
    assert "num_subfolders_train" not in w["dataset"]
    assert (w["evaluation"]["eval_after_epoch"], w["evaluation"]["epochs_between_evals"]) \
        == (1, 1)
    assert w["workflow"]["checkpoint"] is True
    replay_like(name, tmp_path, bytes_rel=0.02)


def test_indexed_binary_samples_each_in_an_open_in_workers(tmp_path):
    """The DLIO benchmark's indexed binary reader in 2 forked workers, a batch of 4 a file's 4
    samples, each read in an open of its own: a sample a read (fitted before as a whole
    file's load: 1 sample of 16 KiB a file, batch 1, 0.936)."""
    name = "dlio_indexed_binary_workers2"
    w = analysis.fit(log(name)).workload
    ds, rd = w["dataset"], w["reader"]
    assert (ds["format"], ds["num_files_train"], ds["num_samples_per_file"]) \
        == ("indexed_binary", 16, 4)
    assert (ds["record_length"], rd["batch_size"], rd["read_threads"]) == (4096, 4, 2)
    assert rd["reopen"] is True
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table


def test_the_evaluation_loader_s_workers_are_no_read_threads(tmp_path):
    """The DLIO benchmark's npz alone, evaluation after every epoch: the training loader's 2
    persistent workers and the evaluation loader's 2, alive together from the first
    evaluation on, each pair reading its own set: 2 read threads (4 before)."""
    name = "dlio_npz_eval_loaders_workers2"
    w = analysis.fit(log(name)).workload
    assert (w["dataset"]["num_files_train"], w["dataset"]["num_files_eval"]) == (16, 4)
    assert w["reader"]["read_threads"] == 2
    replay_like(name, tmp_path)


def test_capped_epochs_and_named_counts():
    from dlio_mpi_analysis.fitting.fit_patterns import capped_epochs, named_count
    assert capped_epochs([12, 12, 6, 12, 6], 4, 2) == (3, 16)
    assert capped_epochs([12, 12, 12], 4, 2) is None        # whole epochs
    assert capped_epochs([12, 12, 5], 4, 2) is None         # not the same share each epoch
    assert capped_epochs([12, 6, 6, 6], 4, 2) is None       # more files in part than ranks
    assert named_count(["a/img_3_of_16.h5", "b/img_12_of_16.h5"]) == 16
    assert named_count(["img_3_of_16.h5", "img_1_of_8.h5"]) is None
    assert named_count(["img_3.h5"]) is None
    from dlio_mpi_analysis.fitting.fit_patterns import named_prefixes
    files = {0: ["img_0_of_8.npz", "img_1_of_8.npz"], 1: ["img_4_of_8.npz", "img_5_of_8.npz"]}
    assert named_prefixes(files, 8) == 2
    assert named_prefixes({0: ["img_0_of_8.npz"], 1: ["img_5_of_8.npz"]}, 8) is None
    assert named_prefixes({0: ["img_0_of_8.npz"], 1: ["img_4_of_8.npz", "img_5_of_8.npz"]},
                          8) is None


def test_indexed_binary_samples_each_in_an_open():
    """8 opens of a file, a 64 KiB read each, 30 ms apart: 8 samples, each file opened for its
    sample (fitted before as one sample of the whole file)."""
    f, w = fitted_shape("dlio_dlrm")
    assert w["dataset"]["record_length"] == TRUTH["dlio_dlrm"]["sample_bytes"]
    assert w["reader"].get("reopen") is True and "whole_file_loads" not in f.evidence


def test_a_contiguous_dataset_read_through_the_sieve_buffer():
    """H5D_CHUNK_SIZE_D1..D5 = 0: the 64 KiB reads are libhdf5's sieve buffer, not chunks
    (fitted before as 64 KiB chunks, batch 64 for 16)."""
    f, w = fitted_shape("torch_h5py_fork_workers")
    assert "enable_chunking" not in w["dataset"] and "hdf5_chunk" not in f.evidence
    assert w["reader"]["read_threads"] == 2
    assert w["dataset"]["record_length"] == TRUTH["torch_h5py_fork_workers"]["sample_bytes"]


@pytest.mark.parametrize("name", ["dlio_npz_workers_singleton", "dlio_npy_samples_per_file",
                                  "dlio_unet3d_sizes", "dlio_dlrm"])
def test_replay_looks_like_the_real_program(tmp_path, name):
    replay_like(name, tmp_path)


def test_pickle_loads_a_file_a_sample(tmp_path):
    """pickle.load(open(f, 'rb')) of a file a sample: the buffer fill at its start, 32 KiB
    straight in, the tail's fill (fitted before as raw samples read in 32 KiB pieces: 1,024
    reads for 1,536, 0.93)."""
    f, w = fitted_shape("pickle_samples")
    assert (w["reader"]["access"], w["reader"]["buffer_size"]) == ("pickle", 4096)
    assert f.evidence["pickle_loads"]["loads"] == TRUTH["pickle_samples"]["num_files"] * 2
    replay = replay_like("pickle_samples", tmp_path)
    assert replay.emulated["read_ops"] == replay.real["read_ops"]


def test_tfrecord_shards_in_name_order():
    """The TensorFlow reader's shard of the files, in their names' order every epoch: the
    first few files of a pass opened together come out of turn, the rest in order (fitted
    before as a file shuffle: the replay's ranks shared 41 % of the files, 0.57)."""
    f = analysis.fit(log("dlio_resnet50_tf_shard"))
    assert f.evidence["files_in_name_order"] is True
    assert "file_shuffle" not in f.workload["reader"]
    assert f.workload["reader"]["access"] == "stream"


def test_tfrecord_shards_whole_files_of_their_own_sizes():
    """The DLIO benchmark's cosmoflow_a100 (TensorFlow) on 2 ranks: each rank its round-robin
    half of 16 files, every pass the first four opened together, out of turn (0, 6, 4, 2,
    then 8 to 14: 25 of 28 pairs in order, 5 of 7 steps up), each file one read of its own
    size. In name order (a file shuffle before, 15 of 16 files read by both ranks: 0.054),
    one read a file (reads of the smallest file's size before: two a file)."""
    f = analysis.fit(log("dlio_cosmoflow_tf_2r"))
    rd = f.workload["reader"]
    assert f.evidence["files_in_name_order"] is True and "file_shuffle" not in rd
    assert rd["access"] == "stream" and rd["transfer_size"] == 67659     # the largest file


def test_a_record_a_file_of_sizes_far_apart(tmp_path):
    """cosmoflow's record_length_bytes_stdev: files of 146 to 412 KB, each one record read
    front to back in 256 KiB reads (one or two reads and a 0-byte read at the end): a record
    a file of the files' mean size and spread, so that the files over a block read their
    tails apart as the job's did (samples of about one block before: every file the same
    size, one read each, 0.945)."""
    name = "dlio_cosmoflow_sizes_tf_2r"
    t = TRUTH[name]
    f, w = fitted_shape(name, "sample_bytes")
    assert w["dataset"]["record_length_stdev"] == t["files_bytes_stdev"]
    assert w["reader"]["access"] == "stream" and w["reader"]["transfer_size"] == 262144
    r = replay_like(name, tmp_path, bytes_rel=0.03)
    assert r.emulated["read_ops"] == pytest.approx(r.real["read_ops"], rel=0.03)


@pytest.mark.parametrize("name", ["dlio_resnet50_tf_shard", "tfdata_list_files_interleave",
                                  "dlio_cosmoflow_tf_2r"])
def test_file_order_replays(tmp_path, name):
    """In name order, and (tf.data's list_files(shuffle=True)) in a new order every epoch."""
    replay_like(name, tmp_path, bytes_rel=0.12)


def test_whole_files_in_a_new_order_every_epoch():
    """pandas.read_parquet of each file whole, the files in a shuffled order each epoch: a
    file a sample, shuffled (fitted before in order: no metric sees the files' order across
    a rank's files)."""
    f = analysis.fit(log("parquet_whole_files"))
    w = f.workload
    assert (w["dataset"]["num_files_train"], w["dataset"]["num_samples_per_file"]) == (8, 1)
    assert w["reader"]["sample_shuffle"] == "seed" and f.evidence["files_in_name_order"] is False


def test_torch_save_checkpoints_through_a_reused_descriptor():
    """torch.save after every epoch by rank 0: Darshan counts the second save's last write
    under the first file (its stream's descriptor number, closed by fclose, reused): that
    write is the second file's (fitted before as 2 checkpoints of 2 files, 0.86)."""
    t = TRUTH["torch_save_epochs"]
    f = analysis.fit(log("torch_save_epochs"))
    ck = f.workload["checkpoint"]
    e = f.evidence["checkpoint_writes"]
    assert (e["checkpoints"], e["files"]) == (3, [1, 1, 1])
    assert (ck["writers"], ck["checkpoint_after_epoch"], ck["epochs_between_checkpoints"]) \
        == ("rank0", 1, 1)
    assert f.workload["model"]["model_size_bytes"] == 4202717
    assert "3 checkpoints" in t["checkpoints"]


def test_stdio_reads_of_files_every_rank_read():
    """numpy.fromfile at offsets (STDIO, no trace) of 4 files both ranks read: the ranks'
    samples spread over the files, a global shuffle (fitted before as each rank's own files:
    no file shared, 0.00)."""
    f = analysis.fit(log("fromfile_shared_shuffle"))
    assert f.workload["reader"]["sample_shuffle"] == "seed"
    assert f.evidence["files_read_by_several_ranks"] == 1.0


def test_a_folder_a_chunk_is_one_dataset():
    """zarr's chunks c/<i>/0, a folder each: 32 folders are no training and evaluation sets
    (fitted before as 1 training file and 1 evaluation file of 32)."""
    f = analysis.fit(log("zarr_chunk_folders"))
    w = f.workload
    assert (w["dataset"]["num_files_train"], w["dataset"]["num_samples_per_file"]) == (32, 1)
    assert (w["reader"]["batch_size"], w["train"]["epochs"]) == (1, 2)
    assert "evaluation" not in w and "num_files_eval" not in w["dataset"]


def test_torch_save_by_every_rank_after_every_epoch():
    """Each rank's torch.save after every epoch, a reused descriptor's write on every rank, the
    data read through STDIO (numpy.load's arrays) beside POSIX headers: 3 checkpoints of a
    file a rank, after every epoch (fitted before as 2 of 2 files a rank, within epochs)."""
    f = analysis.fit(log("torch_save_per_rank"))
    ck = f.workload["checkpoint"]
    e = f.evidence["checkpoint_writes"]
    assert (e["checkpoints"], e["files"], e["writer_ranks"]) == (3, [2, 2, 2], [0, 1])
    assert (ck["writers"], ck["checkpoint_after_epoch"], ck["epochs_between_checkpoints"]) \
        == ("all", 1, 1)


def test_a_pickle_with_an_object_outside_its_frames():
    """A 200 KiB array pickled outside the frames: the buffer's fill, the array straight in,
    the last frame's 21 bytes (fitted before as raw reads: 0.91)."""
    f = analysis.fit(log("pickle_big_samples"))
    rd = f.workload["reader"]
    assert (rd["access"], rd["pickle_tail"]) == ("pickle", 21)


def test_a_chunk_a_sample_through_gzip(tmp_path):
    """Chunks of one sample each, read in sizes of their own: a chunked dataset through a
    filter (fitted before as contiguous: 8 times the bytes through the sieve buffer), its
    chunks stored in a quarter of their bytes (the median chunk read): dataset.content_fill,
    content that compresses as much (random content hardly did: 4 times the bytes, 0.77)."""
    w = analysis.fit(log("h5py_gzip_workers")).workload
    assert (w["dataset"]["chunk_size"], w["dataset"]["compression"]) == (16384, "gzip")
    assert w["dataset"]["record_length"] == 16384
    assert w["dataset"]["content_fill"] == pytest.approx(0.25, abs=0.02)
    r = replay_like("h5py_gzip_workers", tmp_path, bytes_rel=0.05)
    assert r.emulated["mean_read_size"] == pytest.approx(r.real["mean_read_size"], rel=0.1)


@pytest.mark.parametrize("name", ["fromfile_shared_shuffle", "zarr_chunk_folders",
                                  "torch_save_per_rank", "pickle_big_samples"])
def test_more_replays_look_like_the_real_programs(tmp_path, name):
    replay_like(name, tmp_path)


def test_torch_load_of_a_file_a_sample(tmp_path):
    """torch.load of a .pt file a sample: the zip's end records and directory from the end,
    its start, the tensor in one call (fitted before as raw 45 KiB samples: 360 reads for
    3,072, in order where the loads go back, 0.00)."""
    f = analysis.fit(log("torch_load_samples"))
    rd = f.workload["reader"]
    assert rd["access"] == "torch" and rd.get("torch_tensors", 1) == 1
    t = TRUTH["torch_load_samples"]
    assert f.evidence["torch_loads"]["loads"] == t["num_files"] * t["epochs"]
    assert rd["batch_size"] == t["batch_size"]
    r = replay_like("torch_load_samples", tmp_path, equal=("interfaces", "bytes_written"),
                    bytes_rel=0.1)
    # a sample file's load ends with its tensor, no read of the zip's tail (13 calls for 12
    # before)
    assert r.emulated["read_ops"] == r.real["read_ops"]


def test_workers_that_open_a_file_per_sample(tmp_path):
    """The DLIO benchmark's HDF5 reader in 2 forked workers, each sample's file opened for it:
    read threads that open a sample's file, read it and close it (refused before, then the
    opens dropped: 0.84, libhdf5's metadata reads after each open missing)."""
    f, w = fitted_shape("dlio_hdf5_workers_reopen")
    assert w["reader"]["read_threads"] == 2 and w["reader"]["reopen"] is True
    r = replay(log("dlio_hdf5_workers_reopen"), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.emulated["bytes_read"] == pytest.approx(r.real["bytes_read"], rel=0.05)
    assert r.emulated["read_ops"] == pytest.approx(r.real["read_ops"], rel=0.05)


def test_a_rank_s_shards_stay_its_own(tmp_path):
    """tarfile's stream over each rank's 2 shards, 10 KiB records, the last step short: the
    batch lowered to divide a rank's records, so that no shard is read by both ranks (a
    quarter of the files shared before, 0.73)."""
    f = analysis.fit(log("tar_stream_shards"))
    rd, ds = f.workload["reader"], f.workload["dataset"]
    assert (ds["num_files_train"] * ds["num_samples_per_file"] // 2) % rd["batch_size"] == 0
    r = replay_like("tar_stream_shards", tmp_path)
    assert r.emulated["shared_files"] == r.real["shared_files"] == 0


def test_checkpoints_placed_by_the_writer_s_own_steps(tmp_path):
    """Rank 0 saves every 4 of its 8 steps an epoch while ranks 1-3 run on a step ahead: the
    writer's own reads place the checkpoints after steps 4 and 8 (all ranks' reads gave 4.8,
    8.0, 12.5, 16.0: every 5 steps, 2 checkpoints for 4, 0.67)."""
    f = analysis.fit(log("dlio_npz_ckpt_steps_4r"))
    ck = f.workload["checkpoint"]
    assert (ck["steps_between_checkpoints"], ck["writers"]) == (4, "rank0")
    assert f.evidence["checkpoint_writes"]["checkpoints"] == 4
    assert f.evidence["checkpoint_writes"]["epochs_done"] == pytest.approx([0.5, 1, 1.5, 2],
                                                                          abs=0.01)
    replay_like("dlio_npz_ckpt_steps_4r", tmp_path)


def test_checkpoints_of_every_other_rank(tmp_path):
    """mpi4py: ranks 0 and 2 of 4 each save a 2 MiB file of their own after epochs 1 and 3:
    checkpoint.writers strided, stride 2 (rank 0 alone writing 4 MiB files before: 2 files for
    4, a write order of 0.75 for 0.5, 0.57)."""
    f, w = fitted_shape("mpi4py_ckpt_strided_writers")
    ck = w["checkpoint"]
    assert ck["writers"] == "strided" and ck["writer_stride"] == 2
    assert w["model"]["model_size_bytes"] == 2 * 2 * 1024 * 1024
    assert f.evidence["checkpoint_writes"]["writer_ranks"] == [0, 2]
    r = replay_like("mpi4py_ckpt_strided_writers", tmp_path)
    assert r.emulated["write_ops"] == r.real["write_ops"] == 8
    assert r.comparison.row("checkpoint_files") == (4, 4)
    assert r.comparison.row("write_order") == (0.5, 0.5)


def test_reads_past_a_checkpoint_s_end_are_no_data(tmp_path):
    """A DataLoader's new workers send their batches through a pipe whose descriptor number
    the first checkpoint's file had: Darshan charges the pipe's reads to that file, past the
    end it was written to. No read of a file returns bytes beyond its end: the file is a
    checkpoint still (a data file before: 1 checkpoint for 2, 0.96)."""
    c = characterize(log("torch_fork_workers_pipe_reads"))
    ckpt = sorted(c.names[i] for i, role in c.roles.items() if role == "checkpoint")
    assert [n.rsplit("/", 1)[-1] for n in ckpt] == ["epoch_1.pt", "epoch_2.pt"]
    f, w = fitted_shape("torch_fork_workers_pipe_reads")
    assert f.evidence["checkpoint_writes"]["checkpoints"] == 2
    r = replay_like("torch_fork_workers_pipe_reads", tmp_path, bytes_rel=0.05)
    assert r.comparison.row("checkpoint_files") == (2, 2)
    assert r.emulated["write_ops"] == r.real["write_ops"] == 4


def test_own_files_shuffled_and_checkpoints_saved_apart(tmp_path):
    """mpi4py on 6 ranks: each rank np.loads its own 8 files in a new order every epoch;
    ranks 0 and 3 save after each epoch, each when it ends its own epoch (the others' reads
    between the two saves). A rank-local shuffle of numpy loads (a global one before: 40 of
    52 files read by two ranks, 0.22) and 2 checkpoints of 2 MiB, each file its writer's,
    placed by how far its writer had read (3 checkpoints of 1 MiB before)."""
    f, w = fitted_shape("mpi4py_npy_own_files_ckpt_6r")
    rd, ck = w["reader"], w["checkpoint"]
    assert (rd["access"], rd["sample_shuffle"], rd["shuffle_scope"]) == ("numpy", "seed", "rank")
    assert (ck["writers"], ck["writer_stride"]) == ("strided", 3)
    assert f.evidence["checkpoint_writes"]["checkpoints"] == 2
    assert w["model"]["model_size_bytes"] == 2 * 1024 * 1024
    r = replay_like("mpi4py_npy_own_files_ckpt_6r", tmp_path)
    assert r.emulated["shared_files"] == r.real["shared_files"] == 0
    assert r.comparison.row("checkpoint_files") == (4, 4)


@pytest.mark.parametrize("name", ["dlio_hdf5_workers4_small_samples",
                                  "dlio_hdf5_workers_reopen"])
def test_a_step_s_samples_counted_by_their_opens(tmp_path, name):
    """The DLIO benchmark's HDF5 reader in forked workers, a file opened for each sample:
    a sample begins where libhdf5 reads the file's start again (the superblock, after an
    open); its sieve buffer's fills of 64 KiB over 32 KiB samples made a step's bytes worth 7
    samples (batch 7 for 4, 9 steps an epoch for 16)."""
    f, w = fitted_shape(name)
    assert w["reader"]["reopen"] is True
    assert w["reader"]["read_threads"] == TRUTH[name]["read_threads"]
    assert w["train"]["computation_time"] \
        == pytest.approx(TRUTH[name]["computation_time_per_step_s"], rel=0.3)
    if name == "dlio_hdf5_workers4_small_samples":
        replay_like(name, tmp_path, bytes_rel=0.05)


def test_a_step_s_samples_counted_by_their_compressed_chunk_reads(tmp_path):
    """h5py rows of a gzip dataset in chunks of 4 rows, read one a sample by 2 forked workers
    (the chunk read again for each row): a chunk read's bytes are no sample's; a step's
    samples are its chunk reads' share of the H5Dread calls (batch 11 for 8 before: 173 KB
    a step over 16 KiB rows), and the content compresses to a third."""
    f, w = fitted_shape("h5py_gzip_rows_chunk_of_4")
    assert f.evidence["h5d_samples_per_read"] == pytest.approx(1.0, abs=0.05)
    assert w["dataset"]["content_fill"] == pytest.approx(0.33, abs=0.03)
    replay_like("h5py_gzip_rows_chunk_of_4", tmp_path, bytes_rel=0.15)


def test_checkpoints_saved_by_numpy(tmp_path):
    """mpi4py, ranks 0 and 2 of 4 np.save a 1.5 MiB array after each epoch: its 128-byte
    header through Python's file (POSIX), the array through a C stream (STDIO): the
    checkpoints' bytes counted at both, written as numpy.save writes them
    (checkpoint.write_pattern numpy; 256-byte checkpoints through POSIX before, the interfaces
    apart: 0.44)."""
    f, w = fitted_shape("mpi4py_numpy_save_ckpt")
    ck = w["checkpoint"]
    assert (ck["write_pattern"], ck["writers"], ck["writer_stride"]) == ("numpy", "strided", 2)
    assert w["model"]["model_size_bytes"] == 2 * (128 + 1572864)
    r = replay_like("mpi4py_numpy_save_ckpt", tmp_path)
    assert r.emulated["write_ops"] == r.real["write_ops"] == 8
    assert r.comparison.row("checkpoint_files") == (4, 4)


def test_a_lone_checkpoint_writer_other_than_rank_0(tmp_path):
    """Rank 3 of 4 alone saves after each epoch: checkpoint.writers strided from rank 3 with
    the job's size as the stride (rank 0 before)."""
    w = analysis.fit(log("mpi4py_ckpt_last_rank")).workload
    ck = w["checkpoint"]
    assert (ck["writers"], ck["writer_stride"], ck["writer_first"]) == ("strided", 4, 3)
    r = replay(log("mpi4py_ckpt_last_rank"), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    z = np.load(tmp_path / "replay" / "run" / "latest" / "oplog_rank00003.npz")
    ckpt = [i for i, p in enumerate(z["phases"].tolist()) if p.startswith("checkpoint")]
    assert ckpt and all((z[f"e{i}_op"] == 1).any() for i in ckpt)


def test_a_batch_from_each_worker_s_own_pauses(tmp_path):
    """The DLIO benchmark's JPEG reader in 2 forked workers: each worker assembles whole
    batches, its first two back to back (prefetched), and the two workers' reads interleave
    in the rank's: a batch is counted between a worker's own pauses (8 for 4 before, two
    workers' batches read at once taken for one), and a step is a worker's cycle over the
    workers at work together (0.038 s for 0.02 before: the rank's pauses)."""
    f, w = fitted_shape("dlio_jpeg_workers_prefetch")
    assert w["reader"]["read_threads"] == 2
    t = TRUTH["dlio_jpeg_workers_prefetch"]
    assert w["train"]["computation_time"] == pytest.approx(t["computation_time_per_step_s"],
                                                           rel=0.25)
    replay_like("dlio_jpeg_workers_prefetch", tmp_path, bytes_rel=0.05)


def test_a_stall_inside_a_load_ends_no_step(tmp_path):
    """unet3d's spawned workers each load a batch of 7 files back to back, one batch an epoch;
    numpy.load stalled a few ms between its own reads of one file, which cut a batch in
    three before (batch 5 for 7, half the compute, 0.85): a pause inside a load is none."""
    f, w = fitted_shape("dlio_unet3d_a100_spawned_ckpt", "read_threads")
    t = TRUTH["dlio_unet3d_a100_spawned_ckpt"]
    assert w["train"]["computation_time"] == pytest.approx(t["computation_time_per_step_s"],
                                                           rel=0.05)
    assert f.evidence["checkpoints"] == 2
    replay_like("dlio_unet3d_a100_spawned_ckpt", tmp_path)


def test_pauses_inside_loads():
    """A pause is inside a load where the reads on both sides are of one file, the one after
    begins no sample, and a sample began among that file's reads since they began."""
    from dlio_mpi_analysis.fitting.fit_measures import _inside_loads
    ids = np.array([1, 1, 1, 1, 2, 2, 2, 1, 1])
    begins = np.array([0, 1, 0, 0, 0, 1, 0, 1, 0])   # numpy.load: its end record second
    assert _inside_loads(ids, begins).tolist() == \
        [False, True, True, False, False, True, False, True]


def test_rows_of_uncompressed_chunks_read_whole_for_each_row(tmp_path):
    """A DataLoader's 3 workers read f["x"][i], one 16 KiB row, from chunks of 4 rows: the
    dataset opened for each read (H5D_OPENS = H5D_READS) empties libhdf5's chunk cache, so
    each row reads its 64 KiB chunk. A step's samples are its chunk reads' share of the
    H5Dread calls (batch 32 for 8 before: bytes over a row's), and the replay opens the
    dataset for each read too (5 % fewer bytes before: its cache served some rows)."""
    name = "torch_h5py_rows_chunk_of_4_workers3"
    f, w = fitted_shape(name, "sample_bytes", "read_threads")
    assert f.evidence["h5d_samples_per_read"] == pytest.approx(1.0, abs=0.02)
    assert f.evidence["h5d_opens_per_read"] == 1.0
    assert w["reader"]["hdf5_dataset_open"] == "read"
    r = replay_like(name, tmp_path, bytes_rel=0.01)
    assert r.emulated["read_ops"] == pytest.approx(r.real["read_ops"], rel=0.05)


def test_two_workers_reading_the_halves_of_one_chunk(tmp_path):
    """batch_size=None, 2 workers, an item the half of a 128 KiB chunk: each item's read
    reads the whole chunk (the dataset opened for each read). Batch 1 (2 before: a chunk's
    bytes over the item's), and the replay's bytes those of a chunk an item (20 % fewer
    before)."""
    name = "torch_h5py_half_chunk_items"
    f, w = fitted_shape(name, "sample_bytes", "read_threads")
    assert w["reader"]["hdf5_dataset_open"] == "read"
    replay_like(name, tmp_path, bytes_rel=0.01)


def test_a_dataset_kept_open_and_one_opened_for_each_read():
    """h5py reading rows through one dataset object (2 opens, 4096 reads) keeps it open; a
    DataLoader's workers indexing f["x"][i] open it for each read (H5D_OPENS = H5D_READS)."""
    kept = analysis.fit(log("h5py_chunk_cache"))
    assert kept.workload["reader"].get("hdf5_dataset_open", "file") == "file"
    each = analysis.fit(log("h5py_workers"))
    assert each.evidence["h5d_opens_per_read"] == 1.0
    assert each.workload["reader"]["hdf5_dataset_open"] == "read"


@pytest.mark.parametrize("name", ["dlio_default", "dlio_npz_ckpt_steps_4r", "dlio_unet3d_sizes"])
def test_one_sample_npz_files_hold_x_and_its_labels(name):
    """The DLIO benchmark saves a file of one sample as x and its labels y: np.load reads the
    zip's directory where a file of two members has it (offsets a lone member's file would not
    show), so the layout is stacked and the sample the array's bytes exactly (the file less
    one member's headers before, the bytes of y counted as the sample's)."""
    f = analysis.fit(log(name))
    ds, t = f.workload["dataset"], TRUTH[name]
    assert ds["npz_layout"] == "stacked"
    want = t["sample_bytes"]
    if isinstance(want, dict):          # arrays of their own sizes: their mean and spread
        assert (ds["record_length"], ds["record_length_stdev"]) \
            == (int(want["mean_x_array_bytes"]), int(want["stdev_x_array_bytes"]))
    else:
        assert ds["record_length"] == int(str(want).split()[0])


def test_a_lone_member_npz_is_not_taken_for_x_and_labels():
    """np.savez of one array a file (mpi4py_numpy_save_ckpt's data): one member."""
    f = analysis.fit(log("mpi4py_numpy_save_ckpt"))
    assert f.workload["dataset"].get("npz_layout", "per_sample") == "per_sample"


def test_unet3d_files_of_their_own_sizes_are_stacked_and_replayed(tmp_path):
    """The DLIO benchmark's unet3d_a100 workload on 2 ranks: one sample a file of sizes with a
    spread, each file x and y: stacked, the arrays' mean and spread (the emulator refused
    stacked files with a spread before, and the replay failed)."""
    name = "dlio_unet3d_sizes_stacked_2r"
    f = analysis.fit(log(name))
    ds = f.workload["dataset"]
    assert (ds["npz_layout"], ds["num_files_train"], ds["num_samples_per_file"]) \
        == ("stacked", 28, 1)
    assert ds["record_length"] == 138807 and ds["record_length_stdev"] == 39509     # 138806.9
    r = replay_like(name, tmp_path, bytes_rel=0.02)
    assert r.comparison.row("checkpoint_files") == (1, 1)


def test_images_and_labels_read_for_each_sample_at_random(tmp_path):
    """One process, 8 HDF5 files opened at the start, each with datasets image (16 KiB rows)
    and label (int64), each sample f["image"][i] and f["label"][i] (the datasets looked up
    each time) in a global shuffle, batches of 16. The files' first reads are their opens,
    in name order: the reads hop between files a sample at a time, so no file order is taken
    from them (in order before); a step's samples are its reads' share of the H5Dread samples
    (65 before: a sieve fill a row and the label's read to the file's end, over a sample's
    bytes). The label is a field of the sample (dataset.hdf5_fields), read after its image
    (0.90 before, the label's reads missing): libhdf5 beneath makes the job's reads."""
    name = "h5py_images_labels_shuffled"
    f, w = fitted_shape(name, "sample_bytes")
    assert w["reader"]["sample_shuffle"] == "seed"
    assert w["reader"]["hdf5_dataset_open"] == "read"
    assert w["dataset"]["hdf5_fields"] == [{"name": "label", "bytes": 8, "dtype": "int64"}]
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.emulated["read_ops"] == r.real["read_ops"]
    assert r.emulated["bytes_read"] == pytest.approx(r.real["bytes_read"], rel=0.03)


def test_tensorflow_checkpoints_written_through_c_streams(tmp_path):
    """The DLIO benchmark's bert_v100 (TensorFlow) alone, 2 read threads: tf.train.Checkpoint
    writes each checkpoint through C stdio alone, under temporary names (.tempstate<n>), and
    reads its index back under the final name to merge it. The 16 files are checkpoint files
    written through a stream (no checkpoint before: 0.000, the checkpoint files' gate), the
    index read back is the checkpoint's own, no evaluation set (4 phases before)."""
    name = "dlio_bert_tf_checkpoints_stdio"
    f = analysis.fit(log(name))
    ck = f.workload["checkpoint"]
    assert (ck["write_pattern"], ck["files_per_rank"], ck["writers"]) == ("stream", 4, "rank0")
    r = replay(log(name), tmp_path / "replay")
    assert r.comparison.row("checkpoint_files") == (16, 16)
    assert r.comparison.row("evaluation_phases") == (0, 0)
    assert r.emulated["bytes_written"] == pytest.approx(r.real["bytes_written"], rel=0.01)
    assert r.score >= 0.9, r.comparison.table


def test_reads_through_c_stdio_timed_by_the_files_first_opens(tmp_path):
    """mpi4py, 2 ranks, each np.fromfile's its own 16 files in a new order every epoch, 4 ms a
    step: the reads are C stdio's (no DXT trace), each file opened once an epoch; the files'
    first opens (an epoch's) give the order and the pace: shuffled within each rank's files, a
    file a step, about 4 ms (in order and no compute before)."""
    name = "mpi4py_fromfile_own_files_h5ckpt"
    f = analysis.fit(log(name))
    rd, tr = f.workload["reader"], f.workload["train"]
    assert (rd["sample_shuffle"], rd["shuffle_scope"], rd["batch_size"]) == ("seed", "rank", 1)
    assert 0.004 <= tr["computation_time"] <= 0.006
    assert f.evidence["first_opens_in_name_order"] is False
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.comparison.row("checkpoint_files") == (3, 3)


def test_a_chunk_of_images_beside_labels_in_whole_samples(tmp_path):
    """A DataLoader's 2 workers read f["images"][i] (12 KiB rows in chunks of 4) and
    f["labels"][i] for each item: a sample is both (12,296 bytes), the images' 49,152-byte
    chunk 4 samples (49,184 bytes: the emulator refused 49,152, no whole number of samples,
    and the replay had no score); the labels a contiguous field of the sample (0.897 before,
    their reads missing)."""
    name = "torch_h5py_images_labels_chunked_workers2"
    f = analysis.fit(log(name))
    ds = f.workload["dataset"]
    assert (ds["record_length"], ds["chunk_size"]) == (12296, 4 * 12296)
    assert ds["hdf5_fields"] == [{"name": "labels", "bytes": 8, "dtype": "int64"}]
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.emulated["read_ops"] == pytest.approx(r.real["read_ops"], rel=0.03)
    assert r.emulated["bytes_read"] == pytest.approx(r.real["bytes_read"], rel=0.02)


def test_torch_loads_counted_once_though_they_read_the_start_thrice():
    """torch.load (torch 2.13) reads a file's first 4 KiB three times within a load: a load is
    a run of reads of one file from its start (batch 12 for 4 before)."""
    fitted_shape("torch_load_pt_workers2", "read_threads")


def test_a_parquet_file_opened_for_each_row_group(tmp_path):
    """2 workers read (file, row group) items, the file opened for each: pyarrow reads the
    file's last 64 KiB (the footer) before each row group. The footer reads are no samples:
    8 row groups of 19,248 bytes a file, 2 epochs (2 samples of 64 KiB and 8 epochs before:
    the replay read 55 % more bytes)."""
    name = "parquet_row_group_per_open_workers2"
    f, w = fitted_shape(name, "sample_bytes", "read_threads")
    assert f.evidence["footer_reads_apart"] == 128
    assert w["reader"].get("parquet_open", "batch") == "batch"     # a footer a batch of one
    replay_like(name, tmp_path, bytes_rel=0.01)


def test_checkpoints_read_back_twice_keep_their_files_tensors(tmp_path):
    """The DLIO benchmark's llama_8b_zero3 on 2 ranks, 2 checkpoints written and read back:
    each rank's model file of 10 tensors and optimizer file of 3, read back twice
    (tensors_per_file [10, 10, 3, 3] before, the two checkpoints' files taken for four: every
    file read back as 10 tensors, 248 reads for 192)."""
    name = "dlio_llama_zero3_two_read_backs"
    f = analysis.fit(log(name))
    assert f.workload["checkpoint"]["tensors_per_file"] == [10, 3]
    r = replay(log(name), tmp_path / "replay")
    assert r.emulated["read_ops"] == r.real["read_ops"] == 192
    assert r.score >= 0.95, r.comparison.table


def test_a_prefetch_wait_and_an_epoch_end_are_no_steps(tmp_path):
    """tf.data: list_files, map(read_file, decode_jpeg) on 2 threads, batch 8, 5 ms a step:
    the steps' own pauses cut 8 files each; two longer pauses (a wait for the prefetch, the
    epoch's end) stand above a jump that made them the steps (batch 40 for 8 before, the
    replay reading 39 % fewer bytes)."""
    name = "tfdata_read_file_map_jpeg"
    f, w = fitted_shape(name)
    assert 0.004 <= w["train"]["computation_time"] <= 0.006
    replay_like(name, tmp_path, equal=("interfaces", "bytes_written"), bytes_rel=0.05)


def test_a_pickle_of_many_objects_in_frames(tmp_path):
    """2 workers pickle.load shards of 64 arrays of 8 KiB: protocol 4's 64 KiB frames asked
    for in turn through a 4 KiB buffer, each a buffer fill and 60 KiB straight in
    (reader.pickle_frame 65536): the replay's reads the job's (0.894 before: 288 calls of
    57 KiB for 544 of 30 KiB, the frames' fills missing). The objects inside a frame cannot
    be seen: a sample is the shard."""
    name = "torch_pickle_shards_workers2"
    f = analysis.fit(log(name))
    rd = f.workload["reader"]
    assert (rd["access"], rd["buffer_size"], rd["pickle_frame"]) == ("pickle", 4096, 65536)
    assert f.workload["train"]["epochs"] == TRUTH[name]["epochs"]
    r = replay_like(name, tmp_path)
    assert r.emulated["read_ops"] == r.real["read_ops"]


@pytest.mark.parametrize("name", ["dlio_png_batches_of_8_2r", "dlio_jpeg_batches_of_4_4r",
                                  "dlio_hdf5_open_per_sample_batches_2r",
                                  "dlio_resnet50_jpeg_spawn3_batches"])
def test_a_batch_is_the_period_of_the_longest_pauses(name):
    """The DLIO benchmark's loop works on each sample between its reads (PIL's decode, an
    HDF5 file's open: 1-2 ms, stretched to 10 ms where 4 ranks share 2 cores) and pauses for
    the step's compute after every batch. No jump in the pauses sets the two apart (or too
    few pauses lie above one), but the longest come after every k-th sample: batch k, the
    compute their median (fitted before as batch 1 and a 1-6 ms compute). In a loader's
    worker (3 spawned workers, batches of 16 JPEGs) the same: its waits for the loop come after
    every 16th image."""
    t = TRUTH[name]
    w = analysis.fit(log(name)).workload
    assert w["reader"]["batch_size"] == t["batch_size"]
    assert t["computation_time_per_step_s"] <= w["train"]["computation_time"] \
        <= 2.5 * t["computation_time_per_step_s"]
    assert w["train"]["epochs"] == t["epochs"]
    assert w["reader"]["read_threads"] == t["read_threads"]


def test_a_periodic_batch_replays(tmp_path):
    r = replay(log("dlio_png_batches_of_8_2r"), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.emulated["read_ops"] == r.real["read_ops"]

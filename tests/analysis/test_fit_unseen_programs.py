"""Fit, replay and wrong shapes on logs of programs of shapes the analysis was not built on
(tests/fixtures/darshan, Darshan 3.5.0 with DXT, truth in truth.json): IOR's random offsets in
a file per process and through independent MPI-IO, IOR's many small segments, a loader of
samples of varied sizes by index from one big file (os.pread, a Megatron-like corpus), and a
data loader's forked workers reading h5py samples at random (non-MPI logs, one per process,
and a `uname` Python runs at start-up)."""
import math

import numpy as np
import pytest

import dlio_mpi_analysis as analysis

from dlio_mpi_analysis.replays.replay import replay
from fitted_runs import TRUTH, fitted_shape, log, replay_like, run_changed

pytestmark = pytest.mark.mpi      # its replays launch ranks under mpiexec


def _shape(name):
    f = analysis.fit(log(name))
    w = f.workload
    ds, rd, io = w["dataset"], w["reader"], w["io"]
    t = TRUTH[name]
    assert f.ranks == t["ranks"]
    assert (ds["format"], ds["num_files_train"], ds["num_samples_per_file"], io["layout"]) \
        == (t["format"], t["num_files"], t["samples_per_file"], t["layout"])
    assert ds["record_length"] == pytest.approx(t["sample_bytes"], rel=0.05)
    assert (w["train"]["epochs"], rd["batch_size"], rd["read_threads"]) \
        == (t["epochs"], t["batch_size"], t["read_threads"])
    return f, ds, rd, io


def test_ior_random_file_per_process():
    """Each rank writes and reads its own file at random: a shuffle of each rank's own
    samples, not of all of them (which would spread a rank's reads over both files)."""
    f, ds, rd, io = _shape("ior_fpp_random")
    assert (io["interface"], rd["transfer_size"]) == ("posix", 16384)
    assert (rd["sample_shuffle"], rd["shuffle_scope"]) == ("seed", "rank")
    assert (io["write_first"], io["write_order"]) == (True, "shuffled")


def test_ior_random_independent_mpiio():
    """Random offsets over the whole shared file: a global shuffle through MPI-IO."""
    f, ds, rd, io = _shape("ior_mpiio_random")
    assert io["interface"] == "mpiio" and rd["sample_shuffle"] == "seed"
    assert "shuffle_scope" not in rd
    assert io["write_order"] == "shuffled"


def test_ior_sixteen_segments():
    f, ds, rd, io = _shape("ior_segments_16")
    assert (io["interface"], rd["transfer_size"]) == ("posix", 16384)
    assert (rd["sample_shuffle"], rd["sharding"]) == ("off", "round_robin")


@pytest.mark.parametrize("name,interface,order", [
    ("ior_coll_segments", "mpiio_coll", ("off", "round_robin")),
    ("ior_hdf5_segments", "hdf5", ("off", "round_robin")),
    ("ior_fpp_segments_random", "posix", ("seed", None))])
def test_more_ior_shapes(name, interface, order):
    """Collective segments, HDF5 segments (a dataset each: the ranks' blocks of 4 transfers in
    turn, seen once libhdf5's metadata reads are left out) and a file per process read at
    random in segments."""
    f, ds, rd, io = _shape(name)
    assert io["interface"] == interface
    assert (rd["sample_shuffle"], rd.get("sharding")) == order


def test_collective_segments_of_blocks_are_block_cyclic(tmp_path):
    """IOR -c -s 2 -b 256k -t 64k on 5 ranks: each collective call reads a 64 KiB piece of
    every rank's 256 KiB block; the pieces in each call's file order are the ranks' in rank
    order, and each rank's are every 5th run of 4 transfers (fitted as contiguous shares
    before: each rank's 4 pieces of a block fell in 4 residues). The replay reads the same
    places: rank 1 the samples 4-7 and 24-27."""
    w = analysis.fit(log("ior_mpiio_coll_segments_5r")).workload
    ds, rd, io = w["dataset"], w["reader"], w["io"]
    assert (io["interface"], io["layout"]) == ("mpiio_coll", "shared")
    assert (ds["num_files_train"], ds["num_samples_per_file"]) == (1, 40)
    assert (rd["sharding"], rd["sharding_block"], rd["sample_shuffle"]) \
        == ("round_robin", 4, "off")
    assert ds["record_length"] == rd["transfer_size"] == 65536
    r = replay(log("ior_mpiio_coll_segments_5r"), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    z = np.load(tmp_path / "replay" / "run" / "latest" / "oplog_rank00001.npz")
    phase = list(z["phases"]).index("train0")
    reads = z[f"e{phase}_op"] == 0
    mpiio = z[f"e{phase}_iface"] == 5
    assert (z[f"e{phase}_offset"][reads & mpiio] // 65536).tolist() \
        == [4, 5, 6, 7, 24, 25, 26, 27]


def test_a_read_only_run_of_another_tasks_blocks_is_a_rank_shift(tmp_path):
    """IOR -a HDF5 -r -Z -s 4 -b 4m -t 256k on 2 ranks of a file written before: -Z came out
    as a swap, so rank 0 read task 1's blocks and rank 1 task 0's. The turns are found round
    robin and their phase too: reader.rank_shift 1 (before: each rank its own blocks). The
    replay's rank 0 reads the odd blocks of 16 transfers, as the job's did."""
    name = "ior_hdf5_read_only_task_shift"
    w = analysis.fit(log(name)).workload
    rd = w["reader"]
    assert (rd["sharding"], rd["sharding_block"], rd["rank_shift"]) == ("round_robin", 16, 1)
    assert "write_first" not in w["io"]
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    for rank in (0, 1):
        z = np.load(tmp_path / "replay" / "run" / "latest" / f"oplog_rank{rank:05d}.npz")
        blocks = set()
        for phase in (p for p, n in enumerate(z["phases"]) if str(n).startswith("train")):
            reads = (z[f"e{phase}_op"] == 0) & (z[f"e{phase}_iface"] == 6)
            blocks |= set((z[f"e{phase}_offset"][reads] // (16 * 262144)).tolist())
        assert blocks == {b for b in range(8) if b % 2 == (rank + 1) % 2}


def test_samples_of_varied_sizes_read_by_index():
    """No read size dominates: the samples' mean and spread, not the size that happens to
    move the most bytes (which gave 337 samples of 49,126 bytes, the largest, and batches of
    3)."""
    t = TRUTH["indexed_pread"]
    f, ds, rd, io = _shape("indexed_pread")
    assert ds["record_length_stdev"] == pytest.approx(t["sample_bytes_stdev"], rel=0.05)
    # a seed whose draws of 512 sizes total the file's bytes (seed 123's: 2.4 % short)
    assert f.workload["train"]["seed"] == f.evidence["size_seed"]["seed"]
    assert f.evidence["size_seed"]["total_difference"] < 0.01
    assert (io["interface"], rd["transfer_size"], rd["sample_shuffle"]) == ("posix", 0, "seed")
    assert f.workload["train"]["computation_time"] \
        == pytest.approx(t["computation_time_per_step_s"], rel=0.25)


def test_records_read_through_a_buffered_file():
    """Each 3000-byte record read by seek and read through Python's buffered file: reads of
    the buffer (4096 bytes) at the records' offsets. The record is the offsets' common
    divisor, not the read size (which gave 188 samples of 4096 bytes and 3 epochs)."""
    t = TRUTH["buffered_records"]
    f, ds, rd, io = _shape("buffered_records")
    assert (rd["access"], rd["buffer_size"], rd["transfer_size"]) \
        == ("buffered", t["buffer_size"], 0)
    assert ds["record_length"] == t["sample_bytes"] and rd["sample_shuffle"] == "seed"


def test_files_read_whole_by_python():
    """Each file opened and read by f.read(): the file in one read, then a read at its end
    that returns nothing; fitted before as an image decoder's reads with one file's size for
    a buffer."""
    t = TRUTH["read_whole"]
    f, ds, rd, io = _shape("read_whole")
    assert (rd["access"], rd["transfer_size"], rd["sample_shuffle"]) == ("file", 0, "seed")
    assert ds["record_length_stdev"] == pytest.approx(t["sample_bytes_stdev"], rel=0.05)


def test_h5py_samples_read_by_forked_workers():
    """One rank (the uname Python's platform module runs writes only its stdout: no process
    of the job), 2 read threads whose own handles are opened anew each epoch, one H5Dread a
    sample."""
    f, ds, rd, io = _shape("h5py_workers")
    assert io["interface"] == "hdf5_sec2" and rd["sample_shuffle"] == "seed"
    assert (rd["worker_files"], rd["hdf5_reads"]) == ("epoch", "sample")
    assert "shuffle_scope" not in rd


def test_parquet_row_groups_read_through_one_open_of_their_file():
    """pyarrow's ParquetFile kept while its 4 row groups are read, a batch each: a footer read a
    file and epoch (reader.parquet_open file), a row group a sample (before: the emulator's one
    row group of 4 rows read whole for every sample, 4 times the bytes, 0.29)."""
    f = analysis.fit(log("parquet_loader"))
    ds, rd = f.workload["dataset"], f.workload["reader"]
    assert (ds["format"], ds["num_files_train"], ds["num_samples_per_file"]) == ("parquet", 8, 4)
    assert (ds["record_length"], ds["parquet_row_group_size"]) == (1048671, 1)
    assert (rd["parquet_open"], rd["batch_size"]) == ("file", 1)
    assert f.evidence["parquet_footer_reads"] == {"footers": 16, "chunks": 64}


@pytest.mark.parametrize("name", ["ior_fpp_random", "ior_mpiio_random", "ior_segments_16",
                                  "indexed_pread", "h5py_workers", "buffered_records",
                                  "ior_coll_segments", "ior_hdf5_segments",
                                  "ior_fpp_segments_random", "read_whole", "torchrun_ddp",
                                  "parquet_loader"])
def test_replay_looks_like_the_real_program(tmp_path, name):
    r = replay_like(name, tmp_path, equal=("files", "interfaces", "bytes_written", "write_ops"))
    # which files ranks taking them at random share is a draw: its binomial spread allowed
    n, p = r.real["files"], r.real["shared_files"] / r.real["files"]
    assert abs(r.emulated["shared_files"] - r.real["shared_files"]) \
        <= 2 * math.sqrt(n * p * (1 - p)), "shared_files"
    # the read order is in the score at every layer, at POSIX from both jobs' traces (before:
    # the replay read the real log without its traces, and the order at POSIX was left out)
    real_order, emulated_order = r.comparison.row("read_order")
    assert real_order is not None and emulated_order is not None, r.comparison.table


def _global_shuffle(w):
    del w["reader"]["shuffle_scope"]


def _in_order(w):
    w["reader"]["sample_shuffle"] = "off"


def _file_per_rank(w):
    w["io"]["layout"] = "multi"
    w["dataset"]["num_files_train"] = 2
    w["dataset"]["num_samples_per_file"] //= 2
    w["reader"]["sharding"] = "block"


def _npz(w):
    w["dataset"]["format"] = "npz"
    w["io"]["interface"] = "posix"
    for key in ("hdf5_reads", "worker_files", "hdf5_dataset_open"):
        del w["reader"][key]
    w["dataset"].pop("hdf5_libver", None)


@pytest.mark.parametrize("name,change", [("ior_fpp_random", _global_shuffle),
                                         ("ior_mpiio_random", _in_order),
                                         ("indexed_pread", _in_order),
                                         ("buffered_records", _in_order),
                                         ("read_whole", _in_order),
                                         ("ior_segments_16", _file_per_rank),
                                         ("h5py_workers", _npz)])
def test_a_replay_of_the_wrong_shape_scores_low(tmp_path, name, change):
    """Each program against its fitted workload changed in one respect: every rank's reads
    spread over all the files, reads in order where the real job read at random (the read
    order, from both jobs' DXT traces), a file per rank for one shared file, NPZ files for
    HDF5 ones."""
    wrong = run_changed(name, tmp_path, change)
    assert wrong.score < 0.6, wrong.table


def test_each_rank_s_half_read_through_chunks_is_its_own():
    """h5py through the MPI-IO driver: each rank reads 8-row slices of its own half of a
    chunked dataset in a shuffled order; libhdf5 reads whole chunks (two slices each) and
    every rank reads the file's metadata at its start. The chunk reads of a rank touch one
    another in one block, the other rank's elsewhere: reader.shuffle_scope rank (a shuffle
    over the whole file before: the chunk reads' starts skip every other slice)."""
    f = analysis.fit(log("h5py_mpio_rows_own_half"))
    rd = f.workload["reader"]
    assert (rd["sample_shuffle"], rd["shuffle_scope"]) == ("seed", "rank")
    assert f.evidence["own_shares"] is True


def test_slices_of_rows_are_batches_of_rows(tmp_path):
    """Each H5Dread one slice of whole rows, ds[s:s + 8] at shuffled s (Darshan's H5D_ACCESS1
    lengths: 8 along the first dimension, the row's points along the other): a row is the
    sample, a slice a batch read as one hyperslab, the slices' starts shuffled
    (reader.shuffle_block 8; before: 64 KiB samples, batch 2, from a slice's bytes)."""
    f, w = fitted_shape("h5py_mpio_rows_own_half", "sample_bytes")
    assert f.evidence["h5d_row_blocks"] == {"row": 8192, "rows": 8}
    assert (w["reader"]["shuffle_block"], w["reader"]["shuffle_scope"]) == (8, "rank")
    replay_like("h5py_mpio_rows_own_half", tmp_path, equal=("files", "interfaces"),
                bytes_rel=0.02)


def test_slices_written_collectively_read_independently(tmp_path):
    """4 ranks write their quarters of a (4096, 1024) float32 dataset in one collective
    H5Dwrite each, then read 16-row slices of their own quarter at shuffled starts inside
    dset.collective, which h5py's fast read path drops (MPIIO_COLL_READS 0). Rows of 4 KiB,
    batch 16, the slices' starts shuffled; read independently (hdf5_coll before, from the
    writes), written collectively in 4 MiB calls (io.write_collective, reader.transfer_size:
    256 H5Dwrite calls of a row each before, and 0.959)."""
    name = "h5py_mpio_row_slices_written_collective"
    f, w = fitted_shape(name, "sample_bytes")
    rd, io = w["reader"], w["io"]
    assert (rd["sample_shuffle"], rd["shuffle_scope"], rd["shuffle_block"]) == ("seed", "rank", 16)
    assert (io["interface"], io["write_first"], io["write_collective"]) == ("hdf5", True, True)
    assert rd["transfer_size"] == 4 << 20
    r = replay_like(name, tmp_path, bytes_rel=0.001)
    assert r.emulated["write_ops"] == r.real["write_ops"] == 4
    assert r.emulated["read_ops"] == r.real["read_ops"]


def test_collective_pieces_side_by_side(tmp_path):
    """IOR -c -s 4 -b 64k -t 64k on 3 ranks: the ranks' pieces of a call lie side by side and
    the one aggregator reads them in one 192 KiB read; each rank's call moved 64 KiB
    (DXT_MPIIO): a sample and the transfer, every 3rd one a rank's (fitted before as 3
    samples of 768 KiB in 192 KiB reads: 3 times the bytes, 0.72)."""
    f = analysis.fit(log("ior_mpiio_coll_adjacent_3r"))
    ds, rd = f.workload["dataset"], f.workload["reader"]
    assert f.evidence["collective_piece"] == 65536
    assert (ds["num_files_train"], ds["num_samples_per_file"], ds["record_length"]) \
        == (1, 12, 65536)
    assert (rd["transfer_size"], rd["sharding"], rd["sample_shuffle"]) \
        == (65536, "round_robin", "off")
    r = replay_like("ior_mpiio_coll_adjacent_3r", tmp_path, equal=("files", "bytes_written"))
    assert r.emulated["read_ops"] == r.real["read_ops"]


def test_an_hdf5_file_written_first_whose_extent_holds_alignment_gaps(tmp_path):
    """IOR --hdf5.setAlignment=1m: 12 MiB of data written in a 14 MiB file (the aligned
    objects' gaps), then read: the writes are the data's, io.write_first (not emulated
    before, 86 % of the file's extent written: 0.87)."""
    name = "ior_hdf5_coll_aligned_3r"
    f = analysis.fit(log(name))
    assert f.evidence["file_size"]["max"] == TRUTH[name]["file_bytes"]
    assert f.workload["io"]["write_first"] is True
    assert f.workload["io"]["interface"] == "hdf5_coll"
    replay_like(name, tmp_path)


def test_segments_read_in_one_burst_are_block_cyclic():
    """IOR's 8 segments through a strided file view, read all at once: each rank's blocks of
    4 transfers every other block, round robin (a load at start of half the file each before,
    consecutive 0.97 for 0)."""
    name = "ior_mpiio_strided_view_segments"
    f, w = fitted_shape(name, "sample_bytes", "read_threads")
    rd = w["reader"]
    assert (rd["sharding"], rd["sharding_block"], w["io"]["read_type"]) \
        == ("round_robin", 4, "on_demand")


def test_hdf5_segments_read_by_each_rank_itself_are_round_robin():
    """IOR -a HDF5 -c -s 4 -b 64k -t 64k on 2 ranks: each rank reads its own pieces inside
    the collective calls, and both read libhdf5's object headers at the same places; those
    small reads, more of them than of the data, are no rank's turn (the layout was fitted
    as two halves before)."""
    f = analysis.fit(log("ior_hdf5_coll_adjacent_2r"))
    rd = f.workload["reader"]
    assert (rd["sharding"], rd["sample_shuffle"]) == ("round_robin", "off")
    assert "sharding_block" not in rd


def test_steps_whose_samples_a_chunk_cache_served():
    """h5py through MPI-IO, single rows of a gzip dataset in chunks of 4 rows, each rank its
    own half shuffled, 3 ms compute a row: libhdf5 reads a chunk only when its cache misses,
    so a pause after a chunk read holds as many rows' compute as rows the cache served, in
    whole multiples of one row's (fitted before as batch 2 at 3.4 ms, the rows' 1.77 a
    chunk read taken for a step's)."""
    t = TRUTH["h5py_mpio_gzip_rows_cached"]
    f = analysis.fit(log("h5py_mpio_gzip_rows_cached"))
    w = f.workload
    assert w["reader"]["batch_size"] == t["batch_size"] == 1
    assert w["train"]["computation_time"] == pytest.approx(t["computation_time_per_step_s"],
                                                           rel=0.15)
    assert (w["reader"]["sample_shuffle"], w["reader"]["shuffle_scope"]) == ("seed", "rank")
    assert w["dataset"]["compression"] == "gzip"


def test_ior_random_offsets_within_segments(tmp_path):
    """IOR -z -s 8 on a shared file, 4 ranks: each 256 KiB segment's 32 transfers dealt to
    the tasks at random, a task's list shuffled once and used in every segment, for its
    writes and its reads alike: reader.shuffle_window 32 (the segment) and io.write_order
    read (before: one shuffle of the whole file, writes in an order of their own). The
    replay's draw of a few positions differs from IOR's in how often it goes back (0.54
    against 0.72 forward): compare counts the noise of an order that repeats over its
    distinct steps, not its calls (0.65 before, 0.70 with the windows alone)."""
    name = "ior_posix_shared_random_segments_4r"
    f = analysis.fit(log(name))
    assert f.workload["reader"]["shuffle_window"] == 32
    assert f.workload["io"]["write_order"] == "read"
    assert f.workload["reader"]["sample_shuffle"] == "seed"
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.8, r.comparison.table
    assert r.emulated["write_ops"] == r.real["write_ops"]


def test_nonblocking_reads_timed_from_their_issue(tmp_path):
    """mpi4py, 2 ranks, each its own file of 16 KiB samples in order, the next batch's 4
    MPI_File_iread_at issued before the 5 ms compute and waited for after it: Darshan times
    each read to its completion, so the reads seemed to last through the steps (a sample of
    4 MiB a file, batch 1, no compute, 4 read threads, shuffled from the counters' completion
    order, before). From their issue times: 256 samples of 16 KiB, batch 4, about 5 ms, in
    order, read by the rank itself."""
    name = "mpi4py_iread_double_buffer_2r"
    f, w = fitted_shape(name, "sample_bytes", "read_threads")
    assert f.evidence["nonblocking_reads"] == 1.0
    assert w["reader"]["sample_shuffle"] == "off"
    assert 0.004 <= w["train"]["computation_time"] <= 0.007
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.emulated["bytes_read"] == r.real["bytes_read"]


@pytest.mark.filterwarnings("ignore::dlio_mpi_analysis.errors.HeatmapMismatchWarning")
def test_turns_of_segments_keep_whole_steps(tmp_path):
    """IOR -a HDF5 -c -s 2 on 4 ranks: the ranks' pauses (waits for the aggregator) made
    batch 3, whose 2 steps a rank read 6 of its 8 samples, no whole turns of 4 (the
    emulator refused the workload: no replay). Batch 2: whole turns."""
    name = "ior_hdf5_coll_segments_4r"
    f = analysis.fit(log(name))
    rd = f.workload["reader"]
    assert rd["sharding_block"] == 4 and rd["batch_size"] == 2
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table


def test_posix_records_under_reused_descriptors_are_no_data_reads(tmp_path):
    """2 forked workers np.fromfile(count, offset) a 4 KiB sample of one file: C stdio reads
    the data (2,048 reads, 8 MiB a worker); the POSIX records of the file hold a worker
    pipe's traffic under the descriptor number stdio closed (8 reads of 4 to 31 bytes, 11
    writes). From the STDIO counters: 4,096 samples of 4 KiB, 2 epochs (559,241 samples of
    30 bytes before, a replay of about 100 minutes for the job's 6 s); compare leaves that
    traffic out of the job's interfaces and writes too (0.40 before: POSIX beside STDIO)."""
    name = "torch_fromfile_offsets_workers2"
    f, w = counted_shape(name, "sample_bytes", "read_threads")
    assert w["io"]["interface"] == "stdio" and "stray_trace" in f.evidence
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.comparison.row("interfaces") == (["STDIO"], ["STDIO"])
    assert r.real["bytes_written"] == 0


def counted_shape(name, *also):
    """fitted_runs.fitted_shape but for the batch, which STDIO counters cannot show."""
    fitted = analysis.fit(log(name))
    w = fitted.workload
    t = TRUTH[name]
    ds, rd = w["dataset"], w["reader"]
    assert fitted.ranks == t["ranks"]
    assert (ds["num_files_train"], ds["num_samples_per_file"], w["train"]["epochs"]) \
        == (t["num_files"], t["samples_per_file"], t["epochs"])
    if "sample_bytes" in also:
        assert ds["record_length"] == t["sample_bytes"]
    if "read_threads" in also:
        assert rd["read_threads"] == t["read_threads"]
    return fitted, w


def test_random_crops_of_a_volume_are_the_emulators_volumes(tmp_path):
    """mpi4py + h5py's MPI-IO driver, 2 ranks: each step a random 16^3 crop of a (128, 128,
    128) dataset in (32, 32, 32) chunks, 3 ms a step. Each H5Dread a box smaller than the
    dataset after its first dimension (no whole rows): crops, dataset.volumes (8,192 rows of
    256 bytes, batch 213 and a whole pass over the volume before: 0.579)."""
    name = "h5py_mpio_random_crops_2r"
    f = analysis.fit(log(name))
    ds, rd = f.workload["dataset"], f.workload["reader"]
    assert (ds["volume_shape"], ds["crop_shape"]) == ([128] * 3, [16] * 3)
    assert ds["volumes"] == [{"name": "vol", "dtype": "uint8", "chunks": [32, 32, 32]}]
    assert ds["num_samples_per_file"] == 128 and rd["batch_size"] == 1
    assert 0.002 <= f.workload["train"]["computation_time"] <= 0.005
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.emulated["read_ops"] == r.real["read_ops"] == 128


def test_each_rank_s_part_of_every_sample_is_a_domain_decomposition(tmp_path):
    """x[i, :, :, 32r:32r + 32] of a (64, 64, 64, 64) dataset in (1, 32, 32, 32) chunks, i
    shuffled, both ranks the same i each step: boxes of one index of the first dimension cut
    in two, no chunk read by both ranks. The crops tile each sample's volume, dealt to the
    ranks a sample's parts at a time (crops at random positions before: 0.28, the order's
    gate; and the order measured at each chunk's MPI-IO call beneath an H5Dread, against the
    replay's H5Dread calls, 0.87 for 0.50)."""
    name = "h5py_mpio_subvolumes_2r"
    t = TRUTH[name]
    f = analysis.fit(log(name))
    ds, rd = f.workload["dataset"], f.workload["reader"]
    assert (ds["crop_placement"], ds["crop_shape"]) == ("tiled", [1, 64, 64, 32])
    assert ds["num_samples_per_file"] == t["samples_per_file"] * t["parts_per_sample"]
    assert (rd["sharding"], rd["sample_shuffle"], rd["shuffle_block"]) \
        == ("round_robin", "seed", 2)
    assert f.workload["train"]["epochs"] == t["epochs"]
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.emulated["read_ops"] == r.real["read_ops"] == 256
    def in_order(w):
        w["reader"].update(sample_shuffle="off")
        w["reader"].pop("shuffle_block")
    (tmp_path / "wrong").mkdir()
    wrong = run_changed(name, tmp_path / "wrong", in_order)
    assert wrong.score < 0.6, wrong.table


def test_sub_volumes_read_collectively_are_collective_crops(tmp_path):
    """The same domain decomposition read with dset.collective (read_direct keeps it): each
    step one collective H5Dread on every rank, its box of the sample. The emulator reads its
    tiles so (hdf5_coll: one box of every rank a call); before, crops were read only
    independently and the fit dropped the collective calls (0.626, the interfaces' gate)."""
    name = "h5py_mpio_subvolumes_coll_2r"
    f = analysis.fit(log(name))
    ds, rd, io = f.workload["dataset"], f.workload["reader"], f.workload["io"]
    assert (ds["crop_placement"], ds["crop_shape"]) == ("tiled", [1, 64, 64, 32])
    assert (io["interface"], io["layout"]) == ("hdf5_coll", "shared")
    assert (rd["sharding"], rd["sample_shuffle"], rd["shuffle_block"]) \
        == ("round_robin", "seed", 2)
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.emulated["read_ops"] == r.real["read_ops"] == 256
    assert "HDF5 collective" in r.emulated["interfaces"]
    (tmp_path / "ind").mkdir()
    independent = run_changed(name, tmp_path / "ind",
                              lambda w: w["io"].update(interface="hdf5"))
    assert independent.score < 0.7, independent.table


def test_an_hdf5_file_read_whole_at_open_is_the_core_driver(tmp_path):
    """h5py File(driver='core'): one POSIX read of the whole file at open, then 64 H5Dread
    calls of 1 MiB with nothing beneath them. Fitted as io.interface hdf5_core (the emulator
    reads the file whole at open, as libhdf5's core driver does, and serves its H5Dread calls
    from memory), a sample an H5Dread (Darshan keeps no dimensions to tell its 16 rows), 2
    epochs at the calls' pace. Before: a load at start through sec2, 0.455."""
    name = "h5py_core_driver"
    f = analysis.fit(log(name))
    ds, rd, io, tr = (f.workload[k] for k in ("dataset", "reader", "io", "train"))
    assert (io["interface"], io["read_type"]) == ("hdf5_core", "on_demand")
    assert (ds["num_samples_per_file"], ds["record_length"]) == (32, 1 << 20)
    assert tr["epochs"] == TRUTH[name]["epochs"]
    assert 0.005 <= tr["computation_time"] <= 0.0065
    assert not any("io.read_type memory" in n for n in f.notes)
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.emulated["read_ops"] == r.real["read_ops"] == 1
    assert r.emulated["bytes_read"] == r.real["bytes_read"] == 33556480
    (tmp_path / "sec2").mkdir()
    sec2 = run_changed(name, tmp_path / "sec2",
                       lambda w: w["io"].update(interface="hdf5_sec2"))
    assert sec2.score < 0.6, sec2.table


def test_whole_chunks_read_at_their_places_are_samples_not_crops(tmp_path):
    """x[:, j:j + 256] of a (256, 16384) float32 dataset in (256, 256) chunks, j a shuffled
    multiple of 256: each H5Dread's box is a chunk's (Darshan's H5D_ACCESS1 lengths those of
    H5D_CHUNK_SIZE), so the chunk is the sample: 64 of 256 KiB, a chunk each, shuffled, 2
    epochs (fitted before as 128 random crops of a 2048^2 cube in one epoch: 0.391)."""
    name = "h5py_column_chunk_slices"
    f = analysis.fit(log(name))
    ds, rd = f.workload["dataset"], f.workload["reader"]
    assert "volumes" not in ds
    assert (ds["num_samples_per_file"], ds["record_length"], ds["chunk_size"]) \
        == (64, 262144, 262144)
    assert (rd["batch_size"], rd["sample_shuffle"], f.workload["train"]["epochs"]) \
        == (1, "seed", 2)
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.emulated["bytes_read"] == pytest.approx(r.real["bytes_read"], rel=0.02)


def test_hdf5_opens_are_the_programs_not_the_driver_s(tmp_path):
    """IOR -a HDF5 -F -e, 2 segments: 5 POSIX opens a file under 2 H5Fopen calls (libhdf5's
    MPI-IO driver opens a file more than once at each): no file opened for each sample."""
    f = analysis.fit(log("ior_hdf5_fpp_fsync_2r"))
    assert "reopen" not in f.workload["reader"]
    assert f.workload["io"]["write_fsync"] is True


def test_rows_read_alone_inside_chunks_have_no_chunk_cache(tmp_path):
    """h5py's File(rdcc_nbytes=0), single shuffled rows of 4 KiB in chunks of 32 KiB: every
    row read on its own, no chunk ever read whole (libhdf5's cache would read a chunk that
    fits it whole at a miss): reader.hdf5_chunk_cache off (0.703 before: 115 MiB of whole
    chunks for 16 MiB of rows)."""
    name = "h5py_rows_no_chunk_cache"
    f, w = fitted_shape(name, "sample_bytes", "read_threads")
    ds, rd = w["dataset"], w["reader"]
    assert (ds["chunk_size"], rd["hdf5_chunk_cache"]) == (32768, "off")
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.emulated["bytes_read"] == pytest.approx(r.real["bytes_read"], rel=0.01)
    assert r.emulated["read_ops"] == r.real["read_ops"]


def test_the_chunk_cache_is_an_hdf5_readers():
    from dlio_mpi.config import loader as config
    with pytest.raises(config.ConfigError) as e:
        config.load(["workload=default", "dataset.format=npz", "reader.hdf5_chunk_cache=off"])
    assert "reader.hdf5_chunk_cache=off" in str(e.value) and "\n" not in str(e.value)


def test_a_checkpoint_all_ranks_write_collectively_beside_their_own_files(tmp_path):
    """4 ranks read their own files by pread and write one shared checkpoint with
    Write_at_all after each epoch: the replay's checkpoint file, opened by all ranks, is
    opened collectively in its op log too, and its writes stay collective (0.000 before:
    the op log counted its opens independent, its file one rank's alone)."""
    name = "mpi4py_ckpt_write_at_all_4r"
    f = analysis.fit(log(name))
    assert f.workload["checkpoint"]["format"] == "mpiio"
    r = replay_like(name, tmp_path)
    assert r.real["interfaces"] == r.emulated["interfaces"] == ["MPI-IO collective"]


def test_chunk_reads_of_rows_beside_their_labels_count_the_rows(tmp_path):
    """2 forked workers read x[i] (rows of chunks of 16, the dataset opened for each read,
    each chunk read whole) and y[i] (a contiguous label read to the dataset's end): the chunk
    reads are the rows' H5Dread calls, a sample each; batch 8 (45 before: the labels' bytes
    kept the chunk reads under the share that counts them)."""
    name = "torch_h5py_xy_chunked_workers2"
    f, w = fitted_shape(name)
    assert w["dataset"]["record_length"] == 3072 + 8
    assert w["dataset"]["hdf5_fields"] == [{"name": "y", "bytes": 8, "dtype": "int64"}]
    assert f.evidence["h5d_samples_per_read"] == pytest.approx(1.0, rel=0.01)
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table


def test_persistent_workers_loading_chunk_files_for_rows(tmp_path):
    """zarr v2 rows in 3 persistent workers: one generation of workers, so the epochs are
    the two halves of the loads in each of which every chunk file was loaded 8 times (16
    epochs of a sample a file before)."""
    name = "zarr_v2_rows_persistent_workers3"
    f, w = fitted_shape(name, "sample_bytes")
    assert (f.evidence["worker_generations"], f.evidence["balanced_passes"]) == (1, 2)
    assert w["reader"]["access"] == "file"
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table


def test_scattered_compound_records_are_rows(tmp_path):
    """ds[sorted(idx)] of 16 shuffled records of a 1-D dataset of 1,032-byte compound
    elements: libhdf5's sieve buffer fills 64 KiB from each record it does not hold, so no
    read is a record's; the element is the row, the H5Dread a batch's union, shuffled from the
    fills going back at each union (0.000 before: 256 samples of 16,512 bytes in order)."""
    name = "h5py_compound_records_batches"
    f, w = fitted_shape(name, "sample_bytes")
    assert w["reader"]["sample_shuffle"] == "seed"
    assert f.evidence["h5d_scattered_rows"] == {"row": 1032, "rows": 16, "share": 1.0}
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.emulated["bytes_read"] == pytest.approx(r.real["bytes_read"], rel=0.02)


def test_parquet_files_in_workers_keep_their_own_reader(tmp_path):
    """pyarrow's iter_batches in 2 forked workers: the footer and all row groups in one read
    each file; the fitted workload is one the emulator takes (refused before: the read
    threads' own open files asked of a format read its own way), and replays the reads
    (0.78 once it ran: each pass's footer read counted as going back in the replay's one
    stream of both epochs)."""
    name = "parquet_iter_batches_workers2"
    f = analysis.fit(log(name))
    assert "worker_files" not in f.workload["reader"]
    r = replay(log(name), tmp_path / "replay")
    for key in ("read_ops", "files"):
        assert r.emulated[key] == r.real[key], key
    assert r.emulated["bytes_read"] == pytest.approx(r.real["bytes_read"], rel=0.01)
    # a file's footer read again at each pass starts the pass: no read going back, in the
    # job (new workers every epoch) as in the replay (one rank's reads of both epochs)
    real, emulated = r.comparison.row("read_order")
    assert real == emulated == 0.5
    assert r.score >= 0.95, r.comparison.table


def test_row_slices_beside_their_labels_and_their_order(tmp_path):
    """4 ranks read x[a:a + 16] and y[a:a + 16] of their own quarters in order: a row with its
    label the sample (2,056 bytes), 16 a slice, in order; the replay's order counts the rows'
    reads, not the labels' read after each (0.104 before: 256 samples of 32,896 bytes, and
    the labels' reads taken for a shuffle in the replay's H5D trace)."""
    name = "h5py_mpio_xy_row_slices_4r"
    f, w = fitted_shape(name)
    ds, rd = w["dataset"], w["reader"]
    assert (ds["record_length"], ds["hdf5_fields"]) \
        == (2048 + 8, [{"name": "y", "bytes": 8, "dtype": "int64"}])
    assert rd["sample_shuffle"] == "off"
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    real, emulated = r.comparison.row("read_order")
    assert emulated == pytest.approx(real, abs=0.05)


def test_a_chunk_cache_smaller_than_a_chunk(tmp_path):
    """h5py.File(rdcc_nbytes=65536) with chunks of 128 KiB, the dataset opened for each read
    in 2 workers: each row read on its own, no chunk ever whole: the emulator's datasets
    without a chunk cache (0.673 before: 256 MiB of whole chunks for 16 MiB of rows)."""
    name = "torch_h5py_rows_small_cache_workers2"
    f, w = fitted_shape(name, "sample_bytes")
    assert w["reader"]["hdf5_chunk_cache"] == "off"
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.emulated["bytes_read"] == pytest.approx(r.real["bytes_read"], rel=0.02)


def test_a_dataset_per_sample_opened_for_each_read():
    """h5py through the MPI-IO driver, one 64 KiB dataset per sample under a group, each
    rank opening its shuffled half's datasets one by one: 256 samples of one file, an
    H5Dread a sample through a dataset opened for it (the labels' reads beside them move
    the mean by 0.4 %)."""
    name = "h5py_mpio_dataset_per_sample_2r"
    f = analysis.fit(log(name))
    w, t = f.workload, TRUTH[name]
    ds, rd, io = w["dataset"], w["reader"], w["io"]
    assert f.ranks == t["ranks"]
    assert (ds["format"], ds["num_files_train"], ds["num_samples_per_file"]) \
        == ("hdf5", t["num_files"], t["samples_per_file"])
    assert ds["record_length"] == pytest.approx(t["sample_bytes"], rel=0.01)
    assert (rd["batch_size"], w["train"]["epochs"]) == (t["batch_size"], t["epochs"])
    assert (rd["hdf5_reads"], rd["sample_shuffle"]) == ("sample", "seed")
    assert io["interface"].startswith("hdf5")


def test_a_main_process_reading_each_file_s_metadata_orders_nothing():
    """A DataLoader's 2 persistent workers read shuffled (shard, row) samples of 8 HDF5
    shards; before them the main process opened each shard in name order to read its shape
    (metadata reads alone, of a few hundred bytes): its files' order is no sample order,
    the samples are shuffled (before: taken in order from the main's index pass)."""
    name = "torch_h5py_lzf_shards_persistent_workers2"
    f = analysis.fit(log(name))
    w, t = f.workload, TRUTH[name]
    ds, rd = w["dataset"], w["reader"]
    assert (f.ranks, rd["read_threads"], rd["batch_size"], w["train"]["epochs"]) \
        == (t["ranks"], t["read_threads"], t["batch_size"], t["epochs"])
    assert (ds["num_files_train"], ds["num_samples_per_file"]) \
        == (t["num_files"], t["samples_per_file"])
    assert rd["sample_shuffle"] == "seed"
    assert f.evidence["files_in_name_order"] is None

"""Fit, replay and wrong shapes on logs of h5bench and of a tf.data pipeline
(tests/fixtures/darshan, Darshan 3.5.0 with DXT, truth in truth.json): h5bench_read of what
h5bench_write wrote, contiguous by collective calls and strided by independent ones, and
TFRecord files read by TensorFlow's own threads, two files at once, named in order or as a
shuffled list (non-MPI logs with the `uname -p` Python runs at start-up)."""
import math

import pytest

import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.replays.replay import replay

from fitted_runs import TRUTH, log, replay_like, run_changed

pytestmark = [
    pytest.mark.mpi,      # its replays launch ranks under mpiexec
    # the TensorFlow process's log holds a negative POSIX_F_META_TIME in a record of no data
    # file (Darshan's own), which characterize warns of and counts as 0
    pytest.mark.filterwarnings("ignore:.*negative POSIX_F_META_TIME"
                               ":dlio_mpi_analysis.errors.InvalidCounterWarning")]

READS = ["h5bench_contig_coll_read", "h5bench_strided_indep_read", "tfdata_parallel_reads",
         "tfdata_list_files_interleave"]


def _shape(name):
    f = analysis.fit(log(name))
    w = f.workload
    ds, rd, io = w["dataset"], w["reader"], w["io"]
    t = TRUTH[name]
    assert f.ranks == t["ranks"]
    assert (ds["format"], ds["num_files_train"], io["layout"]) \
        == (t["format"], t["num_files"], t["layout"])
    assert (w["train"]["epochs"], rd["read_threads"]) == (t["epochs"], t["read_threads"])
    assert "checkpoint" not in w and "checkpoint" not in w["workflow"]
    return f, w, ds, rd, io


def test_h5bench_contiguous_collective_read():
    """One collective H5Dread a dataset (not a step's datasets in one union), the 8 datasets of
    a timestep a step, in h5bench's own order of them (a step cut by a slow collective call
    before: batches of 4 and 5)."""
    t = TRUTH["h5bench_contig_coll_read"]
    f, w, ds, rd, io = _shape("h5bench_contig_coll_read")
    assert (ds["num_samples_per_file"], ds["record_length"]) \
        == (t["samples_per_file"], t["sample_bytes"])
    assert (io["interface"], rd["batch_size"], rd["sample_shuffle"]) \
        == ("hdf5_coll", t["batch_size"], "off")
    assert (rd["hdf5_reads"], rd["batch_order"]) == ("sample", t["batch_order"])
    assert w["train"]["computation_time"] \
        == pytest.approx(t["computation_time_per_step_s"], rel=0.1)


def test_h5bench_strided_independent_read():
    """A strided selection of each dataset, a quarter of the file read once: 4 steps of 8
    samples a rank, not the whole file (which read 4 times the bytes)."""
    t = TRUTH["h5bench_strided_indep_read"]
    f, w, ds, rd, io = _shape("h5bench_strided_indep_read")
    assert ds["record_length"] == t["sample_bytes"]
    assert ds["num_samples_per_file"] == pytest.approx(t["samples_per_file"], rel=0.05)
    assert (io["interface"], rd["batch_size"], rd["hdf5_reads"], rd["sample_shuffle"]) \
        == ("hdf5", t["batch_size"], "sample", "off")
    assert w["train"]["total_training_steps"] == t["steps_per_rank"]


@pytest.mark.parametrize("name,collective", [("h5bench_contig_coll_write", True),
                                             ("h5bench_strided_indep_write", False)])
def test_h5bench_writes_replay_as_a_shared_hdf5_checkpoint(tmp_path, name, collective):
    """h5bench's write benchmark (no read): one shared HDF5 file written by every rank, in
    collective H5Dwrite calls or independent ones (checkpoint.collective), as many as its."""
    f = analysis.fit(log(name))
    ck = f.workload["checkpoint"]
    assert (ck["format"], ck["writers"], ck["num_checkpoints_read"]) == ("hdf5", "all", 0)
    assert ck.get("collective", True) is collective
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.comparison.layer == "HDF5"
    assert r.emulated["write_ops"] == r.real["write_ops"]
    assert r.emulated["bytes_written"] == r.real["bytes_written"]
    assert ("HDF5 collective" in r.comparison.row("interfaces")[1]) is collective


@pytest.mark.parametrize("name,threads,file_shuffle", [
    ("tfdata_parallel_reads", 2, None), ("tfdata_list_files_interleave", 0, "seed")])
def test_tfdata_pipelines(name, threads, file_shuffle):
    """One process (the uname log is no rank: fitted as 2 ranks before), no checkpoint (Python's
    tempfile probe at TensorFlow's import, 4 bytes, was one), TensorFlow's 256 KiB reads of
    each file, two files at once (4 before: the parallel interleave reads its next files'
    first block ahead), in a new order every epoch for a shuffled file list (in name order
    before). The records cannot be seen in a stream's reads: the files' bytes are kept."""
    t = TRUTH[name]
    f, w, ds, rd, io = _shape(name)
    assert (rd["access"], rd["transfer_size"], rd["eof_reads"], rd["interleave"]) \
        == ("stream", t["read_size"], t["eof_reads"], t["files_at_once"])
    assert rd.get("file_shuffle") == file_shuffle and rd["sample_shuffle"] == "off"
    assert (io["interface"], rd["read_threads"]) == ("posix", threads)
    assert ds["num_samples_per_file"] * (ds["record_length"] + 16) \
        == pytest.approx(t["file_bytes"], rel=0.01)


def test_strided_reads_keep_the_order_of_their_h5dread_calls():
    """h5bench's strided read: each H5Dread of a strided selection is 16 block reads beneath;
    taken back to their calls (the data reads over H5D_READS), a step reads its 8 datasets
    as h5bench lists them (x y z id_1 id_2 px py pz), not as they lie in the file (x y z px py
    pz id_1 id_2): reader.batch_order, so that the order compared at HDF5, an H5Dread a call,
    is the job's (0.871 against 1 before)."""
    f = analysis.fit(log("h5bench_strided_indep_read"))
    assert f.workload["reader"]["batch_order"] == [0, 1, 2, 6, 7, 3, 4, 5]


def test_files_of_no_format_read_several_at_once_are_a_stream(tmp_path):
    """GZIP TFRecords named train-0000N-of-00008 (no format in the name: raw), 4 at once
    through tf.data's interleave, each front to back in 256 KiB blocks: a stream of 4 files
    at once in a new file order each epoch (fitted before as raw samples in a shuffled order:
    0.20, the order's gate)."""
    name = "tfdata_gzip_unnamed_interleave"
    f = analysis.fit(log(name))
    w = f.workload
    rd = w["reader"]
    assert (w["dataset"]["num_files_train"], f.ranks, w["train"]["epochs"]) == (8, 1, 2)
    assert (rd["access"], rd["transfer_size"], rd["interleave"]) == ("stream", 262144, 4)
    assert (rd["file_shuffle"], rd["sample_shuffle"]) == ("seed", "off")
    replay_like(name, tmp_path)


@pytest.mark.parametrize("name", READS)
def test_replay_looks_like_the_real_program(tmp_path, name):
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    for key in ("files", "interfaces", "read_ops", "bytes_written", "write_ops"):
        assert r.emulated[key] == r.real[key], key
    assert r.emulated["bytes_read"] == pytest.approx(r.real["bytes_read"], rel=0.01)
    real_order, emulated_order = r.comparison.row("read_order")
    assert real_order is not None and math.isclose(real_order, emulated_order, abs_tol=0.05)


def _shuffled(w):
    w["reader"]["sample_shuffle"] = "seed"
    w["reader"].pop("batch_order", None)


def _npz(w):
    w["dataset"]["format"] = "npz"
    w["io"]["interface"] = "posix"
    for key in ("hdf5_reads", "hdf5_dataset_open", "batch_order"):
        w["reader"].pop(key, None)
    w["train"].pop("total_training_steps", None)
    for key in ("enable_chunking", "chunk_size", "hdf5_libver"):
        w["dataset"].pop(key, None)


def _records_at_random(w):
    """Each 8 KiB record read by itself at random (a map-style dataset over an index of the
    records), not the files streamed in 256 KiB blocks."""
    t = TRUTH["tfdata_parallel_reads"]
    for key in ("access", "eof_reads", "interleave", "file_shuffle"):
        w["reader"].pop(key, None)
    w["dataset"].update(record_length=t["sample_bytes"],
                        num_samples_per_file=t["samples_per_file"])
    w["reader"].update(sample_shuffle="seed", transfer_size=0, batch_size=t["batch_size"])


@pytest.mark.parametrize("name,change", [("h5bench_contig_coll_read", _shuffled),
                                         ("h5bench_strided_indep_read", _npz),
                                         ("tfdata_parallel_reads", _records_at_random)])
def test_a_replay_of_the_wrong_shape_scores_low(tmp_path, name, change):
    """h5bench's datasets read at random, NPZ files for its HDF5 file, and TFRecord records
    read at random by sample where TensorFlow streams its files."""
    wrong = run_changed(name, tmp_path, change)
    assert wrong.score < 0.6, wrong.table


def test_a_results_table_is_no_checkpoint(tmp_path):
    """h5bench_read's CSV_FILE (its results, 303 bytes through stdio, never read) is a report,
    not a checkpoint (the replay, which writes none, scored 0 by the checkpoint files)."""
    from dlio_mpi_analysis.characterization.characterize import characterize
    c = characterize(log("h5bench_3d_read_csv"))
    csv = [i for i, n in c.names.items() if n.endswith("read.csv")]
    assert csv and all(c.roles[i] == "other" for i in csv)
    replay_like("h5bench_3d_read_csv", tmp_path, equal=("interfaces", "bytes_written"))

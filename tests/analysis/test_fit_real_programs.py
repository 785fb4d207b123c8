"""Fit and replay on real programs' Darshan logs (tests/fixtures/darshan: the DLIO benchmark's
PyTorch path and IOR under a Darshan 3.5.0 runtime, DXT on; truth.json holds what each run
was): the fit recovers the program's shape, and a replay of it on the emulator looks like the
real job to analyze compare."""
import json
import os

import pytest

import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.replays.replay import replay
from dlio_mpi.formats import jpeg

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                    "darshan")
with open(os.path.join(HERE, "truth.json")) as _f:
    TRUTH = json.load(_f)


def log(name):
    return os.path.join(HERE, f"{name}.darshan")


def test_numpy_loads_of_one_sample_files():
    """unet3d as the DLIO benchmark runs it: 32 NPZ files of one 8 MiB sample, each rank its
    16 files in name order, numpy.load per sample, 2 epochs, no read threads."""
    t = TRUTH["dlio_unet3d_npz"]
    f = analysis.fit(log("dlio_unet3d_npz"))
    w = f.workload
    assert f.ranks == t["ranks"] == 2
    assert (w["dataset"]["format"], w["dataset"]["num_files_train"]) == ("npz", t["num_files"])
    assert w["dataset"]["num_samples_per_file"] == t["samples_per_file"] == 1
    assert w["dataset"]["record_length"] == pytest.approx(t["sample_bytes"], rel=0.05)
    assert (w["reader"]["access"], w["reader"]["buffer_size"]) == ("numpy", 4096)
    assert w["reader"]["sample_shuffle"] == "off"       # each rank its files, in order
    assert (w["io"]["interface"], w["io"]["layout"]) == ("posix", "multi")
    assert w["train"]["epochs"] == t["epochs"] and w["reader"]["read_threads"] == 0
    # the pause between steps: the 0.05 s of compute and the loader's own time per step
    assert 0.05 <= w["train"]["computation_time"] <= 0.08
    assert w["reader"]["batch_size"] == t["batch_size"] == 4


def test_numpy_loads_of_stacked_samples():
    """Four samples per file in one stacked array (x), as the DLIO benchmark writes NPZ: every
    sample loads the whole file, the four loads of a file in a row."""
    t = TRUTH["dlio_npz_multi"]
    f = analysis.fit(log("dlio_npz_multi"))
    w = f.workload
    ds = w["dataset"]
    assert f.ranks == 4 and ds["num_files_train"] == t["num_files"]
    assert (ds["npz_layout"], ds["num_samples_per_file"]) == ("stacked", t["samples_per_file"])
    assert ds["record_length"] == pytest.approx(t["sample_bytes"], rel=0.05)
    assert (w["train"]["epochs"], w["reader"]["batch_size"]) == (t["epochs"], t["batch_size"])
    assert any("loaded whole 4 times in a row" in n for n in f.notes)


def test_hdf5_samples_and_opens():
    """h5py, one sample per H5Dread, the file opened for each sample."""
    t = TRUTH["dlio_hdf5"]
    w = analysis.fit(log("dlio_hdf5")).workload
    assert (w["dataset"]["format"], w["dataset"]["num_files_train"]) == ("hdf5", 16)
    assert w["dataset"]["num_samples_per_file"] == t["samples_per_file"]
    assert w["dataset"]["record_length"] == t["sample_bytes"]
    assert w["io"]["interface"] == "hdf5_sec2" and w["reader"]["reopen"] is True
    assert w["dataset"]["hdf5_libver"] == "latest"     # a 32-byte superblock read at 16
    assert w["reader"]["sample_shuffle"] == "off" and w["train"]["epochs"] == t["epochs"]


def test_jpeg_files_read_as_pil_reads_them():
    """The DLIO benchmark's JPEG files through PIL: per file 4 KiB (the header's buffer
    fill), 60 KiB (to the first 64 KiB request's end), the rest, and the end-of-file probe."""
    t = TRUTH["dlio_jpeg"]
    f = analysis.fit(log("dlio_jpeg"))
    w = f.workload
    assert (w["dataset"]["num_files_train"], w["dataset"]["num_samples_per_file"]) == (64, 1)
    # the format's record length is the image's pixels; its files have the real files' size
    assert w["dataset"]["format"] == "jpeg"
    side = int(round(w["dataset"]["record_length"] ** 0.5))
    lo, hi = t["files_bytes_min_max"]
    assert 0.99 * lo <= jpeg.file_bytes(side) <= 1.01 * hi
    assert (w["reader"]["access"], w["reader"]["buffer_size"], w["reader"]["transfer_size"]) \
        == ("image", 4096, 65536)
    assert (w["reader"]["batch_size"], w["train"]["epochs"]) == (t["batch_size"], t["epochs"])


def test_ior_file_per_process():
    w = analysis.fit(log("ior_fpp")).workload
    assert (w["dataset"]["num_files_train"], w["io"]["layout"]) == (2, "multi")
    assert w["dataset"]["num_samples_per_file"] * w["dataset"]["record_length"] == 4 << 20
    assert w["reader"]["transfer_size"] == 1 << 20
    # IOR writes its files, then reads them back (no fsync without -e)
    assert w["io"]["write_first"] is True and "write_fsync" not in w["io"]


def test_ior_segments_are_round_robin():
    """IOR -s 8 -b 256k -t 64k on one shared file, 2 ranks: the ranks' 256 KiB blocks
    interleave, each read in 64 KiB transfers."""
    w = analysis.fit(log("ior_strided")).workload
    assert (w["io"]["layout"], w["dataset"]["num_files_train"]) == ("shared", 1)
    assert (w["dataset"]["record_length"], w["reader"]["transfer_size"]) == (256 << 10, 64 << 10)
    assert w["dataset"]["num_samples_per_file"] == 16
    assert w["reader"]["sharding"] == "round_robin" and w["reader"]["sample_shuffle"] == "off"


def test_ior_hdf5_written_then_read():
    """IOR -a HDF5 -w -r -b 1m -t 256k -s 4, 2 ranks: one shared HDF5 file through the MPI-IO
    driver, written, then read back, in 256 KiB H5Dwrite and H5Dread calls."""
    t = TRUTH["ior_hdf5"]
    f = analysis.fit(log("ior_hdf5"))
    w = f.workload
    assert f.ranks == t["ranks"]
    assert (w["dataset"]["format"], w["dataset"]["num_files_train"]) == ("hdf5", t["num_files"])
    assert (w["io"]["interface"], w["io"]["layout"]) == ("hdf5", "shared")
    assert w["dataset"]["record_length"] == t["transfer_size"]
    assert w["dataset"]["num_samples_per_file"] * w["dataset"]["record_length"] \
        == t["data_bytes_total"]
    assert w["io"]["write_first"] is True and "write_fsync" not in w["io"]
    assert any(f"{t['h5d']['H5D_WRITES']} H5Dwrite calls to {t['datasets']} datasets" in n
               for n in f.notes)


def test_tensorflow_tfrecord_reader_is_an_interleaved_stream():
    """resnet50 as the DLIO benchmark's TensorFlow reader reads it: each rank's 4 files at
    once (num_parallel_reads), each front to back in 256 KiB reads and one read at its end
    that returns nothing, 2 epochs, the pipeline reading into each file's next pass after
    an epoch's last step (passes cut where a read goes back)."""
    t = TRUTH["dlio_tfrecord"]
    f = analysis.fit(log("dlio_tfrecord"))
    w = f.workload
    ds, rd = w["dataset"], w["reader"]
    assert f.ranks == t["ranks"]
    assert (ds["format"], ds["num_files_train"]) == ("tfrecord", t["num_files"])
    assert (rd["access"], rd["transfer_size"], rd["eof_reads"], rd["interleave"]) \
        == ("stream", t["read_size"], t["eof_reads"], t["files_at_once"])
    assert rd["sample_shuffle"] == "off" and "file_shuffle" not in rd
    assert (w["io"]["interface"], w["io"]["layout"]) == ("posix", "multi")
    assert w["train"]["epochs"] == t["epochs"]
    # records of about a block, as many as keep the file its size
    assert abs(ds["num_samples_per_file"] * (ds["record_length"] + 16) - t["file_bytes"]) \
        < ds["num_samples_per_file"] + 16


def test_replay_of_the_tensorflow_reader(tmp_path):
    """Its replay: the real job's files, none shared, POSIX, reads of its size; the bytes are
    an epoch's (the real pipeline's reads into a next pass past the last step are not
    emulated: 14.8 % fewer)."""
    r = replay(log("dlio_tfrecord"), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    for key in ("files", "shared_files", "interfaces"):
        assert r.emulated[key] == r.real[key], key
    assert r.emulated["mean_read_size"] == pytest.approx(r.real["mean_read_size"], rel=0.01)
    t = TRUTH["dlio_tfrecord"]
    assert r.emulated["bytes_read"] == pytest.approx(t["epochs"] * t["files_bytes_total"],
                                                     rel=0.01)


def test_the_dlio_benchmarks_own_tensorflow_file_runs_as_it_ran(tmp_path):
    """The DLIO benchmark's resnet50 file for its TensorFlow reader, run by the emulator at the
    real run's shape (the same overrides as truth.json's command), looks like the real run to
    analyze compare: each rank's own files, read as a stream, 4 at once."""
    from dlio_mpi_analysis.comparison.compare import compare
    from dlio_mpi_analysis.replays.launch import run_emulator
    fixture = os.path.join(os.path.dirname(HERE), "dlio_resnet50_tf.yaml")
    out = tmp_path / "run"
    run_emulator("dlio file", 2, ["run", "--config", fixture,
                                  f"dataset.data_folder={tmp_path / 'data'}",
                                  f"output.folder={out}", "io.keep_oplog=true",
                                  "workflow.generate_data=true", "dataset.num_files_train=8",
                                  "dataset.num_samples_per_file=300", "reader.batch_size=25",
                                  "train.computation_time=0.01", "train.epochs=2"])
    c = compare([log("dlio_tfrecord"), str(out)], labels=["real", "emulated"])
    assert c.scores["emulated"] >= 0.95, c.table
    for metric in ("files", "shared_file_fraction", "mean_read_size"):
        real, emulated = c.row(metric)
        assert emulated == pytest.approx(real, rel=0.01), (metric, c.table)


@pytest.mark.parametrize("name,least", [("dlio_npz_multi", 0.95), ("dlio_hdf5", 0.95),
                                        ("dlio_jpeg", 0.95),
                                        ("ior_fpp", 0.95), ("ior_strided", 0.95),
                                        ("ior_mpiio_coll", 0.95), ("ior_hdf5", 0.95)])
def test_replay_looks_like_the_real_job(tmp_path, name, least):
    """Fit, generate, run under mpiexec at the log's rank count, compare: the emulated job has
    the real one's files, sharing, interfaces, bytes and calls."""
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= least, r.comparison.table
    for key in ("files", "shared_files", "interfaces"):
        assert r.emulated[key] == r.real[key], key
    assert r.emulated["bytes_read"] == pytest.approx(r.real["bytes_read"], rel=0.02)
    if name.startswith("dlio_"):    # the same reads: numpy's, the HDF5 format's, PIL's
        assert r.emulated["read_ops"] == r.real["read_ops"]
    else:                           # IOR: its writes, then its reads, in its transfer size
        c = r.comparison
        t = TRUTH[name]     # at the HDF5 layer, the dataset's bytes (not the file's header)
        assert c.row("bytes_written") == (t.get("data_bytes_total", t["files_bytes_total"]),) * 2
        assert r.emulated["bytes_written"] == r.real["bytes_written"]
        assert c.row("read_ops")[0] == c.row("read_ops")[1]
        assert c.row("write_ops")[0] == c.row("write_ops")[1]
    assert json.loads((tmp_path / "replay" / "replay.json").read_text())["score"] == r.score

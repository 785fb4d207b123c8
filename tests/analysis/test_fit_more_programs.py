"""Fit and replay on logs of programs of other shapes than the DLIO benchmark's and IOR's
defaults (tests/fixtures/darshan, Darshan 3.5.0 with DXT, truth in truth.json): numpy.load of
.npy files (header through Python's file, array through C stdio), h5py hyperslabs of a
chunked dataset, pandas.read_csv, and data loaders whose forked worker processes left one
non-MPI log each (the DLIO benchmark with read threads, a torch DataLoader)."""
import json
import os

import pytest

import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.loading.loader import load
from dlio_mpi_analysis.replays.replay import replay

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                    "darshan")
with open(os.path.join(HERE, "truth.json")) as _f:
    TRUTH = json.load(_f)


def log(name):
    path = os.path.join(HERE, name)
    return path if os.path.isdir(path) else f"{path}.darshan"


def test_numpy_load_of_npy_files():
    """Each load: a 4 KiB buffer fill at offset 0 (POSIX), the array in one fread (STDIO):
    the file's STDIO bytes count with its POSIX ones, the array is the sample."""
    t = TRUTH["numpy_npy"]
    f = analysis.fit(log("numpy_npy"))
    w = f.workload
    ds, rd = w["dataset"], w["reader"]
    assert f.ranks == t["ranks"]
    assert (ds["format"], ds["num_files_train"], ds["num_samples_per_file"]) \
        == ("npy", t["num_files"], t["samples_per_file"])
    assert ds["record_length"] == t["sample_bytes"]
    assert (rd["access"], rd["buffer_size"], rd["transfer_size"]) == ("numpy", 4096, 0)
    assert (w["io"]["interface"], w["io"]["layout"]) == ("posix", "multi")
    assert (w["train"]["epochs"], rd["batch_size"], rd["read_threads"]) \
        == (t["epochs"], t["batch_size"], t["read_threads"])
    assert rd["sample_shuffle"] == "off"
    assert t["computation_time_per_step_s"] <= w["train"]["computation_time"] <= 0.02
    assert f.evidence["npy_loads"] == {"loads": 32, "buffer_size": 4096,
                                       "array_bytes": t["sample_bytes"]}


def test_h5py_hyperslabs_of_a_chunked_dataset():
    """64-row hyperslabs (256 KiB) of a dataset in 16-row chunks (64 KiB): libhdf5 reads four
    chunks per H5Dread; the chunk is recovered, a row is the sample and a hyperslab a batch of
    64 rows read as one slice (Darshan's H5D_ACCESS1 lengths), and the samples' order without
    libhdf5's metadata reads is the program's (in order)."""
    t = TRUTH["h5py_chunked"]
    w = analysis.fit(log("h5py_chunked")).workload
    ds = w["dataset"]
    assert (ds["format"], ds["num_files_train"], w["io"]["layout"]) == ("hdf5", 1, "shared")
    assert (ds["num_samples_per_file"], ds["record_length"]) \
        == (t["samples_per_file"], t["sample_bytes"])
    assert (ds["enable_chunking"], ds["chunk_size"]) == (True, t["chunk_bytes"])
    assert ds["hdf5_libver"] == "earliest"
    assert w["io"]["interface"] == "hdf5_sec2" and w["reader"]["sample_shuffle"] == "off"
    assert (w["train"]["epochs"], w["reader"]["batch_size"]) == (t["epochs"], t["batch_size"])


def test_pandas_csv_is_a_stream_of_files_of_their_size():
    t = TRUTH["pandas_csv"]
    w = analysis.fit(log("pandas_csv")).workload
    ds, rd = w["dataset"], w["reader"]
    assert (ds["format"], ds["num_files_train"]) == ("csv", t["num_files"])
    assert (rd["access"], rd["transfer_size"], rd["eof_reads"]) == ("stream", t["read_size"], 2)
    lo, hi = t["files_bytes_min_max"]
    assert lo - 4 * ds["num_samples_per_file"] <= ds["record_length"] \
        * ds["num_samples_per_file"] <= hi
    assert ds["record_length"] % 4 == 0 and w["train"]["epochs"] == t["epochs"]


def test_worker_processes_take_their_parents_rank():
    """A DLIO run on one rank with 2 persistent DataLoader workers: 5 non-MPI logs, of which
    the workers' (named with the rank's job id) join the rank, and the start-up helpers'
    (orted, uname: no records) are no process of the job."""
    job = load(log("dlio_npz_workers"), dxt=True).frames()
    assert len(job.paths) == 5 and job.nprocs == 1
    assert list(job.workers) == [0] and len(job.workers[0]) == 2
    assert set(job.records["POSIX"]["rank"]) == {0}
    assert set(job.dxt_segments["DXT_POSIX"]["rank"]) == {0}
    assert job.dxt_segments["DXT_POSIX"]["process"].nunique() == 2
    assert "dlio_benchmark" in job.exe


@pytest.mark.parametrize("name", ["dlio_npz_workers", "torch_npy_workers"])
def test_worker_processes_are_read_threads(name):
    t = TRUTH[name]
    f = analysis.fit(log(name))
    w = f.workload
    ds, rd = w["dataset"], w["reader"]
    assert f.ranks == t["ranks"] == 1
    assert (ds["format"], ds["num_files_train"], ds["num_samples_per_file"]) \
        == (t["format"], t["num_files"], t["samples_per_file"])
    assert ds["record_length"] == pytest.approx(t["sample_bytes"], rel=0.05)
    assert (rd["read_threads"], rd["batch_size"], w["train"]["epochs"]) \
        == (t["read_threads"], t["batch_size"], t["epochs"])
    assert rd["access"] == "numpy" and rd["sample_shuffle"] == "off"
    assert any("forked worker processes" in n for n in f.notes)


# torch_npy_workers: 1.00 measured (2026-12-05), with its workers' pipe traffic that Darshan
# counted under the .npy files left out by the loader (dlio_mpi_analysis.loading.reused_descriptors);
# spawn_npy_workers (2 ranks of 2 spawned workers, tests/analysis/test_process_roles.py): 1.00
# measured (2026-12-06)
@pytest.mark.parametrize("name,least", [("numpy_npy", 0.95), ("h5py_chunked", 0.95),
                                        ("pandas_csv", 0.95), ("dlio_npz_workers", 0.95),
                                        ("torch_npy_workers", 0.97),
                                        ("spawn_npy_workers", 0.95)])
def test_replay_looks_like_the_real_program(tmp_path, name, least):
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= least, r.comparison.table
    for key in ("files", "shared_files", "interfaces"):
        assert r.emulated[key] == r.real[key], key
    assert r.emulated["read_ops"] == r.real["read_ops"]
    assert r.emulated["bytes_read"] == pytest.approx(r.real["bytes_read"], rel=1e-3)

"""io.write_first on dataset.format=hdf5: the run writes its HDF5 files through libhdf5 (the
native engine: H5Dwrite of whole rows, reader.transfer_size bytes at most), each row by the
rank that reads it first, then reads them; the files are the ones h5py generation makes, the
writes are in the op log."""

import h5py
import numpy as np
import pytest

from dlio_mpi.config import loader as config
from dlio_mpi.data import generation as datagen
from dlio_mpi.config.errors import ConfigError
from dlio_mpi.data.dataset import Dataset
from dlio_mpi.formats import hdf5
from datautil import load_npz, own_summary
from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

REC = 40 << 10
H5D = {"hdf5": 6, "hdf5_coll": 7, "hdf5_sec2": 8}


def _args(tmp_path, *extra):
    return [f"dataset.data_folder={tmp_path}/data", f"output.folder={tmp_path}/out",
            "dataset.format=hdf5", f"dataset.record_length={REC}", "reader.batch_size=2",
            "train.epochs=1", "io.write_first=true", "io.keep_oplog=true", *extra]


def _run(tmp_path, n, *extra):
    args = _args(tmp_path, *extra)
    cfg = config.load(["workload=default"] + args)
    run_mpi(n, "run_cli.py", "run", *args, timeout=240)
    d = Dataset(cfg)
    for f in range(d.num_files):
        with h5py.File(d.path(f), "r") as h:
            x = h[d.spec.dataset]
            assert (x.shape, x.dtype) == ((d.spf, REC), np.uint8)
            rows = x[...]
            for i in range(d.spf):
                assert rows[i].tobytes() == hdf5.sample_bytes(d.spec, f, i).tobytes(), (f, i)
            superblock = h.id.get_create_plist().get_version()[0]
            assert (superblock >= 2) == (d.spec.libver == "latest")
            chunks = x.chunks
    assert datagen.read_manifest(cfg.dataset.data_folder) == datagen.manifest_for(cfg)
    s = own_summary(tmp_path / "out")
    assert s["write"]["bytes_written"] == d.num_files * d.spf * REC
    logs = []
    for r in range(n):
        z = load_npz(tmp_path / "out" / "latest" / f"oplog_rank{r:05d}.npz")
        assert list(z["phases"][:1]) == ["write"]
        logs.append({k: z[f"e0_{k}"] for k in ("op", "file", "offset", "bytes", "iface")})
        # no H5Dread in the write phase (under sec2, libhdf5's sieve buffer reads beneath)
        assert not ((logs[-1]["op"] == 0) & (logs[-1]["iface"] != 0)).any()
    return cfg, d, logs, chunks


def _h5d_writes(log, iface):
    w = (log["op"] == 1) & (log["iface"] == iface)
    return list(zip(log["file"][w].tolist(), log["offset"][w].tolist(),
                    log["bytes"][w].tolist()))


def test_shared_file_written_in_transfer_size_rows(tmp_path):
    """2 ranks, each its contiguous half (block sharding, no shuffle) of 32 rows, in H5Dwrite
    calls of 2 rows (80 KiB), independent, into a chunked dataset (2 rows a chunk), the file
    flushed (H5Fflush) once after."""
    cfg, d, logs, chunks = _run(
        tmp_path, 2, "io.interface=hdf5", "io.layout=shared", "dataset.num_files_train=1",
        "dataset.num_samples_per_file=32", "reader.sample_shuffle=off",
        f"reader.transfer_size={2 * REC}", "dataset.enable_chunking=true",
        f"dataset.chunk_size={2 * REC}", "io.write_fsync=true")
    assert chunks == (2, REC)
    for r, log in enumerate(logs):
        want = [(0, (16 * r + 2 * k) * REC, 2 * REC) for k in range(8)]
        assert _h5d_writes(log, H5D["hdf5"]) == want
        assert int((log["op"] == 4).sum()) == 1


def test_shared_file_collective_round_robin(tmp_path):
    """3 ranks, shuffled round robin over 30 rows, one row per collective H5Dwrite: every rank
    makes the same number of calls (the short ones join with none), every row once."""
    cfg, d, logs, _ = _run(
        tmp_path, 3, "io.interface=hdf5_coll", "io.layout=shared",
        "dataset.num_files_train=1", "dataset.num_samples_per_file=30",
        "reader.sharding=round_robin", "reader.sample_shuffle=seed", "reader.transfer_size=0")
    calls = [_h5d_writes(log, H5D["hdf5_coll"]) for log in logs]
    assert len({len(c) for c in calls}) == 1
    rows = sorted(o // REC for c in calls for _, o, b in c if b)
    assert rows == list(range(30))
    assert all(b in (0, REC) for c in calls for _, _, b in c)
    assert all(o % REC == 0 for c in calls for _, o, b in c if b)


def test_file_per_rank_through_sec2(tmp_path):
    """io.layout=multi under hdf5_sec2, the latest file format: each file created and written
    by one rank, a row per H5Dwrite, with the POSIX writes of the file driver beneath."""
    cfg, d, logs, _ = _run(
        tmp_path, 2, "io.interface=hdf5_sec2", "io.layout=multi",
        "dataset.num_files_train=4", "dataset.num_samples_per_file=8",
        "dataset.hdf5_libver=latest", "reader.transfer_size=0")
    files = []
    for log in logs:
        h5 = _h5d_writes(log, H5D["hdf5_sec2"])
        mine = sorted({f for f, _, _ in h5})
        files += mine
        assert sorted(h5) == [(f, i * REC, REC) for f in mine for i in range(8)]
        posix = (log["op"] == 1) & (log["iface"] == 0)
        assert int(log["bytes"][posix].sum()) >= len(mine) * 8 * REC
    assert sorted(files) == [d.first_id + f for f in range(4)]


@pytest.mark.parametrize("extra,message", [
    (["io.interface=hdf5_sec2", "io.layout=shared", "dataset.num_files_train=1"],
     "needs the MPI-IO driver"),
    (["io.interface=hdf5_core", "io.layout=multi"], "reads files whole into memory"),
    (["io.interface=hdf5", "dataset.compression=gzip"], "writes uncompressed HDF5"),
    (["io.interface=hdf5_sec2", "io.write_fsync=true"], "sec2 driver never syncs"),
    (["io.interface=hdf5", "dataset.enable_chunking=true", "dataset.chunk_size=8k"],
     "HDF5 chunks of whole rows"),
])
def test_write_first_hdf5_config_errors(tmp_path, extra, message):
    with pytest.raises(ConfigError, match=message) as e:
        config.load(["workload=default"] + _args(tmp_path, *extra))
    assert "\n" not in str(e.value)


def test_rows_cut_into_runs_of_consecutive_rows():
    from dlio_mpi.data.write_hdf5 import _pieces

    assert _pieces(np.array([], np.int64), 2) == []
    assert _pieces(np.array([0, 1, 2, 3, 4, 7, 8, 10]), 2) == [(0, 2), (2, 2), (4, 1), (7, 2),
                                                                (10, 1)]
    assert _pieces(np.arange(5, 12), 1) == [(r, 1) for r in range(5, 12)]

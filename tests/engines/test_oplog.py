"""The op log holds exactly the operations issued: count, bytes, offsets, file ids, kinds; the
histogram counts every operation; operations past capacity are still counted."""
import time

import numpy as np
import pytest

from dlio_mpi import engines


def test_exact_entries_for_split_transfers(datafile):
    path, data = datafile(100_000)
    log = engines.OpLog(1000)
    with engines.PosixFile(path, oplog=log, file_id=11) as f:
        f.readv([0, 50_000, 99_000], [10_000, 25_000, 5_000], xfer=4096)
    a = log.arrays()
    reads = a["op"] == engines.OP["read"]
    # 10000 -> 3 transfers, 25000 -> 7, the third range hits EOF after 1000 bytes -> 1
    assert reads.sum() == 3 + 7 + 1
    want_off = ([0, 4096, 8192] + [50_000 + 4096 * k for k in range(7)] + [99_000])
    want_len = ([4096, 4096, 1808] + [4096] * 6 + [25_000 - 6 * 4096] + [1000])
    assert a["offset"][reads].tolist() == want_off
    assert a["bytes"][reads].tolist() == want_len
    assert (a["file"] == 11).all()
    assert (a["iface"][reads] == engines.IFACE["posix"]).all()
    ops = [engines.OPS[o] for o in a["op"]]
    assert ops[0] == "open" and ops[-1] == "close"
    assert int(a["bytes"].sum()) == 10_000 + 25_000 + 1000


def test_timestamps_are_ordered_and_bounded(datafile):
    path, _ = datafile(1 << 20)
    log = engines.OpLog(10_000)
    t0 = engines.mono_ns()
    with engines.PosixFile(path, oplog=log) as f:
        for _ in range(20):
            f.readv(np.arange(0, 1 << 20, 4096), np.full(256, 4096), xfer=0)
    t1 = engines.mono_ns()
    a = log.arrays()
    start = a["start"] + log.origin_mono_ns
    assert (a["dur"] >= 0).all()
    assert (np.diff(a["start"]) >= 0).all()
    assert start.min() >= t0 - 1_000_000 and (start + a["dur"]).max() <= t1 + 1_000_000
    assert a["dur"].sum() <= (t1 - t0) * 1.05


def test_views_are_zero_copy_and_keep_the_log_alive(datafile):
    path, _ = datafile(8192)
    log = engines.OpLog(16)
    with engines.PosixFile(path, oplog=log) as f:
        f.read(0, 4096)
    a = log.arrays()
    assert not a["bytes"].flags.owndata and not a["bytes"].flags.writeable
    del log
    assert a["bytes"].tolist()[1] == 4096      # still readable: the array holds the log


def test_overflow_is_counted(datafile):
    path, _ = datafile(1 << 16)
    log = engines.OpLog(5)
    with engines.PosixFile(path, oplog=log) as f:
        f.readv(np.arange(0, 1 << 16, 1024), np.full(64, 1024))
    assert log.count == 5
    # open + 64 reads + close = 66 ops, 5 kept
    assert log.overflow == 61
    kept = log.arrays()
    assert int(kept["bytes"].sum()) + log.overflow_totals()["read"][1] == 1 << 16
    hist = log.histogram(op="read")
    assert int(hist.sum()) == 64


def test_histogram_buckets():
    b = engines.hist_bucket_bounds()
    assert b[0] == 0 and (np.diff(b) > 0).all()
    for ns in (1, 3, 5, 1000, 1023, 1024, 1500, 10**9):
        k = engines.hist_bucket(ns)
        assert b[k] <= ns < b[k + 1]


def test_disabled_log_records_nothing(datafile):
    path, _ = datafile(8192)
    log = engines.OpLog(16)
    log.enabled = False
    with engines.PosixFile(path, oplog=log) as f:
        f.read(0, 8192)
    assert log.count == 0


def test_reset(datafile):
    path, _ = datafile(8192)
    log = engines.OpLog(16)
    with engines.PosixFile(path, oplog=log) as f:
        f.read(0, 10)
        log.reset()
        f.read(0, 20)
    a = log.arrays()
    assert a["bytes"].tolist() == [20, 0]


def test_overflow_keeps_the_interface(tmp_path):
    """Past capacity, hdf5_sec2's H5Dread calls and the POSIX reads under them are told apart,
    as within it: bytes moved and reads count the file system's reads only. Before, the
    overflow kept no interface, and a full log counted the H5Dread bytes a second time."""
    import h5py

    from dlio_mpi.run.training_loop import _log_totals
    data = np.arange(64 * 4096, dtype=np.uint8).reshape(64, 4096)
    with h5py.File(tmp_path / "d.h5", "w") as h:
        h["x"] = data
    totals = []
    for cap in (100_000, 1):
        log = engines.OpLog(cap)
        with engines.H5Dataset(tmp_path / "d.h5", "x", driver="sec2", oplog=log) as d:
            for r in range(0, 64, 8):
                d.read_rows([r], [8])
        totals.append(_log_totals(log))
        if cap == 1:
            assert log.overflow > 0
            assert log.overflow_totals(iface="hdf5_sec2")["read"] == (8, 8 * 8 * 4096)
    (full_bytes, full_ops, full_hist), (over_bytes, over_ops, over_hist) = totals
    assert full_bytes == over_bytes >= 64 * 4096
    assert full_ops == over_ops
    assert int(full_hist.sum()) == int(over_hist.sum()) == full_ops


def test_the_core_driver_reads_the_file_whole_at_open(tmp_path):
    """driver="core": one POSIX read of the whole file from offset 0 at open (as libhdf5's
    core driver reads it), the H5Dread calls logged as HDF5 calls with no POSIX read beneath
    them, and the rows they return the file's."""
    import os

    import h5py
    data = np.random.default_rng(3).integers(0, 255, (64, 4096), dtype=np.uint8)
    with h5py.File(tmp_path / "d.h5", "w") as h:
        h["x"] = data
    size = os.path.getsize(tmp_path / "d.h5")
    log = engines.OpLog(1000)
    with engines.H5Dataset(tmp_path / "d.h5", "x", driver="core", oplog=log) as d:
        for r in (40, 8, 16):
            out, got = d.read_rows([r], [8])
            assert got == 8 * 4096
            assert np.array_equal(np.frombuffer(out, np.uint8)[:got].reshape(8, 4096),
                                  data[r:r + 8])
    a = log.arrays()
    reads = a["op"] == engines.OP["read"]
    posix = reads & (a["iface"] == engines.IFACE["posix"])
    assert a["offset"][posix].tolist() == [0] and a["bytes"][posix].tolist() == [size]
    h5 = reads & (a["iface"] == engines.IFACE["hdf5_sec2"])
    assert a["bytes"][h5].tolist() == [8 * 4096] * 3

"""Reads whose bytes are not kept (readv(discard=True), read-ahead without keep): every transfer
lands at the start of the buffer, which holds one transfer, and the calls the storage sees (the
op log's offsets and sizes, in order) are those of a read that keeps the bytes."""
import numpy as np
import pytest

from dlio_mpi import engines

OPEN = {"posix": engines.PosixFile, "stdio": engines.StdioFile}
OFFS, LENS, XFER = [100, 5000, 20000], [3000, 2500, 700], 1024


def reads(log):
    a = log.arrays()
    r = a["op"] == engines.OP["read"]
    return list(zip(a["offset"][r].tolist(), a["bytes"][r].tolist()))


@pytest.mark.parametrize("engine", sorted(OPEN))
def test_every_transfer_lands_at_the_buffers_start(datafile, engine):
    path, data = datafile(1 << 16, seed=5)
    out = np.full(sum(LENS), 0xEE, dtype=np.uint8)
    log = engines.OpLog(1000)
    with OPEN[engine](str(path), oplog=log) as f:
        _, got = f.readv(OFFS, LENS, xfer=XFER, out=out, per_range=True, discard=True)
    assert got.tolist() == LENS
    # the last transfer (range 3, 700 bytes) over range 2's second (1024 bytes from 6024; its
    # last, 452 bytes, lies under the 700), nothing past one transfer
    assert (out[:700] == data[20000:20700]).all()
    assert (out[700:XFER] == data[6024 + 700:6024 + XFER]).all()
    assert (out[XFER:] == 0xEE).all()
    kept = engines.OpLog(1000)
    with OPEN[engine](str(path), oplog=kept) as f:
        whole, total = f.readv(OFFS, LENS, xfer=XFER)
    assert total == sum(LENS)
    assert (whole == np.concatenate([data[o:o + n] for o, n in zip(OFFS, LENS)])).all()
    assert reads(log) == reads(kept) == [(100, 1024), (1124, 1024), (2148, 952), (5000, 1024),
                                         (6024, 1024), (7048, 452), (20000, 700)]


def test_a_discarding_read_needs_room_for_one_transfer_only(datafile):
    path, data = datafile(1 << 16, seed=6)
    with engines.PosixFile(str(path)) as f:
        out, total = f.readv(OFFS, LENS, xfer=XFER, discard=True)
        assert out.size == XFER and total == sum(LENS)
        out, total = f.readv(OFFS, LENS, discard=True)        # no cut: the widest range
        assert out.size == 3000 and (out[:700] == data[20000:20700]).all()
        with pytest.raises(ValueError, match="smaller than the 1024 requested"):
            f.readv(OFFS, LENS, xfer=XFER, out=np.empty(XFER - 1, np.uint8), discard=True)
        # a range cut short by the end of the file counts what it read
        _, got = f.readv([len(data) - 300], [1000], xfer=256, per_range=True, discard=True)
        assert got.tolist() == [300]


def test_a_read_ahead_thread_reads_every_transfer_into_its_buffers_start(datafile):
    path, data = datafile(1 << 16, seed=7)
    log = engines.OpLog(1000)
    ra = engines.ReadAhead(threads=1, depth=2, slot_bytes=4096, keep=False)
    with engines.PosixFile(str(path), oplog=log) as f:
        t = ra.submit(f, [0, 9000], [3000, 2000], xfer=XFER)
        assert ra.wait(t) == (None, 5000)
        ra.release(t)
        buf = np.frombuffer(ra.thread_buffer(0), dtype=np.uint8)
        ra.close()
    assert buf.size == 4096
    # 10024 .. 11000 (976 bytes) last, over 9000 .. 10024
    assert (buf[:976] == data[10024:11000]).all()
    assert (buf[976:XFER] == data[9976:10024]).all()
    assert (buf[XFER:] == 0).all()          # touched at creation, never written since
    assert reads(log) == [(0, 1024), (1024, 1024), (2048, 952), (9000, 1024), (10024, 976)]


def test_read_ahead_buffers_hold_a_transfer_or_an_hdf5_segment(datafile, tmp_path):
    import h5py
    path, _ = datafile(1 << 16, seed=8)
    with h5py.File(tmp_path / "r.h5", "w") as h:
        h["x"] = np.arange(64 * 32, dtype=np.uint8).reshape(64, 32)
    ra = engines.ReadAhead(threads=2, depth=2, slot_bytes=XFER, keep=False)
    with engines.PosixFile(str(path)) as f, engines.H5Dataset(str(tmp_path / "r.h5"), "x",
                                                                driver="sec2") as d:
        t = ra.submit_batch([f, f], [1, 1], [0, 30000], [8 * XFER, 3 * XFER], xfer=XFER)
        assert ra.wait(t) == (None, 11 * XFER)
        ra.release(t)
        with pytest.raises(engines.EngineError, match="transfer of 1025 bytes exceeds the threads' "
                                             "1024-byte buffers"):
            ra.submit(f, [0], [XFER + 1], xfer=XFER + 1)
        t = ra.submit(d, [0], [32])                 # 32 rows of 32 bytes: fits
        assert ra.wait(t) == (None, XFER)
        ra.release(t)
        with pytest.raises(engines.EngineError, match="transfer of 1056 bytes exceeds"):
            ra.submit(d, [0], [33])
    ra.close()
    kept = engines.ReadAhead(threads=1, depth=1, slot_bytes=XFER, keep=True)
    with engines.PosixFile(str(path)) as f:
        with pytest.raises(engines.EngineError,
                           match="request of 2048 bytes exceeds the 1024-byte slots"):
            kept.submit(f, [0], [2 * XFER], xfer=XFER)
    kept.close()
    with pytest.raises(ValueError, match="requests kept in their slots"):
        kept_open = engines.ReadAhead(threads=1, depth=1, slot_bytes=XFER, keep=True)
        try:
            kept_open.thread_buffer(0)
        finally:
            kept_open.close()

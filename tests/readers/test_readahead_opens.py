"""Read-ahead segments that carry their file's open (a loader's worker opening a file for each
sample): the thread opens, reads and closes; the op log has an open and a close around every
such read; segments of one key never have their file open at the same time (libhdf5 would
give a second open of an open file the first one's state, with no read of its own); a missing
file fails its request with the file named; a deferred handle is refused twice and by the
program."""
import numpy as np
import pytest

from dlio_mpi import engines

OPEN, CLOSE, READ = engines.OP["open"], engines.OP["close"], engines.OP["read"]


def _intervals(a, op):
    at = a["op"] == op
    return a["start"][at], a["start"][at] + a["dur"][at], a["file"][at]


def test_posix_sample_opened_and_closed_by_its_thread(datafile):
    path, data = datafile(64 * 1024, seed=3)
    log = engines.OpLog(10_000)
    ra = engines.ReadAhead(threads=3, depth=8, slot_bytes=1 << 16, keep=True)
    samples = [(k * 8192, 8192) for k in range(8)]
    tickets = []
    for o, n in samples:
        h = engines.PosixFile(path, file_id=7, oplog=log, deferred=True)
        assert h.deferred
        tickets.append(ra.submit_batch([h], [1], [o], [n], keys=[8]))
    for (o, n), t in zip(samples, tickets):
        view, total = ra.wait(t)
        assert total == n and np.array_equal(np.asarray(view), data[o:o + n])
        ra.release(t)
    ra.close()
    a = log.arrays()
    assert int((a["op"] == OPEN).sum()) == 8
    assert int((a["op"] == CLOSE).sum()) == 8
    assert int((a["op"] == READ).sum()) == 8
    assert set(a["file"].tolist()) == {7}
    # one open at a time: each open starts after the previous close ended
    o0, _, _ = _intervals(a, OPEN)
    _, c1, _ = _intervals(a, CLOSE)
    o0, c1 = np.sort(o0), np.sort(c1)
    assert (o0[1:] >= c1[:-1]).all()


def test_hdf5_sample_reads_its_metadata_after_each_open(tmp_path):
    path = str(tmp_path / "rows.h5")
    rows, row_bytes = 16, 4096
    content = np.arange(rows * row_bytes, dtype=np.uint64).astype(np.uint8)
    with engines.H5Dataset(path, "records", driver="sec2", mode="w",
                           create=(rows, row_bytes)) as d:
        d.write_rows([0], [rows], content)
    log = engines.OpLog(10_000)
    ra = engines.ReadAhead(threads=2, depth=8, slot_bytes=4 * row_bytes, keep=True)
    tickets = []
    for batch in ([0, 1, 2, 3], [4, 5, 6, 7]):
        hs = [engines.H5Dataset(path, "records", driver="sec2", file_id=0, oplog=log,
                                deferred=True, row_bytes=row_bytes) for _ in batch]
        tickets.append(ra.submit_batch(hs, [1] * len(batch), batch, [1] * len(batch),
                                       keys=[1] * len(batch)))
    for batch, t in zip(([0, 1, 2, 3], [4, 5, 6, 7]), tickets):
        view, total = ra.wait(t)
        assert total == len(batch) * row_bytes
        want = content.reshape(rows, row_bytes)[batch].ravel()
        assert np.array_equal(np.asarray(view), want)
        ra.release(t)
    ra.close()
    a = log.arrays()
    h5 = a["iface"] == engines.IFACE["hdf5_sec2"]
    px = a["iface"] == engines.IFACE["posix"]
    assert int(((a["op"] == OPEN) & h5).sum()) == 8
    assert int(((a["op"] == CLOSE) & h5).sum()) == 8
    assert int(((a["op"] == READ) & h5).sum()) == 8
    # every H5Fopen is the driver's own open of the file and its metadata reads beneath
    assert int(((a["op"] == OPEN) & px).sum()) == 8
    meta = int(((a["op"] == READ) & px).sum()) - 8
    assert meta >= 8 and meta % 8 == 0


def test_missing_file_fails_its_request_naming_it(tmp_path):
    ra = engines.ReadAhead(threads=1, depth=2, slot_bytes=4096)
    gone = str(tmp_path / "gone.bin")
    h = engines.PosixFile(gone, deferred=True)
    t = ra.submit_batch([h], [1], [0], [100], keys=[1])
    with pytest.raises(engines.EngineError, match="gone.bin"):
        ra.wait(t)
    ra.close()


def test_deferred_handle_is_the_threads_alone(datafile):
    path, _ = datafile(4096)
    h = engines.PosixFile(path, deferred=True)
    with pytest.raises(ValueError, match="read-ahead thread"):
        h.readv([0], [10])
    ra = engines.ReadAhead(threads=1, depth=2, slot_bytes=4096)
    t = ra.submit_batch([h], [1], [0], [10])
    with pytest.raises(ValueError, match="one segment"):
        ra.submit_batch([h], [1], [0], [10])
    assert ra.wait(t)[1] == 10
    ra.release(t)
    ra.close()
    with pytest.raises(ValueError, match="reading"):
        engines.PosixFile(path, "w", deferred=True)
    with pytest.raises(ValueError, match="row bytes"):
        engines.H5Dataset(path, "x", driver="sec2", deferred=True)
    with pytest.raises(ValueError, match="alone"):
        engines.H5Dataset(path, "x", collective=True, deferred=True, row_bytes=8)
    with pytest.raises(ValueError, match="keys"):
        ra2 = engines.ReadAhead(threads=1, depth=2, slot_bytes=4096)
        ra2.submit_batch([engines.PosixFile(path, deferred=True)], [1], [0], [10], keys=[-1])

"""Read-ahead threads: every request's bytes equal the content, in ticket order, for several
thread counts and ring depths; errors reach the waiter; the op log counts every transfer."""
import numpy as np
import pytest

from dlio_mpi import engines


@pytest.mark.parametrize("threads,depth", [(1, 1), (1, 4), (4, 2), (8, 16)])
def test_requests_in_order_with_exact_bytes(datafile, threads, depth):
    path, data = datafile(1 << 20, seed=threads)
    rng = np.random.default_rng(depth)
    reqs = []
    for _ in range(60):
        k = int(rng.integers(1, 5))
        offs = rng.integers(0, data.size - 1, k)
        lens = rng.integers(0, 9000, k)
        reqs.append((offs, lens))
    log = engines.OpLog(100_000)
    ra = engines.ReadAhead(threads=threads, depth=depth, slot_bytes=4 * 9000)
    with engines.PosixFile(path, oplog=log) as f:
        pending = []
        results = []
        for offs, lens in reqs:
            if len(pending) == depth:       # the ring is full: consume the oldest first
                t = pending.pop(0)
                results.append(np.array(ra.wait(t)[0]))
                ra.release(t)
            pending.append(ra.submit(f, offs, lens, xfer=4096))
        for t in pending:
            results.append(np.array(ra.wait(t)[0]))
            ra.release(t)
        ra.close()
    for (offs, lens), got in zip(reqs, results):
        assert got.size == lens.sum()
        pos = 0
        for o, n in zip(offs, lens):
            chunk = data[o:o + n]
            assert np.array_equal(got[pos:pos + chunk.size], chunk)
            pos += n
    a = log.arrays()
    reads = a["op"] == engines.OP["read"]
    want_bytes = sum(int(sum(min(n, data.size - o) for o, n in zip(offs, lens)))
                     for offs, lens in reqs)
    assert int(a["bytes"][reads].sum()) == want_bytes
    want_ops = sum(int(sum(-(-min(n, data.size - o) // 4096) for o, n in zip(offs, lens)))
                   for offs, lens in reqs)
    assert int(reads.sum()) == want_ops


def test_error_reaches_the_waiter(datafile):
    path, _ = datafile(64 * 4096)
    a = engines.dio_alignment(path)[1]
    ra = engines.ReadAhead(threads=2, depth=2, slot_bytes=8 * a)
    with engines.PosixFile(path, direct=True) as f:
        ok = ra.submit(f, [0], [a])
        bad = ra.submit(f, [a + 1], [a])
        view, total = ra.wait(ok)
        assert len(view) == a and total == a
        ra.release(ok)
        with pytest.raises(engines.AlignmentError, match="misaligned"):
            ra.wait(bad)
    ra.close()


def test_oversized_request_is_refused(datafile):
    path, _ = datafile(1 << 16)
    ra = engines.ReadAhead(threads=1, depth=1, slot_bytes=1000)
    with engines.PosixFile(path) as f:
        with pytest.raises(engines.EngineError, match="exceeds"):
            ra.submit(f, [0], [1001])
    ra.close()


def test_hdf5_independent_rows(tmp_path):
    import h5py
    data = np.arange(100 * 64, dtype=np.uint8).reshape(100, 64)
    with h5py.File(tmp_path / "d.h5", "w") as h:
        h["x"] = data
    ra = engines.ReadAhead(threads=2, depth=3, slot_bytes=20 * 64)
    with engines.H5Dataset(tmp_path / "d.h5", "x", driver="sec2") as ds:
        tickets = [ra.submit(ds, [s], [10]) for s in (0, 30, 90)]
        for s, t in zip((0, 30, 90), tickets):
            view, total = ra.wait(t)
            assert total == 640
            assert np.array_equal(np.array(view).reshape(10, 64), data[s:s + 10])
            ra.release(t)
    ra.close()


@pytest.mark.parametrize("threads", [1, 3])
def test_requests_without_keeping_the_data(datafile, threads):
    """keep=False: each thread reads into its own buffer, a request hands over its byte count
    only (no view), and the reads issued are the same, every range to its end or EOF."""
    path, data = datafile(1 << 20, seed=7)
    rng = np.random.default_rng(threads)
    reqs = [(rng.integers(0, data.size - 1, 3), rng.integers(1, 9000, 3)) for _ in range(40)]
    log = engines.OpLog(100_000)
    ra = engines.ReadAhead(threads=threads, depth=6, slot_bytes=3 * 9000, keep=False)
    assert not ra.keep
    totals = []
    with engines.PosixFile(path, oplog=log) as f:
        pending = []
        for offs, lens in reqs:
            if len(pending) == 6:
                t = pending.pop(0)
                view, total = ra.wait(t)
                assert view is None
                totals.append(total)
                ra.release(t)
            pending.append(ra.submit(f, offs, lens))
        for t in pending:
            totals.append(ra.wait(t)[1])
            ra.release(t)
        ra.close()
    want = [int(sum(min(n, data.size - o) for o, n in zip(offs, lens))) for offs, lens in reqs]
    assert totals == want
    a = log.arrays()
    reads = a["op"] == engines.OP["read"]
    assert sorted(zip(a["offset"][reads].tolist(), a["bytes"][reads].tolist())) == sorted(
        (int(o), int(min(n, data.size - o))) for offs, lens in reqs for o, n in zip(offs, lens))

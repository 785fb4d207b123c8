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


@pytest.mark.parametrize("threads", [1, 4])
def test_a_batch_of_segments_over_several_engines(datafile, tmp_path, threads):
    """One request per batch, a segment per handle (POSIX, STDIO twice, HDF5 rows): the bytes
    and the per-segment byte counts are the engines' own, and a STDIO stream's reads reach its
    op log in the order of its segments, as when the engine is called directly."""
    import h5py
    path, data = datafile(1 << 20, seed=3)
    spath, sdata = datafile(1 << 19, seed=4, name="s.bin")
    rows = np.arange(50 * 32, dtype=np.uint8).reshape(50, 32)
    with h5py.File(tmp_path / "r.h5", "w") as h:
        h["x"] = rows
    rng = np.random.default_rng(threads)
    batches = []
    for _ in range(25):
        po, pl = rng.integers(0, data.size - 9000, 3), rng.integers(1, 9000, 3)
        s1, l1 = rng.integers(0, sdata.size - 5000, 2), rng.integers(1, 5000, 2)
        s2, l2 = rng.integers(0, sdata.size - 5000, 1), rng.integers(1, 5000, 1)
        hr = np.sort(rng.choice(45, 2, replace=False))
        batches.append([(po, pl), (s1, l1), (hr, np.array([1, 3])), (s2, l2)])
    direct, ahead = engines.OpLog(10_000), engines.OpLog(10_000)
    ra = engines.ReadAhead(threads=threads, depth=3, slot_bytes=3 * 9000 + 3 * 5000 + 4 * 32)
    with engines.PosixFile(path, oplog=ahead, file_id=1) as p, \
            engines.StdioFile(spath, bufsize=4096, oplog=ahead, file_id=2) as s, \
            engines.H5Dataset(tmp_path / "r.h5", "x", driver="sec2") as h, \
            engines.StdioFile(spath, bufsize=4096, oplog=direct, file_id=2) as sd:
        handles = [p, s, h, s]
        pending, results = [], []
        for b in batches:
            if len(pending) == 3:
                t = pending.pop(0)
                view, total = ra.wait(t)
                results.append((np.array(view), total, ra.segment_bytes(t, 4)))
                ra.release(t)
            pending.append(ra.submit_batch(
                handles, [len(o) for o, _ in b], np.concatenate([o for o, _ in b]),
                np.concatenate([n for _, n in b]), xfer=1024))
            for k in (1, 3):                    # the same stream, called directly
                sd.readv(*b[k], xfer=1024)
        for t in pending:
            view, total = ra.wait(t)
            results.append((np.array(view), total, ra.segment_bytes(t, 4)))
            ra.release(t)
    ra.close()
    for b, (got, total, per) in zip(batches, results):
        want = [np.concatenate([data[o:o + n] for o, n in zip(*b[0])]),
                np.concatenate([sdata[o:o + n] for o, n in zip(*b[1])]),
                np.concatenate([rows[r:r + c].reshape(-1) for r, c in zip(*b[2])]),
                np.concatenate([sdata[o:o + n] for o, n in zip(*b[3])])]
        assert per.tolist() == [w.size for w in want] and total == sum(w.size for w in want)
        assert np.array_equal(got, np.concatenate(want))
    a, d = ahead.arrays(), direct.arrays()
    mine = a["file"] == 2
    assert a["op"][mine].tolist() == d["op"].tolist()
    assert a["offset"][mine].tolist() == d["offset"].tolist()
    assert a["bytes"][mine].tolist() == d["bytes"].tolist()


def test_a_failed_segment_fails_its_batch_only(datafile):
    path, _ = datafile(64 * 4096)
    a = engines.dio_alignment(path)[1]
    ra = engines.ReadAhead(threads=2, depth=2, slot_bytes=8 * a, keep=False)
    with engines.PosixFile(path, direct=True) as f, engines.PosixFile(path) as g:
        bad = ra.submit_batch([g, f], [1, 1], [0, a + 1], [a, a])
        ok = ra.submit_batch([g, f], [1, 1], [0, a], [100, a])
        with pytest.raises(engines.AlignmentError, match="misaligned"):
            ra.wait(bad)
        assert ra.wait(ok) == (None, 100 + a)
        assert ra.segment_bytes(ok, 2).tolist() == [100, a]
        ra.release(ok)
    ra.close()


def test_read_ahead_threads_run_at_the_ranks_priority():
    """The threads run as the rank's thread does, as a data loader's workers: the same policy
    and niceness (niced or SCHED_BATCH threads starve beside other busy processes)."""
    import os

    before = set(os.listdir("/proc/self/task"))
    ra = engines.ReadAhead(threads=3, depth=2, slot_bytes=4096)
    try:
        mine = set(os.listdir("/proc/self/task")) - before
        assert len(mine) == 3
        for tid in mine:
            assert os.sched_getscheduler(int(tid)) == os.sched_getscheduler(0)
            assert os.getpriority(os.PRIO_PROCESS, int(tid)) == \
                os.getpriority(os.PRIO_PROCESS, 0)
    finally:
        ra.close()

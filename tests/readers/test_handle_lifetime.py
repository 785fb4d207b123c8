"""Handle lifetimes under read-ahead: a handle counts its segments queued or being read, closing
it waits for them (an engine's own close refuses while any is left), and the one open-file
policy never closes a file with reads in flight or one the step being queued reads."""
import numpy as np
import pytest

from dlio_mpi import engines
from dlio_mpi.readers.epoch_requests import Layout, files_in_flight
from dlio_mpi.readers.open_files import OpenFiles


def _slow_request(ra, f, size, n=16384, block=4096):
    """A request of n scattered block reads: long enough to be in flight when the caller
    acts next."""
    offs = (np.arange(n, dtype=np.int64) * 7919 % (size // block)) * block
    return ra.submit(f, offs, np.full(n, block, dtype=np.int64), xfer=block)


@pytest.mark.parametrize("kind", ["posix", "stdio"])
def test_close_waits_for_the_reads_in_flight(datafile, tmp_path, kind):
    """Before: close set the descriptor to -1 (or freed the stream) under the thread, whose
    reads then failed ("Bad file descriptor") or, with the number reused, read another file."""
    size = 8 << 20
    path, data = datafile(size, seed=3)
    other, _ = datafile(size, seed=4, name="other.bin")
    log = engines.OpLog(100_000)
    ra = engines.ReadAhead(threads=1, depth=4, slot_bytes=4096, keep=False)
    opener = engines.PosixFile if kind == "posix" else engines.StdioFile
    tickets = []
    for _ in range(3):
        f = opener(path, file_id=7, oplog=log)
        tickets.append(_slow_request(ra, f, size))
        assert f.inflight == 1      # counted in at submit: 16,384 reads are not done yet
        f.close()                   # waits for its segments
        assert f.inflight == 0
        # an open right after the close takes the lowest free descriptor: the closed one's
        engines.PosixFile(other, file_id=8, oplog=log).close()
    for t in tickets:
        _, got = ra.wait(t)
        ra.release(t)
        assert got == 16384 * 4096
    ra.close()
    a = log.arrays()
    reads = (a["op"] == engines.OP["read"]) & (a["file"] == 7)
    assert int(reads.sum()) == 3 * 16384 and int(a["bytes"][reads].sum()) == 3 * 16384 * 4096


def test_inflight_counts_segments_until_done(datafile):
    size = 8 << 20
    path, _ = datafile(size)
    ra = engines.ReadAhead(threads=1, depth=4, slot_bytes=4096, keep=False)
    with engines.PosixFile(path) as f, engines.PosixFile(path) as g:
        assert f.inflight == 0
        t1 = _slow_request(ra, f, size)
        t2 = ra.submit_batch([f, g, f], [1, 1, 1], [0, 0, 4096], [4096] * 3)
        assert 1 <= f.inflight <= 3 and g.inflight <= 1
        for t in (t1, t2):
            ra.wait(t)
            ra.release(t)
        assert f.inflight == 0 and g.inflight == 0
    ra.close()


class _Handle:
    def __init__(self, name, closed):
        self.name, self.inflight, self.closed = name, 0, closed

    def close(self):
        self.closed.append(self.name)


def _policy(limit, n):
    closed = []
    files = OpenFiles(limit)
    hs = {i: _Handle(i, closed) for i in range(n)}
    return files, hs, closed


def test_policy_closes_the_least_recently_used():
    files, hs, closed = _policy(3, 5)
    for i in range(3):
        files.open(i, lambda i=i: hs[i])
    files.use(0)                    # order now 1, 2, 0
    files.open(3, lambda: hs[3])
    assert closed == [1] and list(files) == [2, 0, 3]


def test_policy_never_closes_pinned_inflight_or_kept_files():
    files, hs, closed = _policy(3, 6)
    files.add(0, hs[0], pinned=True)
    files.open(1, lambda: hs[1])
    files.open(2, lambda: hs[2])
    hs[1].inflight = 2
    seen = []
    files.watch(seen.append)
    files.open(3, lambda: hs[3], keep={2})
    # 0 pinned, 1 with reads in flight, 2 kept: nothing may close, the limit is passed
    assert closed == [] and len(files) == 4
    hs[1].inflight = 0
    files.open(4, lambda: hs[4], keep={3})
    assert closed == [1, 2] and seen == [1, 2] and list(files) == [0, 3, 4]
    files.reopen(0)                 # pinned: stays
    files.reopen(3)
    assert closed[-1] == 3
    files.close_all()
    assert sorted(closed) == [0, 1, 2, 3, 4] and len(files) == 0


def _layout(steps):
    """A Layout whose step s reads the files (slots) steps[s], one segment each."""
    seg_slot = np.array([f for s in steps for f in s], dtype=np.int64)
    step_seg = np.concatenate([[0], np.cumsum([len(s) for s in steps])]).astype(np.int64)
    files = np.arange(int(seg_slot.max()) + 1 if len(seg_slot) else 0, dtype=np.int64)
    return Layout(files=files, step_seg=step_seg, seg_slot=seg_slot,
                  seg_range=np.arange(len(seg_slot) + 1, dtype=np.int64),
                  range_at=np.zeros(0, dtype=np.int64), order=None)


def test_files_in_flight_is_the_widest_window():
    rng = np.random.default_rng(5)
    for _ in range(200):
        nsteps = int(rng.integers(1, 12))
        steps = [sorted(set(rng.integers(0, 9, int(rng.integers(1, 5))).tolist()))
                 for _ in range(nsteps)]
        for window in range(1, 5):
            want = max(len(set().union(*steps[w:w + window])) for w in range(nsteps))
            assert files_in_flight(_layout(steps), window) == want

"""The io_uring engine: the bytes of every range, byte for byte, at several queue depths and
transfer sizes; a short range at the end of the file; writes; every transfer in the op log as
an io_uring call; the engine table's reads (read-ahead threads) through it."""
import numpy as np
import pytest

from dlio_mpi import engines

pytestmark = pytest.mark.skipif(not engines.URING_AVAILABLE, reason="built without liburing")


@pytest.mark.parametrize("depth,xfer", [(1, 0), (4, 4096), (32, 65536), (128, 1000)])
def test_ranges_read_exactly(datafile, depth, xfer):
    path, data = datafile(3 << 20, seed=depth)
    rng = np.random.default_rng(depth)
    offs = rng.integers(0, data.size, 40)
    lens = rng.integers(0, 200_000, 40)
    log = engines.OpLog(100_000)
    with engines.UringFile(path, depth=depth, oplog=log, file_id=4) as f:
        assert f.size() == data.size
        out, got = f.readv(offs, lens, xfer=xfer, per_range=True)
    pos = 0
    for o, n, g in zip(offs.tolist(), lens.tolist(), got.tolist()):
        want = data[o:o + n]
        assert g == want.size
        assert np.array_equal(out[pos:pos + g], want)
        pos += n
    a = log.arrays()
    reads = a["op"] == engines.OP["read"]
    assert set(a["iface"][reads].tolist()) == {engines.IFACE["io_uring"]}
    assert int(a["bytes"][reads].sum()) == int(got.sum())
    if xfer:
        assert int(a["bytes"][reads].max()) <= xfer


def test_a_read_past_the_end_is_short_or_an_error_when_exact(datafile):
    path, data = datafile(10_000)
    with engines.UringFile(path, depth=8) as f:
        out, total = f.readv([9_000], [4096], xfer=1024)
        assert total == 1000 and np.array_equal(out[:1000], data[9_000:])
        with pytest.raises(engines.ShortReadError, match="got 1000"):
            f.readv([9_000], [4096], xfer=1024, exact=True)


def test_writes_land_where_asked(tmp_path):
    path = tmp_path / "w.bin"
    data = np.random.default_rng(1).integers(0, 256, 1 << 20, dtype=np.uint8)
    log = engines.OpLog(10_000)
    with engines.UringFile(path, "x", depth=16, oplog=log) as f:
        # two halves, the second first: offsets, not order, decide where bytes go
        half = data.size // 2
        assert f.writev([half], [half], data[half:], xfer=65536) == half
        assert f.writev([0], [half], data[:half], xfer=65536) == half
        f.sync()
    assert np.array_equal(np.fromfile(path, dtype=np.uint8), data)
    a = log.arrays()
    assert int((a["op"] == engines.OP["write"]).sum()) == 16


def test_read_ahead_reads_through_it(datafile):
    path, data = datafile(1 << 20, seed=7)
    ra = engines.ReadAhead(threads=2, depth=3, slot_bytes=1 << 20)
    with engines.UringFile(path, depth=8) as f:
        tickets = [ra.submit(f, [k * 65536], [65536], xfer=8192) for k in range(3)]
        for k, t in enumerate(tickets):
            view, total = ra.wait(t)
            assert total == 65536 and np.array_equal(view, data[k * 65536:(k + 1) * 65536])
            ra.release(t)
    ra.close()

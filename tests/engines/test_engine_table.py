"""The engines' operations tables (csrc/dm.h dm_engine_ops): every engine's file is opened,
sized, synced, read, written and closed through its table by the handles' base class; a read
is submitted and completed apart, an asynchronous engine (io_uring) moving its bytes at
completion and a synchronous one at submission."""
import numpy as np
import pytest
from mpi4py import MPI

from dlio_mpi import engines

needs_uring = pytest.mark.skipif(not engines.URING_AVAILABLE, reason="built without liburing")


def byte_file(kind, path, log):
    """An open file of engine kind, for reading and writing, at path."""
    if kind == "posix":
        return engines.PosixFile(path, "c", oplog=log)
    if kind == "stdio":
        return engines.StdioFile(path, "c", oplog=log)
    if kind == "mpiio":
        return engines.MPIFile(MPI.COMM_SELF, path, "c", oplog=log)
    return engines.UringFile(path, "c", depth=4, oplog=log)


@pytest.mark.parametrize("kind", ["posix", "stdio", "mpiio",
                                  pytest.param("io_uring", marks=needs_uring)])
def test_every_byte_range_engine_writes_syncs_sizes_and_reads_through_its_table(tmp_path,
                                                                                kind):
    data = np.arange(10_000, dtype=np.uint8)
    log = engines.OpLog(1000)
    f = byte_file(kind, tmp_path / "f.bin", log)
    assert f.engine == kind
    assert f.writev([0], [data.size], data, xfer=4096) == data.size
    f.sync()
    assert f.size() == data.size
    out, total = f.readv([100, 9_000], [50, 2_000])
    assert total == 50 + 1_000
    assert np.array_equal(out[:50], data[100:150])
    assert np.array_equal(out[50:1_050], data[9_000:])
    f.close()
    ops = log.arrays()["op"].tolist()
    assert ops[0] == engines.OP["open"] and ops[-1] == engines.OP["close"]
    assert engines.OP["fsync"] in ops
    with pytest.raises(ValueError, match="closed file"):
        f.size()


def test_an_hdf5_dataset_is_opened_sized_written_and_read_through_its_table(tmp_path):
    path = tmp_path / "d.h5"
    rows = np.arange(8 * 16, dtype=np.uint8).reshape(8, 16)
    with engines.H5Dataset(path, "x", driver="sec2", mode="w", create=(8, 16)) as d:
        assert d.engine == "hdf5"
        assert d.write_rows([0], [8], rows) == rows.size
        d.sync()
        assert d.size() == path.stat().st_size
    with engines.H5Dataset(path, "x", driver="sec2") as d:
        out, total = d.read_rows([2, 6], [1, 2])
    assert total == 3 * 16
    assert np.array_equal(np.asarray(out).reshape(3, 16), rows[[2, 6, 7]])


def test_mmap_and_o_direct_are_the_posix_table(tmp_path):
    path = tmp_path / "m.bin"
    np.zeros(8192, dtype=np.uint8).tofile(path)
    with engines.PosixFile(path, mmap=True) as m, engines.PosixFile(path, direct=True) as d:
        assert m.engine == d.engine == "posix"
        assert m.size() == d.size() == 8192


def reads(log):
    a = log.arrays()
    return a["bytes"][a["op"] == engines.OP["read"]]


@needs_uring
def test_io_uring_moves_a_submitted_read_when_it_is_completed(datafile):
    path, data = datafile(1 << 20)
    log = engines.OpLog(1000)
    with engines.UringFile(path, depth=8, oplog=log) as f:
        pending = f.submit_readv([4096, 500_000], [8192, 70_000], xfer=16384)
        # queued on the ring, not moved: no transfer has completed or been logged
        assert reads(log).size == 0
        out, total = pending.complete()
    assert total == 8192 + 70_000
    assert np.array_equal(out[:8192], data[4096:12288])
    assert np.array_equal(out[8192:], data[500_000:570_000])
    assert sorted(reads(log).tolist()) == [4464, 8192, 16384, 16384, 16384, 16384]


def test_a_synchronous_engine_moves_a_read_at_submission(datafile):
    path, data = datafile(1 << 16)
    log = engines.OpLog(1000)
    with engines.PosixFile(path, oplog=log) as f:
        pending = f.submit_readv([10], [5000], xfer=4096)
        assert reads(log).tolist() == [4096, 904]
        out, total = pending.complete()
    assert total == 5000 and np.array_equal(out, data[10:5010])


@pytest.mark.parametrize("kind", ["posix", pytest.param("io_uring", marks=needs_uring)])
def test_a_file_with_a_read_pending_is_not_closed(datafile, kind):
    path, _ = datafile(1 << 16)
    f = (engines.PosixFile(path) if kind == "posix" else engines.UringFile(path, depth=2))
    pending = f.submit_readv([0], [4096])
    with pytest.raises(ValueError, match="1 submitted read"):
        f.close()
    with pytest.raises(ValueError, match="already completed"):
        pending.complete()
        pending.complete()
    f.close()

"""Run under mpiexec by tests/mpi/test_check_engines.py: every rank checks its own bytes from the
MPI-IO and HDF5 engines against the reference engines and the known content, checks its op log,
and, with ROMIO and one collective-buffering aggregator, that collective reads really are
collective (one rank reads for all, seen in /proc/self/io).

usage: check_engines.py DIRECTORY"""
import os
import sys

import numpy as np
from mpi4py import MPI

import abort_on_error

from dlio_mpi import engines
from dlio_mpi.engines.reference import H5Ref, MPIRef

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
SIZE = (1 << 22) + 777
ROWS, ROW = 200, 4096


def pattern(n, seed):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


def rchar():
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    return 0


def expected(data, offs, lens):
    return np.concatenate([data[o:o + n] for o, n in zip(offs, lens)] or [data[:0]])


def check_mpiio(path, data):
    rng = np.random.default_rng(100 + rank)
    k = 0 if (size > 1 and rank == size - 1) else int(rng.integers(1, 20))
    offs = rng.integers(0, SIZE + 1000, k)
    lens = rng.integers(0, 50_000, k)
    lens[: min(2, k)] = 0                      # zero-length ranges join too
    want = expected(data, offs, lens)
    log = engines.OpLog(10_000)
    hints = {"romio_cb_read": "enable", "cb_buffer_size": str(1 << 20)}
    with engines.MPIFile(comm, path, hints=hints, oplog=log, file_id=1) as f, \
            MPIRef(comm, path, hints=hints) as r:
        assert f.size() == SIZE
        # independent
        a, a_got = f.readv(offs, lens, xfer=8192, per_range=True)
        b, b_got = r.readv(offs, lens, xfer=8192, per_range=True)
        assert np.array_equal(a_got, b_got)
        assert int(a_got.sum()) == want.size
        assert _packed_equal(a, a_got, lens, want)
        assert _packed_equal(b, b_got, lens, want)
        log.reset()
        # collective: the whole batch in one call, ranges unsorted
        c, c_total = f.read_all(offs, lens)
        d, d_total = r.read_all(offs, lens)
        assert c_total == d_total == want.size, (c_total, d_total, want.size)
        assert _packed_equal(c, a_got, lens, want)
        assert _packed_equal(d, a_got, lens, want)
        ent = log.arrays()
        # the call between the file view it sets and the one it sets back, each timed apart
        assert ent["op"].tolist() == [engines.OP["view"], engines.OP["read"], engines.OP["view"]]
        assert ent["iface"].tolist() == [engines.IFACE["mpiio_coll"]] * 3
        start, end = ent["start"], ent["start"] + ent["dur"]
        assert end[0] <= start[1] + 1 and end[1] <= start[2] + 1      # ticks to ns: 1 ns
        # the log holds the bytes moved from the file: the union of the ranges
        mask = np.zeros(SIZE, dtype=bool)
        for o, n in zip(offs, lens):
            mask[o:o + n] = True
        assert ent["bytes"].tolist() == [0, int(mask.sum()), 0]


def check_whole_file_interface(path):
    """Opens, syncs and closes on a communicator of several ranks are collective calls and are
    logged so (Darshan counts them as collective opens); on one rank's own, independent."""
    for c in (comm, MPI.COMM_SELF):
        log = engines.OpLog(100)
        with engines.MPIFile(c, path, oplog=log, file_id=2) as f:
            f.read(0, 16)
        a = log.arrays()
        whole = engines.IFACE["mpiio_coll" if c.Get_size() > 1 else "mpiio_ind"]
        kinds = dict(zip(a["op"].tolist(), a["iface"].tolist()))
        assert kinds[engines.OP["open"]] == whole, kinds
        assert kinds[engines.OP["close"]] == whole, kinds
        assert kinds[engines.OP["read"]] == engines.IFACE["mpiio_ind"], kinds


def _packed_equal(buf, got, lens, want):
    """Compare a packed output (range i at sum(lens[:i])) with the concatenated content."""
    pos = wpos = 0
    for g, n in zip(got, lens):
        if not np.array_equal(buf[pos:pos + g], want[wpos:wpos + g]):
            return False
        pos += int(n)
        wpos += int(g)
    return True


def check_collective_is_collective(path):
    """ROMIO with cb_nodes=1: one aggregator reads everybody's bytes; the others read none."""
    if os.environ.get("OMPI_MCA_io") != "romio321" or size == 1:
        return
    per = 1 << 20
    offs = [rank * per]
    lens = [per]
    hints = {"romio_cb_read": "enable", "cb_nodes": "1", "cb_buffer_size": str(1 << 24)}
    with engines.MPIFile(comm, path, hints=hints) as f:
        comm.Barrier()
        r0 = rchar()
        _, total = f.read_all(offs, lens)
        r1 = rchar()
        assert total == per
        moved = comm.allgather(r1 - r0)
        readers = [i for i, m in enumerate(moved) if m >= size * per]
        assert len(readers) == 1, f"collective read: bytes read per rank {moved}"
        assert all(m < per // 4 for i, m in enumerate(moved) if i not in readers), moved
        # independent reads: every rank reads its own bytes
        comm.Barrier()
        r0 = rchar()
        f.readv(offs, lens)
        r1 = rchar()
        moved = comm.allgather(r1 - r0)
        assert all(m >= per for m in moved), f"independent read: {moved}"
    # HDF5 through the MPI-IO driver: a collective H5Dread is a collective MPI-IO read
    h5 = os.path.join(os.path.dirname(path), "contig.h5")
    per_rows = ROWS // size
    ds = engines.H5Dataset(h5, "data", comm=comm, collective=True, hints=hints)
    comm.Barrier()
    r0 = rchar()
    _, total = ds.read_rows([rank * per_rows], [per_rows])
    r1 = rchar()
    ds.close()
    assert total == per_rows * ROW
    moved = comm.allgather(r1 - r0)
    readers = [i for i, m in enumerate(moved) if m >= size * per_rows * ROW]
    assert len(readers) == 1, f"collective H5Dread: bytes read per rank {moved}"
    assert all(m < per_rows * ROW // 4 for i, m in enumerate(moved) if i not in readers), moved
    print(f"rank {rank}: collective verified", flush=True)


def check_hdf5(dirname, rows):
    for layout, fname in (("contiguous", "contig.h5"), ("chunked", "chunked.h5")):
        path = os.path.join(dirname, fname)
        rng = np.random.default_rng(7 + rank)
        k = 0 if (size > 1 and rank == 0) else int(rng.integers(1, 6))
        starts = rng.integers(0, ROWS - 10, k)
        counts = rng.integers(0, 10, k)
        sel = np.unique(np.concatenate([np.arange(s, s + c) for s, c in zip(starts, counts)]
                                       or [np.zeros(0, dtype=np.int64)])).astype(np.int64)
        want = rows[sel].reshape(-1)
        for driver, coll in (("mpio", True), ("mpio", False), ("sec2", False)):
            log = engines.OpLog(100)
            ds = engines.H5Dataset(path, "data", driver=driver, comm=comm, collective=coll,
                                   oplog=log, file_id=2)
            assert ds.shape == (ROWS, ROW) and ds.row_bytes == ROW
            out, total = ds.read_rows(starts, counts)
            ds.close()
            assert total == want.size, (layout, driver, coll, total, want.size)
            assert np.array_equal(out[:total], want), (layout, driver, coll)
            with H5Ref(path, "data", driver=driver, comm=comm if driver == "mpio" else None,
                       collective=coll) as ref:
                rout, rtotal = ref.read_rows(starts, counts)
            assert rtotal == total and np.array_equal(rout[:rtotal], out[:total])
            ent = log.arrays()
            iface = {"sec2": "hdf5_sec2"}.get(driver, "hdf5_coll" if coll else "hdf5_ind")
            h5 = ent["iface"] == engines.IFACE[iface]
            reads = (ent["op"] == engines.OP["read"]) & h5
            # a collective read joins even with nothing to read; an independent one is skipped
            assert reads.sum() == (1 if (coll or total) else 0), (layout, driver, coll)
            assert int(ent["bytes"][reads].sum()) == total
            if driver == "sec2":
                # the logging driver: libhdf5's own preads, the file's metadata included
                px = (ent["op"] == engines.OP["read"]) & (ent["iface"] == engines.IFACE["posix"])
                assert (h5 | (ent["iface"] == engines.IFACE["posix"])).all()
                assert int(ent["bytes"][px].sum()) > total
                assert (ent["offset"][px] >= 0).all() and (ent["file"][px] == 2).all()
            else:
                assert h5.all()


def check_writes(dirname):
    path = os.path.join(dirname, "ckpt.bin")
    per = 10_000 + rank
    base = sum(10_000 + r for r in range(rank))
    payload = np.full(per, rank + 1, dtype=np.uint8)
    log = engines.OpLog(100)
    with engines.MPIFile(comm, path, "w", oplog=log) as f:
        assert f.write_all([base], [per], payload) == per
        f.sync()
    comm.Barrier()
    total = sum(10_000 + r for r in range(size))
    raw = np.fromfile(path, dtype=np.uint8)
    assert raw.size == total
    assert (raw[base:base + per] == rank + 1).all()
    ops = [engines.OPS[o] for o in log.arrays()["op"]]
    assert ops.count("write") == 1 and ops.count("fsync") == 1
    # HDF5 collective write of rows, read back by h5py
    h5 = os.path.join(dirname, "ckpt.h5")
    ds = engines.H5Dataset(h5, "w", comm=comm, collective=True, create=(size * 4, 256))
    ds.write_rows([rank * 4], [4], np.full(4 * 256, rank + 3, dtype=np.uint8))
    ds.close()
    comm.Barrier()
    if rank == 0:
        import h5py
        with h5py.File(h5, "r") as h:
            got = h["w"][...]
        for r in range(size):
            assert (got[r * 4:(r + 1) * 4] == r + 3).all()


def check_at_all(dirname):
    """write_at_all / read_at_all: each rank's block at an explicit offset, the last rank
    joining with nothing; bytes on disk, counts, no view in the op log, the blocks read back; a
    negative offset fails on its rank alone, the others go on."""
    path = os.path.join(dirname, "at_all.bin")
    per = 30_000 + 7 * rank
    base = sum(30_000 + 7 * r for r in range(rank))
    empty = size > 1 and rank == size - 1
    payload = pattern(per, 50 + rank)
    log = engines.OpLog(100)
    with engines.MPIFile(comm, path, "w", oplog=log, file_id=9) as f:
        for half in (0, 1):                     # two calls, the second half after the first
            lo, hi = (0, per // 2) if half == 0 else (per // 2, per)
            got = f.write_at_all(base + lo, payload[lo:hi] if not empty else payload[:0])
            assert got == (0 if empty else hi - lo), got
        f.sync()
    comm.Barrier()
    total = sum(30_000 + 7 * r for r in range(size - 1 if size > 1 else size))
    raw = np.fromfile(path, dtype=np.uint8)
    assert raw.size == total, (raw.size, total)
    if not empty:
        assert np.array_equal(raw[base:base + per], payload)
    ent = log.arrays()
    ops = [engines.OPS[o] for o in ent["op"]]
    assert ops.count("view") == 0 and ops.count("write") == 2 and ops.count("fsync") == 1, ops
    w = ent["op"] == engines.OP["write"]
    assert (ent["iface"][w] == engines.IFACE["mpiio_coll"]).all()
    if not empty:
        assert ent["offset"][w].tolist() == [base, base + per // 2]
        assert ent["bytes"][w].tolist() == [per // 2, per - per // 2]
    else:
        assert ent["offset"][w].tolist() == [-1, -1] and ent["bytes"][w].tolist() == [0, 0]
    with engines.MPIFile(comm, path, "r") as f:
        # (not across the end of the file: ompio counts such a read's missing bytes as read)
        out = np.zeros(per, dtype=np.uint8)
        got = f.read_at_all(0 if empty else base, out[:0] if empty else out)
        assert got == (0 if empty else per), got
        assert empty or np.array_equal(out, payload)
        try:
            f.read_at_all(-5 if rank == 0 else 0, out[:10] if rank == 0 else out[:0])
        except engines.EngineError as e:
            assert rank == 0 and "offset -5" in str(e) and "at_all.bin" in str(e), str(e)
        else:
            assert rank != 0, "a negative offset did not fail"
    comm.Barrier()


def check_errors(dirname):
    missing = os.path.join(dirname, "missing.bin")
    try:
        engines.MPIFile(comm, missing)
    except engines.EngineError as e:
        assert f"rank {rank}:" in str(e) and "missing.bin" in str(e), str(e)
    else:
        raise AssertionError("opening a missing file did not fail")
    try:
        engines.H5Dataset(missing, "data", comm=comm)
    except engines.EngineError as e:
        assert f"rank {rank}:" in str(e) and "missing.bin" in str(e), str(e)
    else:
        raise AssertionError("opening a missing HDF5 file did not fail")


def main():
    dirname = sys.argv[1]
    path = os.path.join(dirname, "data.bin")
    data = pattern(SIZE, 1)
    rows = pattern(ROWS * ROW, 2).reshape(ROWS, ROW)
    if rank == 0:
        data.tofile(path)
        import h5py
        with h5py.File(os.path.join(dirname, "contig.h5"), "w") as h:
            h["data"] = rows
        with h5py.File(os.path.join(dirname, "chunked.h5"), "w") as h:
            h.create_dataset("data", data=rows, chunks=(7, ROW))
    comm.Barrier()
    check_mpiio(path, data)
    check_whole_file_interface(path)
    check_collective_is_collective(path)
    check_hdf5(dirname, rows)
    check_writes(dirname)
    check_at_all(dirname)
    check_errors(dirname)
    comm.Barrier()
    print(f"rank {rank}: ok", flush=True)


if __name__ == "__main__":
    abort_on_error.run(main)

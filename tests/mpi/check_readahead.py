"""Run under mpiexec by tests/mpi/test_check_readahead.py: read-ahead threads reading STDIO
streams, independent MPI-IO (a rank's own file and the shared file) and HDF5 through the MPI-IO
driver (independent transfers; a rank's own file and the shared file), while the rank's own
thread makes MPI calls. Every request's bytes must equal the reference engine's, and the op log
must hold the same reads (count, offsets, bytes) as the engine called directly; a STDIO stream's
log must be the same sequence (its requests read one at a time, in order).

usage: check_readahead.py DIRECTORY"""
import os
import sys

import numpy as np
from mpi4py import MPI

import abort_on_error

from dlio_mpi import engines
from dlio_mpi.engines.reference import H5Ref, MPIRef, StdioRef

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
SIZE = (1 << 21) + 333
ROWS, ROW = 300, 1024
THREADS, DEPTH = 3, 4


def requests(seed, limit, n=40, most=6, longest=20_000):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = int(rng.integers(1, most))
        # within the file: a range cut short by its end leaves its place unset
        out.append((rng.integers(0, limit - longest, k), rng.integers(1, longest, k)))
    return out


def read_ahead(handle, reqs, xfer=0):
    """Every request through the threads, the rank's own thread making MPI calls meanwhile;
    returns each request's bytes and totals."""
    ra = engines.ReadAhead(threads=THREADS, depth=DEPTH, slot_bytes=6 * 20_000 + 6 * 4 * ROW,
                           keep=True)
    data, totals, pending = [], [], []

    def take():
        t = pending.pop(0)
        view, total = ra.wait(t)
        data.append(np.array(view))
        totals.append(total)
        ra.release(t)

    for i, (offs, lens) in enumerate(reqs):
        if len(pending) == DEPTH:
            take()
        pending.append(ra.submit(handle, offs, lens, xfer=xfer))
        if i % 3 == 0:
            comm.Barrier()                      # MPI from the main thread meanwhile
            assert comm.allreduce(1) == size
    while pending:
        take()
    ra.close()
    return data, totals


def reads(log):
    a = log.arrays()
    return a, a["op"] == engines.OP["read"]


def same_log(direct, ahead, in_order):
    (a, ra), (b, rb) = reads(direct), reads(ahead)
    assert int(ra.sum()) == int(rb.sum()), (int(ra.sum()), int(rb.sum()))
    assert int(a["bytes"][ra].sum()) == int(b["bytes"][rb].sum())
    if in_order:
        assert a["op"].tolist() == b["op"].tolist()
        assert a["offset"].tolist() == b["offset"].tolist()
        assert a["bytes"].tolist() == b["bytes"].tolist()
    else:
        assert sorted(zip(a["offset"][ra].tolist(), a["bytes"][ra].tolist())) == \
            sorted(zip(b["offset"][rb].tolist(), b["bytes"][rb].tolist()))


def check_bytes(data, totals, reqs, ref_read):
    for (offs, lens), got, total in zip(reqs, data, totals):
        want, want_total = ref_read(offs, lens)
        assert total == want_total, (total, want_total)
        assert np.array_equal(got[:total], want[:total])


def check_byte_engine(name, open_engine, ref, reqs, xfer, in_order):
    direct, ahead = engines.OpLog(100_000), engines.OpLog(100_000)
    with open_engine(direct) as f:
        for offs, lens in reqs:
            f.readv(offs, lens, xfer=xfer)
    with open_engine(ahead) as f:
        data, totals = read_ahead(f, reqs, xfer)
    with ref() as r:
        check_bytes(data, totals, reqs, lambda o, n: r.readv(o, n, xfer=xfer))
    same_log(direct, ahead, in_order)
    print(f"rank {rank}: {name} ok", flush=True)


def check_hdf5(name, path, comm_):
    rng = np.random.default_rng(50 + rank)
    reqs = [(np.sort(rng.choice(ROWS - 4, int(rng.integers(1, 6)), replace=False)),
             rng.integers(1, 4, 5)) for _ in range(30)]
    reqs = [(s, c[:s.size]) for s, c in reqs]
    direct, ahead = engines.OpLog(10_000), engines.OpLog(10_000)
    with engines.H5Dataset(path, "data", driver="mpio", comm=comm_, oplog=direct) as ds:
        for s, c in reqs:
            ds.read_rows(s, c)
    with engines.H5Dataset(path, "data", driver="mpio", comm=comm_, oplog=ahead) as ds:
        data, totals = read_ahead(ds, reqs)
    with H5Ref(path, "data", driver="mpio", comm=comm_) as r:
        check_bytes(data, totals, reqs, lambda s, c: r.read_rows(s, c))
    same_log(direct, ahead, False)
    print(f"rank {rank}: {name} ok", flush=True)


def main():
    d = sys.argv[1]
    own = os.path.join(d, f"own{rank}.bin")
    shared = os.path.join(d, "shared.bin")
    content = np.random.default_rng(rank).integers(0, 256, SIZE, dtype=np.uint8)
    content.tofile(own)
    if rank == 0:
        import h5py
        np.random.default_rng(99).integers(0, 256, SIZE, dtype=np.uint8).tofile(shared)
        rows = np.random.default_rng(98).integers(0, 256, (ROWS, ROW), dtype=np.uint8)
        with h5py.File(os.path.join(d, "shared.h5"), "w") as h:
            h["data"] = rows
    comm.Barrier()
    own_h5 = os.path.join(d, f"own{rank}.h5")
    import h5py
    with h5py.File(own_h5, "w") as h:
        h["data"] = content[:ROWS * ROW].reshape(ROWS, ROW)
    reqs = requests(10 + rank, SIZE)
    check_byte_engine(
        "stdio", lambda log: engines.StdioFile(own, bufsize=65536, oplog=log),
        lambda: StdioRef(own, bufsize=65536), reqs, 8192, True)
    check_byte_engine(
        "mpiio own file", lambda log: engines.MPIFile(MPI.COMM_SELF, own, oplog=log),
        lambda: MPIRef(MPI.COMM_SELF, own), reqs, 8192, False)
    check_byte_engine(
        "mpiio shared file", lambda log: engines.MPIFile(comm, shared, oplog=log),
        lambda: MPIRef(comm, shared), requests(20 + rank, SIZE), 4096, False)
    check_hdf5("hdf5 own file", own_h5, MPI.COMM_SELF)
    check_hdf5("hdf5 shared file", os.path.join(d, "shared.h5"), comm)
    # a collective handle is refused, on every rank alike
    with engines.H5Dataset(os.path.join(d, "shared.h5"), "data", comm=comm,
                           collective=True) as ds:
        ra = engines.ReadAhead(threads=1, depth=1, slot_bytes=ROW)
        try:
            ra.submit(ds, [0], [1])
            raise AssertionError("a collective HDF5 handle was read ahead")
        except engines.EngineError as e:
            assert "collective" in str(e)
        ra.close()
    comm.Barrier()
    print(f"rank {rank}: ok", flush=True)


if __name__ == "__main__":
    abort_on_error.run(main)

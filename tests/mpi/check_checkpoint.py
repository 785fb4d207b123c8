"""Run under mpiexec by tests/checkpoint/test_checkpoint.py.

usage: check_checkpoint.py formats DIRECTORY
         every format writes two checkpoints and reads them back (another rank's shard,
         content verified); file sizes by os.stat, fsyncs and bytes from the op log, content
         checked independently by rank 0, no temporary files left, corruption detected.
       check_checkpoint.py fail_dir DIRECTORY
         rank 1's directory is under a regular file: every format must fail on every rank with
         the same one-line error; the script then exits 3.
       check_checkpoint.py fail_write DIRECTORY FORMAT
         rank 1 may not write files past 64 KiB (RLIMIT_FSIZE): the write fails mid-way on
         rank 1 only; every rank must raise the same error; exit 3."""
import os
import resource
import signal
import sys

import numpy as np
from mpi4py import MPI

import abort_on_error

from dlio_mpi import engines
from dlio_mpi.checkpoint import (FOUR_FILES, CheckpointError, Checkpointer, Content,
                                 FlatCheckpoint, Layout, Transformer, TransformerCheckpoint,
                                 write_then_read)

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
FSYNC = (engines.OP["fsync"], engines.OP["fdatasync"])
WRITE = engines.OP["write"]
TINY = Transformer(hidden=64, layers=4, vocab=1000, ffn=128, heads=4, kv_heads=2)


def say(msg):
    print(f"rank {rank}: {msg}", flush=True)


def sizes():
    """A transformer checkpoint (TP 2 when possible, ZeRO 1: uneven shares on every rank) and
    a flat one written by rank 0 only (the others join the collectives with nothing)."""
    tp = 2 if size % 2 == 0 else 1
    return [TransformerCheckpoint(TINY, Layout.for_world(size, tp=tp), zero_stage=1),
            FlatCheckpoint(300_001, 0.5, "rank0", Layout.for_world(size))]


def expected_files(ck, sz, index, r):
    """{path: bytes} rank r should have written."""
    if ck.fmt == "four_files":
        return dict(zip(ck.paths(index, r), (s for _, s in FOUR_FILES)))
    if ck.fmt == "file_per_rank":
        n = sz.rank_bytes(r)
        return {ck.paths(index, r)[0]: n} if n else {}
    if ck.fmt == "model_optimizer":      # the weights' file and the optimizer state's
        return {p: n for p, n in zip(ck.paths(index, r), sz.rank_parts(r)) if n}
    return {}


def check_content(ck, sz, index):
    """Rank 0 reads every file with numpy/h5py and compares with the content of each share."""
    if rank != 0:
        return
    for r in range(size):
        if ck.fmt == "four_files":
            start = 0
            for p, (_, s) in zip(ck.paths(index, r), FOUR_FILES):
                got = np.fromfile(p, dtype=np.uint8)
                assert np.array_equal(got, Content(index, r).bytes_at(start, s)), p
                start += s
        elif ck.fmt == "file_per_rank" and sz.rank_bytes(r):
            got = np.fromfile(ck.paths(index, r)[0], dtype=np.uint8)
            assert np.array_equal(got, Content(index, r).bytes_at(0, sz.rank_bytes(r)))
        elif ck.fmt == "model_optimizer":    # the share's model bytes, then its optimizer's
            start = 0
            for p, n in zip(ck.paths(index, r), sz.rank_parts(r)):
                if n:
                    got = np.fromfile(p, dtype=np.uint8)
                    assert np.array_equal(got, Content(index, r).bytes_at(start, n)), p
                else:
                    assert not os.path.exists(p), p
                start += n
    if ck.fmt in ("mpiio", "hdf5"):
        path = ck.paths(index)[0]
        if ck.fmt == "mpiio":
            data = np.fromfile(path, dtype=np.uint8)
            assert os.stat(path).st_size == sz.total_bytes
        else:
            import h5py
            with h5py.File(path, "r") as h:
                ds = h["checkpoint"]
                assert ds.shape == (sz.total_bytes,) and ds.dtype == np.uint8
                data = ds[...]
                # exact file size: the contiguous data ends the file
                assert os.stat(path).st_size == ds.id.get_offset() + sz.total_bytes
        for r in range(size):
            o, n = sz.offset(r), sz.rank_bytes(r)
            assert np.array_equal(data[o:o + n], Content(index, r).bytes_at(0, n)), (path, r)


def check_write(ck, sz, index, res, log):
    ent = log.arrays()
    mine = expected_files(ck, sz, index, rank)
    n = sum(mine.values()) if ck.fmt in ("file_per_rank", "four_files", "model_optimizer") \
        else sz.rank_bytes(rank)
    for p, want in mine.items():
        assert os.stat(p).st_size == want, (p, os.stat(p).st_size, want)
    assert res.bytes == n, (ck.fmt, res.bytes, n)
    writes = ent["op"] == WRITE
    assert int(ent["bytes"][writes].sum()) == n, (ck.fmt, int(ent["bytes"][writes].sum()), n)
    # fsyncs: one per file (POSIX), one MPI_File_sync per rank (shared); the op log agrees
    want_sync = {"file_per_rank": 1 if n else 0, "four_files": 4,
                 "model_optimizer": len(mine)}.get(ck.fmt, 1)
    got_sync = int(np.isin(ent["op"], FSYNC).sum())
    assert res.fsyncs == got_sync == want_sync, (ck.fmt, res.fsyncs, got_sync, want_sync)
    total = sum(s for _, s in FOUR_FILES) * size if ck.fmt == "four_files" else sz.total_bytes
    assert res.total_bytes == total, (ck.fmt, res.total_bytes, total)
    assert res.total_fsyncs == comm.allreduce(want_sync)
    assert res.movers == comm.allreduce(1 if n else 0)
    assert res.duration == comm.allreduce(res.seconds, op=MPI.MAX) and res.duration > 0
    assert abs(res.bandwidth - total / res.duration) < 1e-6 * res.bandwidth
    # publishing (renames, directory fsync) is timed apart, part of the seconds; a shared file
    # is published by rank 0 alone
    assert 0 <= res.publish <= res.seconds, (res.publish, res.seconds)
    assert res.publish_duration == comm.allreduce(res.publish, op=MPI.MAX)
    if ck.shared and rank != 0:
        assert res.publish == 0
    if ck.fmt == "mpiio":   # explicit offsets, no file view: one write per round, in order
        rounds = comm.allreduce(-(-n // ck.chunk), op=MPI.MAX)
        assert not (ent["op"] == engines.OP["view"]).any()
        assert (ent["iface"][writes] == engines.IFACE["mpiio_coll"]).all()
        off = sz.offset(rank)
        want = [(off + p, min(ck.chunk, n - p)) for p in range(0, n, ck.chunk)]
        want += [(-1, 0)] * (rounds - len(want))
        got = list(zip(ent["offset"][writes].tolist(), ent["bytes"][writes].tolist()))
        assert got == want, (got, want)
    if ck.fmt == "four_files":   # each file in one write of its whole size
        assert sorted(ent["bytes"][writes].tolist()) == sorted(s for _, s in FOUR_FILES)
    if ck.fmt == "file_per_rank" and n:
        wb = ent["bytes"][writes]
        wi = ent["iface"][writes]
        assert wb.max() <= ck.xfer
        if ck.direct:   # aligned part O_DIRECT in aligned transfers, the tail buffered
            align = engines.dio_alignment(ck.directory)[1]
            d = wi == engines.IFACE["posix_direct"]
            assert int(wb[d].sum()) == n - n % align and (wb[d] % align == 0).all()
            assert int(wb[~d].sum()) == n % align
            assert (wi[~d] == engines.IFACE["posix"]).all()


def check_no_temp(ck):
    comm.Barrier()
    if rank == 0:
        left = [f for f in os.listdir(ck.directory) if f.endswith(".part")]
        assert not left, left


def check_read(ck, sz, index, shift, log):
    log.reset()
    res = ck.read(index, sz, shift=shift, verify=True)
    w = (rank + shift) % size
    if ck.fmt == "four_files":
        n = sum(s for _, s in FOUR_FILES)
    else:
        n = sz.rank_bytes(w)
    assert res.bytes == n, (ck.fmt, shift, res.bytes, n)
    ent = log.arrays()
    reads = ent["op"] == engines.OP["read"]
    assert int(ent["bytes"][reads].sum()) == n
    assert res.total_bytes == comm.allreduce(n) and res.fsyncs == 0
    if ck.fmt in ("file_per_rank", "four_files", "model_optimizer") and n:
        assert set(res.files) == set(expected_files(ck, sz, index, w)), (res.files, w)


def check_corruption(ck, sz, index):
    """Flip one byte of rank 0's share: a verified read must fail on every rank, naming the
    rank that read it; restore it afterwards."""
    if ck.fmt == "four_files":
        path, at = ck.paths(index, 0)[2], 100
    elif ck.fmt == "file_per_rank":
        path, at = ck.paths(index, 0)[0], 5000
    else:
        path, at = ck.paths(index)[0], sz.offset(0) + 5000
        if ck.fmt == "hdf5" and rank == 0:
            import h5py
            with h5py.File(path, "r") as h:
                at += h["checkpoint"].id.get_offset()
    if rank == 0:
        with open(path, "r+b") as f:
            f.seek(at)
            b = f.read(1)
            f.seek(at)
            f.write(bytes([b[0] ^ 0xFF]))
    comm.Barrier()
    reader = (0 - 1) % size     # shift 1: rank size-1 reads rank 0's share
    try:
        ck.read(index, sz, shift=1, verify=True)
    except CheckpointError as e:
        msg = str(e)
        assert f"rank {reader}:" in msg and "differs" in msg and "\n" not in msg, msg
        assert comm.allgather(msg) == [msg] * size
    else:
        raise AssertionError(f"{ck.fmt}: corrupted checkpoint read without error")
    if rank == 0:
        with open(path, "r+b") as f:
            f.seek(at)
            f.write(b)
    comm.Barrier()


def formats(base):
    log = engines.OpLog(1 << 16)
    cases = []
    tr, flat = sizes()
    cases.append(("file_per_rank", dict(xfer=4096, chunk=20_000), tr))
    cases.append(("file_per_rank", dict(direct=True, xfer=8192, chunk=16384), tr))
    cases.append(("file_per_rank", dict(xfer=8192, sync="fdatasync"), flat))
    cases.append(("mpiio", dict(chunk=100_000), tr))
    cases.append(("mpiio", dict(chunk=64 << 10), flat))
    cases.append(("hdf5", dict(chunk=100_000), tr))
    cases.append(("hdf5", dict(chunk=64 << 10), flat))
    cases.append(("four_files", {}, None))
    cases.append(("four_files", dict(direct=True), None))
    # ZeRO 1: the weights by the first replica, the optimizer state by every rank
    cases.append(("model_optimizer", dict(xfer=4096, chunk=20_000), tr))
    cases.append(("model_optimizer", dict(xfer=8192),
                  FlatCheckpoint(300_001, 3.0, "rank0", Layout.for_world(size), "all")))
    for i, (fmt, kw, sz) in enumerate(cases):
        ck = Checkpointer(comm, os.path.join(base, f"{i}-{fmt}"), fmt, oplog=log, **kw)
        for index in (0, 7):
            log.reset()
            res = ck.write(index, sz)
            check_write(ck, sz, index, res, log)
            check_no_temp(ck)
            check_content(ck, sz, index)
        for index in (0, 7):
            for shift in (0, 1, size - 1):
                check_read(ck, sz, index, shift, log)
        if i == 2:   # checkpoint-only mode: write 2 (indices 0, 1), read them back
            w, r = write_then_read(ck, sz, 2, 2, shift=1, verify=True)
            assert [x.index for x in w + r] == [0, 1, 0, 1]
            assert all(x.total_bytes == sz.total_bytes for x in w + r)
        if i in (0, 3, 5, 7):
            check_corruption(ck, sz, 7)
        ck.remove(0)
        assert not os.path.exists(ck.paths(0)[0])
        say(f"{fmt} {kw} ok")
    say("ok")


def expect_failure(fmt, ck, sz, bad_rank, path_part):
    try:
        ck.write(1, sz)
    except CheckpointError as e:
        msg = str(e)
        assert "\n" not in msg and f"rank {bad_rank}:" in msg and path_part in msg, msg
        assert comm.allgather(msg) == [msg] * size, "ranks disagree on the error"
        sys.stdout.flush()   # one write() per line: ranks' lines do not interleave
        os.write(1, f"CKPT-ERROR {fmt} rank {rank}: {msg}\n".encode())
    else:
        raise AssertionError(f"{fmt}: the write did not fail")


def fail_dir(base):
    blocker = os.path.join(base, "a-file")
    if rank == 0:
        open(blocker, "w").close()
    comm.Barrier()
    tr, _ = sizes()
    for fmt in ("file_per_rank", "four_files", "mpiio", "hdf5"):
        good = os.path.join(base, fmt)
        d = os.path.join(blocker, "sub") if rank == 1 else good
        ck = Checkpointer(comm, d, fmt)
        expect_failure(fmt, ck, None if fmt == "four_files" else tr, 1, blocker)
        comm.Barrier()
        if rank == 0:   # nothing half-written is left under a final or temporary name
            left = [f for f in os.listdir(good) if f.endswith(".part")] \
                if os.path.isdir(good) else []
            assert not left, left
    sys.exit(3)


def fail_write(base, fmt):
    if rank == 1:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, resource.RLIM_INFINITY))
    sz = FlatCheckpoint(size << 20, 0.0, "all", Layout.for_world(size))
    ck = Checkpointer(comm, base, fmt, chunk=256 << 10)
    expect_failure(fmt, ck, sz, 1, base)
    comm.Barrier()
    if rank == 0:   # a failed checkpoint leaves nothing: no temporary, no other rank's file
        left = os.listdir(base)
        assert not left, left
    sys.exit(3)


def main():
    scenario, base = sys.argv[1], sys.argv[2]
    if scenario == "formats":
        formats(base)
    elif scenario == "fail_dir":
        fail_dir(base)
    elif scenario == "fail_write":
        fail_write(base, sys.argv[3])
    else:
        raise SystemExit(f"unknown scenario {scenario}")


if __name__ == "__main__":
    abort_on_error.run(main)

"""Reference engines: the operations of the native engines written plainly in Python with
os.preadv, FILE objects, mmap, mpi4py and h5py, with the same semantics (ranges packed one after
another in the output, short reads at EOF, transfers of at most xfer bytes).

They define the expected behaviour in tests (the native engines must give byte-identical
results) and are the baseline the native engines' speed is measured against."""
from __future__ import annotations

import mmap as _mmap
import os

import numpy as np


def _ranges(offsets, lengths):
    off = np.atleast_1d(np.asarray(offsets, dtype=np.int64))
    ln = np.atleast_1d(np.asarray(lengths, dtype=np.int64))
    if off.shape != ln.shape:
        raise ValueError(f"{off.size} offsets but {ln.size} lengths")
    return off, ln


def _transfers(o, ln, xfer):
    done = 0
    while done < ln:
        t = min(xfer, ln - done) if xfer > 0 else ln - done
        yield o + done, done, t
        done += t


class PosixRef:
    """pread through os.preadv into the output buffer, looping on short reads."""

    def __init__(self, path, mode="r", *, direct=False):
        # "r+" writes an existing file, "x" creates a new one; as in the native engine, a
        # write never goes through a link at the file's name
        modes = {"r": os.O_RDONLY, "r+": os.O_RDWR | os.O_NOFOLLOW,
                 "x": os.O_RDWR | os.O_NOFOLLOW | os.O_CREAT | os.O_EXCL}
        if mode not in modes:
            raise ValueError(f"unknown mode {mode!r}: use 'r', 'r+' or 'x'")
        flags = modes[mode]
        if direct:
            flags |= os.O_DIRECT
        self.path = os.fspath(path)
        self.fd = os.open(self.path, flags)

    def close(self):
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def size(self):
        return os.fstat(self.fd).st_size

    def readv(self, offsets, lengths, *, xfer=0, out=None, per_range=False):
        off, ln = _ranges(offsets, lengths)
        if out is None:
            out = np.empty(int(ln.sum()), dtype=np.uint8)
        view = memoryview(out).cast("B")
        got = np.zeros(off.size, dtype=np.int64)
        pos = 0
        for i in range(off.size):
            o, n = int(off[i]), int(ln[i])
            for t_off, rel, t in _transfers(o, n, xfer):
                r = 0
                while r < t:
                    k = os.preadv(self.fd, [view[pos + rel + r:pos + rel + t]], t_off + r)
                    if k == 0:
                        break
                    r += k
                got[i] += r
                if r < t:
                    break
            pos += n
        return (out, got) if per_range else (out, int(got.sum()))

    def read(self, offset, length, *, xfer=0):
        out, total = self.readv([offset], [length], xfer=xfer)
        return out[:total]


class StdioRef:
    """A buffered Python file object: seek + readinto."""

    def __init__(self, path, *, bufsize=-1):
        self.path = os.fspath(path)
        self.f = open(self.path, "rb", buffering=bufsize if bufsize > 0 else -1)

    def close(self):
        self.f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def readv(self, offsets, lengths, *, xfer=0, out=None, per_range=False):
        off, ln = _ranges(offsets, lengths)
        if out is None:
            out = np.empty(int(ln.sum()), dtype=np.uint8)
        view = memoryview(out).cast("B")
        got = np.zeros(off.size, dtype=np.int64)
        pos = 0
        for i in range(off.size):
            o, n = int(off[i]), int(ln[i])
            self.f.seek(o)
            for _, rel, t in _transfers(o, n, xfer):
                k = self.f.readinto(view[pos + rel:pos + rel + t])
                got[i] += k
                if k < t:
                    break
            pos += n
        return (out, got) if per_range else (out, int(got.sum()))


class MmapRef:
    """Copies out of an mmap of the whole file."""

    def __init__(self, path):
        self.path = os.fspath(path)
        with open(self.path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            self.m = _mmap.mmap(f.fileno(), 0, access=_mmap.ACCESS_READ) if size else b""

    def close(self):
        if isinstance(self.m, _mmap.mmap):
            self.m.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def readv(self, offsets, lengths, *, xfer=0, out=None, per_range=False):
        off, ln = _ranges(offsets, lengths)
        if out is None:
            out = np.empty(int(ln.sum()), dtype=np.uint8)
        got = np.zeros(off.size, dtype=np.int64)
        pos = 0
        for i in range(off.size):
            o, n = int(off[i]), int(ln[i])
            chunk = self.m[o:o + n]
            out[pos:pos + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
            got[i] = len(chunk)
            pos += n
        return (out, got) if per_range else (out, int(got.sum()))


class MPIRef:
    """mpi4py's File: Read_at per transfer, and Read_at_all through a file view."""

    def __init__(self, comm, path, mode="r", *, hints=None):
        from mpi4py import MPI

        self.MPI = MPI
        amode = MPI.MODE_RDONLY if mode == "r" else MPI.MODE_RDWR | MPI.MODE_CREATE
        info = MPI.Info.Create()
        for k, v in (hints or {}).items():
            info.Set(str(k), str(v))
        self.fh = MPI.File.Open(comm, os.fspath(path), amode, info)
        info.Free()

    def close(self):
        self.fh.Close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def readv(self, offsets, lengths, *, xfer=0, out=None, per_range=False):
        off, ln = _ranges(offsets, lengths)
        if out is None:
            out = np.empty(int(ln.sum()), dtype=np.uint8)
        got = np.zeros(off.size, dtype=np.int64)
        st = self.MPI.Status()
        pos = 0
        for i in range(off.size):
            o, n = int(off[i]), int(ln[i])
            for t_off, rel, t in _transfers(o, n, xfer):
                self.fh.Read_at(t_off, [out[pos + rel:pos + rel + t], self.MPI.BYTE], st)
                k = st.Get_count(self.MPI.BYTE)
                got[i] += k
                if k < t:
                    break
            pos += n
        return (out, got) if per_range else (out, int(got.sum()))

    def read_all(self, offsets, lengths, *, out=None):
        """One Read_at_all of the union of the ranges (file views must not overlap) into a
        scratch buffer, then each range copied to its place."""
        MPI = self.MPI
        off, ln = _ranges(offsets, lengths)
        if out is None:
            out = np.empty(int(ln.sum()), dtype=np.uint8)
        runs = []
        for o, n in sorted((int(o), int(n)) for o, n in zip(off, ln) if n > 0):
            if runs and o <= runs[-1][0] + runs[-1][1]:
                runs[-1][1] = max(runs[-1][1], o + n - runs[-1][0])
            else:
                runs.append([o, n])
        ulen = sum(n for _, n in runs)
        scratch = np.empty(ulen, dtype=np.uint8)
        st = MPI.Status()
        if runs:
            ftype = MPI.BYTE.Create_hindexed([n for _, n in runs], [o for o, _ in runs]).Commit()
            self.fh.Set_view(0, MPI.BYTE, ftype)
            self.fh.Read_at_all(0, [scratch, ulen, MPI.BYTE], st)
            count = st.Get_elements(MPI.BYTE)
            ftype.Free()
        else:
            self.fh.Set_view(0, MPI.BYTE, MPI.BYTE)
            self.fh.Read_at_all(0, [scratch, 0, MPI.BYTE], st)
            count = 0
        self.fh.Set_view(0, MPI.BYTE, MPI.BYTE)
        # map file offsets to scratch positions; bytes past the count were not read (EOF)
        starts = np.array([o for o, _ in runs], dtype=np.int64)
        spos = np.concatenate([[0], np.cumsum([n for _, n in runs])]).astype(np.int64)
        total, pos = 0, 0
        for o, n in zip(off.tolist(), ln.tolist()):
            if n > 0:
                r = int(np.searchsorted(starts, o, side="right")) - 1
                a = spos[r] + (o - starts[r])
                got = max(0, min(n, count - a))
                out[pos:pos + got] = scratch[a:a + got]
                total += got
            pos += n
        return out, int(total)


class H5Ref:
    """h5py: the rows of a batch as one sorted selection, read in one call (collective inside
    h5py's `collective` context when asked)."""

    def __init__(self, path, name, *, driver="mpio", comm=None, collective=False):
        import h5py

        kw = {}
        if driver == "mpio":
            from mpi4py import MPI

            kw = {"driver": "mpio", "comm": comm if comm is not None else MPI.COMM_SELF}
        self.f = h5py.File(os.fspath(path), "r", **kw)
        self.ds = self.f[name]
        self.collective = collective and driver == "mpio"

    def close(self):
        self.f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def read_rows(self, starts, counts, *, out=None):
        st, ct = _ranges(starts, counts)
        rows = np.unique(np.concatenate(
            [np.arange(s, s + c, dtype=np.int64) for s, c in zip(st, ct)] or
            [np.zeros(0, dtype=np.int64)]))
        row_bytes = self.ds.dtype.itemsize * int(np.prod(self.ds.shape[1:], dtype=np.int64))
        if out is None:
            out = np.empty(int(ct.sum()) * row_bytes, dtype=np.uint8)
        if self.collective:
            with self.ds.collective:
                data = self.ds[rows] if rows.size else self.ds[0:0]
        else:
            data = self.ds[rows] if rows.size else self.ds[0:0]
        raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        out[:raw.size] = raw
        return out, int(raw.size)

# cython: language_level=3, boundscheck=False, wraparound=False, embedsignature=True
"""Thin wrapper of the native engines in csrc/: every blocking call runs without the GIL.

Buffers are any writable contiguous buffer (numpy arrays, bytearray); offsets and lengths are
converted to contiguous int64 arrays. Errors raise EngineError (an OSError) whose message names
the rank, the file and the offset.
"""
from libc.stdint cimport int64_t, int32_t, uint64_t, uint8_t
from libc.string cimport memset
from libc.stdlib cimport malloc, free, realloc
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_WRITABLE, PyBUF_SIMPLE
from cpython.ref cimport Py_INCREF
from mpi4py cimport MPI
from mpi4py.libmpi cimport MPI_Comm, MPI_COMM_SELF, MPI_Initialized, MPI_Finalized, \
    MPI_Comm_rank, MPI_COMM_WORLD

cimport numpy as cnp
import numpy as np
import os

from dlio_mpi._dm cimport *

cnp.import_array()

OPS = ("read", "write", "open", "close", "fsync", "fdatasync", "seek", "stat", "mmap", "view")
IFACES = ("posix", "posix_direct", "stdio", "mmap", "mpiio_ind", "mpiio_coll", "hdf5_ind",
          "hdf5_coll", "hdf5_sec2")
HIST_BUCKETS = DM_HIST_BUCKETS


class EngineError(OSError):
    """An I/O engine failure; str() is one line naming rank, operation, file and offset, and
    errno is the system's error number where there is one (EIO for MPI and HDF5 failures)."""

    def __str__(self):
        return self.strerror or super().__str__()


class AlignmentError(EngineError):
    """An O_DIRECT request whose offset, length, transfer size or buffer is not aligned."""


class ShortReadError(EngineError):
    """Fewer bytes than asked for, where the request had to be read whole."""


cdef int _rank() noexcept nogil:
    cdef int init = 0, fin = 0, r = -1
    MPI_Initialized(&init)
    MPI_Finalized(&fin)
    if init and not fin:
        MPI_Comm_rank(MPI_COMM_WORLD, &r)
    return r


cdef raise_err(dm_err *e):
    msg = e.msg.decode("utf-8", "replace")
    r = _rank()
    where = f"rank {r}: " if r >= 0 else ""
    if e.code == DM_EALIGN:
        raise AlignmentError(22, where + msg)
    if e.code == DM_EOF:
        raise ShortReadError(61, where + msg)
    if e.code > 10000:
        raise EngineError(5, where + msg)
    raise EngineError(e.code, where + msg)


cdef bytes _path(path):
    return os.fsencode(os.fspath(path))


cdef cnp.ndarray _i64(a):
    """a as a 1-D contiguous int64 array (itself when it already is one)."""
    if (isinstance(a, np.ndarray) and (<cnp.ndarray>a).dtype == np.int64 and
            (<cnp.ndarray>a).ndim == 1 and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>a)):
        return <cnp.ndarray>a
    return np.ascontiguousarray(np.asarray(a, dtype=np.int64).reshape(-1))


cdef int64_t _sum(cnp.ndarray a):
    cdef int64_t s = 0
    cdef int64_t *p = <int64_t *>a.data
    cdef Py_ssize_t i
    for i in range(a.shape[0]):
        s += p[i]
    return s


def hist_bucket_bounds():
    """Lower bounds (ns) of the op-log histogram buckets; bucket b covers [lower[b], lower[b+1])."""
    return np.array([dm_hist_bucket_lower_ns(b) for b in range(DM_HIST_BUCKETS)], dtype=np.float64)


def hist_bucket(int64_t ns):
    return dm_hist_bucket(ns)


def mono_ns():
    """CLOCK_MONOTONIC in ns, the clock of the op log's origin."""
    return dm_mono_ns()


def aligned_empty(size_t nbytes, size_t align=4096):
    """A uint8 numpy array of nbytes whose data starts on an align-byte boundary."""
    raw = np.empty(nbytes + align, dtype=np.uint8)
    cdef size_t addr = raw.ctypes.data
    cdef size_t skip = (align - addr % align) % align
    return raw[skip:skip + nbytes]


def status_guard_arm(tmp, final, skip_if, body, watch_pid=0):
    """On SIGTERM or SIGINT, even while this process is inside a blocking call, write body to
    final (through tmp, then a rename) unless skip_if exists or (watch_pid > 0) process
    watch_pid is alive, then run the handler installed before (Python's). Call after Python's
    signal handlers are set."""
    cdef dm_err e
    cdef bytes t = _path(tmp), f = _path(final), k = _path(skip_if)
    cdef bytes b = body.encode() if isinstance(body, str) else bytes(body)
    if dm_status_guard_arm(t, f, k, b, watch_pid, &e) != 0:
        raise_err(&e)


def status_guard_disarm():
    """The handlers from before status_guard_arm, and no status written on a signal."""
    dm_status_guard_disarm()


def dio_alignment(path):
    """(memory alignment, offset alignment, source) for O_DIRECT on path's file system: from
    statx STATX_DIOALIGN where the kernel reports it ("statx"), else the logical block size of
    the device ("blocksize")."""
    cdef dm_err e
    cdef size_t mem = 0, off = 0
    cdef const char *src = NULL
    cdef bytes p = _path(path)
    cdef const char *cp = p
    with nogil:
        rc = dm_dio_alignment(cp, &mem, &off, &src, &e)
    if rc != 0:
        raise_err(&e)
    return mem, off, src.decode()


def dio_probe(directory):
    """Raise EngineError unless the file system of directory accepts O_DIRECT reads and writes."""
    cdef dm_err e
    cdef bytes p = _path(directory)
    cdef const char *cp = p
    with nogil:
        rc = dm_dio_probe(cp, &e)
    if rc != 0:
        raise_err(&e)


cdef class OpLog:
    """Per-rank log of every operation the engines issue: start and duration (ns, from the
    log's origin on CLOCK_MONOTONIC), offset, bytes moved, file id, op and interface.

    Storage is preallocated for `capacity` entries; operations past it are still counted (count,
    bytes, latency histogram) in `overflow`. Call finalize() (which converts timestamps in place)
    before reading arrays(); the arrays are views of the C storage, valid until reset()."""
    cdef dm_oplog *L

    def __cinit__(self, size_t capacity=1 << 20):
        cdef dm_err e
        self.L = dm_oplog_create(capacity, &e)
        if self.L == NULL:
            raise_err(&e)

    def __dealloc__(self):
        if self.L != NULL:
            dm_oplog_free(self.L)
            self.L = NULL

    @property
    def capacity(self):
        return self.L.cap

    @property
    def count(self):
        """Entries held (at most capacity)."""
        return min(self.L.n, self.L.cap)

    @property
    def overflow(self):
        """Operations that did not fit and were only counted."""
        return dm_oplog_overflow(self.L)

    @property
    def origin_mono_ns(self):
        return self.L.mono0_ns

    @property
    def enabled(self):
        return bool(self.L.enabled)

    @enabled.setter
    def enabled(self, value):
        self.L.enabled = 1 if value else 0

    def overflow_totals(self):
        """{op name: (count, bytes)} of the operations past capacity."""
        return {OPS[k]: (self.L.over_count[k], self.L.over_bytes[k]) for k in range(len(OPS))
                if self.L.over_count[k]}

    def finalize(self):
        """Convert the entries recorded so far to nanoseconds (call with no I/O in flight)."""
        with nogil:
            dm_oplog_finalize(self.L)

    def reset(self):
        """Forget every entry and the overflow counts (invalidates arrays from arrays())."""
        self.L.n = 0
        self.L.concurrent = 0
        dm_oplog_reset(self.L)

    cdef _view(self, void *ptr, int typenum, cnp.npy_intp n):
        cdef cnp.npy_intp dims[1]
        dims[0] = n
        arr = cnp.PyArray_SimpleNewFromData(1, dims, typenum, ptr)
        Py_INCREF(self)
        cnp.PyArray_SetBaseObject(arr, self)
        arr.flags.writeable = False
        return arr

    def arrays(self):
        """Zero-copy numpy views of the finalized entries: start, dur, offset, bytes, file, op,
        iface."""
        self.finalize()
        cdef cnp.npy_intp n = self.L.nconv
        return {
            "start": self._view(self.L.start, cnp.NPY_INT64, n),
            "dur": self._view(self.L.dur, cnp.NPY_INT64, n),
            "offset": self._view(self.L.offset, cnp.NPY_INT64, n),
            "bytes": self._view(self.L.bytes, cnp.NPY_INT64, n),
            "file": self._view(self.L.file, cnp.NPY_INT32, n),
            "op": self._view(self.L.op, cnp.NPY_UINT8, n),
            "iface": self._view(self.L.iface, cnp.NPY_UINT8, n),
        }

    def histogram(self, op=None, iface=None):
        """Latency histogram (uint64 counts per bucket, see hist_bucket_bounds) of the finalized
        entries and overflow, for one op and/or interface name, or all."""
        self.finalize()
        cdef int o = -1 if op is None else OPS.index(op)
        cdef int i = -1 if iface is None else IFACES.index(iface)
        cdef cnp.ndarray[cnp.uint64_t, ndim=1] h = np.zeros(DM_HIST_BUCKETS, dtype=np.uint64)
        with nogil:
            dm_oplog_histogram(self.L, o, i, <uint64_t *>h.data)
        return h


cdef dm_oplog *_log_of(OpLog log):
    return log.L if log is not None else NULL


cdef class _Batch:
    """A request's offsets/lengths as int64 arrays and the buffer they are read into."""
    cdef cnp.ndarray off, ln
    cdef Py_buffer view
    cdef bint have_view

    def __cinit__(self):
        self.have_view = False

    def __dealloc__(self):
        if self.have_view:
            PyBuffer_Release(&self.view)


cdef _Batch _batch(offsets, lengths, buf, bint writable, int64_t scale=1):
    cdef _Batch b = _Batch()
    b.off = _i64(offsets)
    b.ln = _i64(lengths)
    if b.off.shape[0] != b.ln.shape[0]:
        raise ValueError(f"{b.off.shape[0]} offsets but {b.ln.shape[0]} lengths")
    cdef int64_t *op = <int64_t *>b.off.data
    cdef int64_t *lp = <int64_t *>b.ln.data
    cdef int64_t need = 0
    cdef Py_ssize_t i
    for i in range(b.ln.shape[0]):
        if op[i] < 0 or lp[i] < 0:
            raise ValueError(f"negative offset or length ({op[i]}, {lp[i]})")
        need += lp[i]
    need *= scale
    PyObject_GetBuffer(buf, &b.view, PyBUF_WRITABLE if writable else PyBUF_SIMPLE)
    b.have_view = True
    if b.view.len < need:
        raise ValueError(f"buffer of {b.view.len} bytes is smaller than the {need} requested")
    return b


cdef _out(int64_t need, out, size_t align):
    if out is None:
        return aligned_empty(need, align)
    return out


cdef class PosixFile:
    """A file through POSIX: buffered pread/pwrite, O_DIRECT (direct=True) or mmap reads
    (mmap=True). advice: None or a os.POSIX_FADV_* value applied to the whole file at open."""
    cdef dm_posix h
    cdef bint is_open
    cdef OpLog log
    cdef readonly object path
    cdef readonly int32_t file_id

    def __cinit__(self, path, mode="r", *, bint direct=False, bint mmap=False, advice=None,
                  int32_t file_id=0, OpLog oplog=None):
        cdef dm_err e
        cdef int flags = _mode_flags(mode) | (DM_O_DIRECT if direct else 0)
        cdef int adv = -1 if advice is None else int(advice)
        cdef bytes p = _path(path)
        cdef const char *cp = p
        self.is_open = False
        self.log = oplog
        self.path = os.fspath(path)
        self.file_id = file_id
        cdef dm_oplog *L = _log_of(oplog)
        with nogil:
            rc = dm_posix_open(&self.h, cp, flags, 1 if mmap else 0, adv, file_id, L, &e)
        if rc != 0:
            raise_err(&e)
        self.is_open = True

    def __dealloc__(self):
        cdef dm_err e
        if self.is_open:
            dm_posix_close(&self.h, &e)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        cdef dm_err e
        if self.is_open:
            self.is_open = False
            with nogil:
                rc = dm_posix_close(&self.h, &e)
            if rc != 0:
                raise_err(&e)

    cdef _check(self):
        if not self.is_open:
            raise ValueError(f"I/O on closed file {self.path}")

    @property
    def alignment(self):
        """(memory, offset) alignment required in O_DIRECT mode, (1, 1) otherwise."""
        if self.h.flags & DM_O_DIRECT:
            return self.h.mem_align, self.h.off_align
        return 1, 1

    def size(self):
        cdef dm_err e
        cdef int64_t s = 0
        self._check()
        if dm_posix_size(&self.h, &s, &e) != 0:
            raise_err(&e)
        return s

    def fadvise(self, int64_t offset, int64_t length, int advice):
        cdef dm_err e
        self._check()
        if dm_posix_fadvise(&self.h, offset, length, advice, &e) != 0:
            raise_err(&e)

    def readv(self, offsets, lengths, *, int64_t xfer=0, out=None, bint exact=False,
              bint per_range=False):
        """Read the ranges into out (packed one after another; allocated, aligned, if None).
        Returns (out, total bytes) or, with per_range, (out, array of bytes per range)."""
        cdef dm_err e
        cdef int64_t total = 0
        self._check()
        offs = _i64(offsets)
        lens = _i64(lengths)
        out = _out(_sum(lens), out, max(self.h.mem_align, 64))
        cdef _Batch b = _batch(offs, lens, out, True)
        cdef cnp.ndarray got = np.zeros(b.off.shape[0], dtype=np.int64) if per_range else None
        cdef int64_t *gp = <int64_t *>got.data if per_range else NULL
        with nogil:
            rc = dm_posix_readv(&self.h, b.off.shape[0], <int64_t *>b.off.data,
                                <int64_t *>b.ln.data, xfer, <char *>b.view.buf, gp, exact,
                                &total, &e)
        if rc != 0:
            raise_err(&e)
        return (out, got) if per_range else (out, total)

    def read(self, int64_t offset, int64_t length, *, int64_t xfer=0):
        """Bytes at [offset, offset+length) (fewer at EOF) as a uint8 array."""
        out, total = self.readv([offset], [length], xfer=xfer)
        return out[:total]

    def writev(self, offsets, lengths, buf, *, int64_t xfer=0):
        cdef dm_err e
        cdef int64_t total = 0
        self._check()
        cdef _Batch b = _batch(offsets, lengths, buf, False)
        with nogil:
            rc = dm_posix_writev(&self.h, b.off.shape[0], <int64_t *>b.off.data,
                                 <int64_t *>b.ln.data, xfer, <char *>b.view.buf, &total, &e)
        if rc != 0:
            raise_err(&e)
        return total

    def sync(self, bint data_only=False):
        """fsync (or fdatasync) the file; logged as its own operation."""
        cdef dm_err e
        self._check()
        with nogil:
            rc = dm_posix_sync(&self.h, data_only, &e)
        if rc != 0:
            raise_err(&e)


cdef int _mode_flags(mode) except -1:
    if mode == "r":
        return DM_O_READ
    if mode == "r+":
        return DM_O_WRITE
    if mode == "w":
        return DM_O_WRITE | DM_O_CREATE | DM_O_TRUNC
    if mode == "a" or mode == "c":
        return DM_O_WRITE | DM_O_CREATE
    raise ValueError(f"unknown mode {mode!r}: use 'r', 'r+', 'w' (create, truncate) or "
                     "'c' (create, keep)")


cdef class StdioFile:
    """A file through STDIO streams (fopen/fseeko/fread/fwrite) with a settable buffer size
    (bufsize=0 keeps the C library's default)."""
    cdef dm_stdio h
    cdef bint is_open
    cdef OpLog log
    cdef readonly object path

    def __cinit__(self, path, mode="r", *, size_t bufsize=0, int32_t file_id=0,
                  OpLog oplog=None, bint direct=False):
        cdef dm_err e
        cdef int flags = _mode_flags(mode) | (DM_O_DIRECT if direct else 0)
        cdef bytes p = _path(path)
        cdef const char *cp = p
        cdef dm_oplog *L = _log_of(oplog)
        self.is_open = False
        self.log = oplog
        self.path = os.fspath(path)
        with nogil:
            rc = dm_stdio_open(&self.h, cp, flags, bufsize, file_id, L, &e)
        if rc != 0:
            raise_err(&e)
        self.is_open = True

    def __dealloc__(self):
        cdef dm_err e
        if self.is_open:
            dm_stdio_close(&self.h, &e)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        cdef dm_err e
        if self.is_open:
            self.is_open = False
            with nogil:
                rc = dm_stdio_close(&self.h, &e)
            if rc != 0:
                raise_err(&e)

    def readv(self, offsets, lengths, *, int64_t xfer=0, out=None, bint exact=False,
              bint per_range=False):
        cdef dm_err e
        cdef int64_t total = 0
        if not self.is_open:
            raise ValueError(f"I/O on closed file {self.path}")
        offs = _i64(offsets)
        lens = _i64(lengths)
        out = _out(_sum(lens), out, 64)
        cdef _Batch b = _batch(offs, lens, out, True)
        cdef cnp.ndarray got = np.zeros(b.off.shape[0], dtype=np.int64) if per_range else None
        cdef int64_t *gp = <int64_t *>got.data if per_range else NULL
        with nogil:
            rc = dm_stdio_readv(&self.h, b.off.shape[0], <int64_t *>b.off.data,
                                <int64_t *>b.ln.data, xfer, <char *>b.view.buf, gp, exact,
                                &total, &e)
        if rc != 0:
            raise_err(&e)
        return (out, got) if per_range else (out, total)

    def read(self, int64_t offset, int64_t length, *, int64_t xfer=0):
        out, total = self.readv([offset], [length], xfer=xfer)
        return out[:total]

    def writev(self, offsets, lengths, buf, *, int64_t xfer=0):
        cdef dm_err e
        cdef int64_t total = 0
        cdef _Batch b = _batch(offsets, lengths, buf, False)
        with nogil:
            rc = dm_stdio_writev(&self.h, b.off.shape[0], <int64_t *>b.off.data,
                                 <int64_t *>b.ln.data, xfer, <char *>b.view.buf, &total, &e)
        if rc != 0:
            raise_err(&e)
        return total

    def flush(self, bint sync=False):
        """fflush, then fsync when sync is true."""
        cdef dm_err e
        with nogil:
            rc = dm_stdio_flush(&self.h, sync, &e)
        if rc != 0:
            raise_err(&e)


cdef class _Hints:
    """MPI_Info hints as C string arrays."""
    cdef int n
    cdef const char **keys
    cdef const char **vals
    cdef list keep

    def __cinit__(self, hints):
        items = [(str(k).encode(), str(v).encode()) for k, v in (hints or {}).items()]
        self.n = len(items)
        self.keep = items
        self.keys = <const char **>malloc(max(self.n, 1) * sizeof(char *))
        self.vals = <const char **>malloc(max(self.n, 1) * sizeof(char *))
        for i, (k, v) in enumerate(items):
            self.keys[i] = k
            self.vals[i] = v

    def __dealloc__(self):
        free(self.keys)
        free(self.vals)


cdef class MPIFile:
    """A file through MPI-IO, opened collectively on comm with info hints (a dict such as
    {"romio_cb_read": "enable", "cb_buffer_size": 16777216})."""
    cdef dm_mpiio h
    cdef bint is_open
    cdef OpLog log
    cdef readonly object path
    cdef readonly object comm

    def __cinit__(self, MPI.Comm comm, path, mode="r", *, hints=None, int32_t file_id=0,
                  OpLog oplog=None):
        cdef dm_err e
        cdef int flags = _mode_flags(mode)
        cdef bytes p = _path(path)
        cdef const char *cp = p
        cdef _Hints hi = _Hints(hints)
        cdef dm_oplog *L = _log_of(oplog)
        cdef MPI_Comm c = comm.ob_mpi
        self.is_open = False
        self.log = oplog
        self.path = os.fspath(path)
        self.comm = comm
        with nogil:
            rc = dm_mpiio_open(&self.h, c, cp, flags, hi.n, hi.keys, hi.vals, file_id, L, &e)
        if rc != 0:
            raise_err(&e)
        self.is_open = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Collective."""
        cdef dm_err e
        if self.is_open:
            self.is_open = False
            with nogil:
                rc = dm_mpiio_close(&self.h, &e)
            if rc != 0:
                raise_err(&e)

    def size(self):
        cdef dm_err e
        cdef int64_t s = 0
        if dm_mpiio_size(&self.h, &s, &e) != 0:
            raise_err(&e)
        return s

    def readv(self, offsets, lengths, *, int64_t xfer=0, out=None, bint exact=False,
              bint per_range=False):
        """Independent reads (MPI_File_read_at), one per transfer."""
        cdef dm_err e
        cdef int64_t total = 0
        offs = _i64(offsets)
        lens = _i64(lengths)
        out = _out(_sum(lens), out, 64)
        cdef _Batch b = _batch(offs, lens, out, True)
        cdef cnp.ndarray got = np.zeros(b.off.shape[0], dtype=np.int64) if per_range else None
        cdef int64_t *gp = <int64_t *>got.data if per_range else NULL
        with nogil:
            rc = dm_mpiio_readv(&self.h, b.off.shape[0], <int64_t *>b.off.data,
                                <int64_t *>b.ln.data, xfer, <char *>b.view.buf, gp, exact,
                                &total, &e)
        if rc != 0:
            raise_err(&e)
        return (out, got) if per_range else (out, total)

    def read_all(self, offsets, lengths, *, out=None):
        """Collective: every range in one MPI_File_read_at_all. Every rank of the communicator
        must call it (with no ranges if it has none). Returns (out, total)."""
        cdef dm_err e
        cdef int64_t total = 0
        offs = _i64(offsets)
        lens = _i64(lengths)
        out = _out(_sum(lens), out, 64)
        cdef _Batch b = _batch(offs, lens, out, True)
        with nogil:
            rc = dm_mpiio_read_all(&self.h, b.off.shape[0], <int64_t *>b.off.data,
                                   <int64_t *>b.ln.data, <char *>b.view.buf, &total, &e)
        if rc != 0:
            raise_err(&e)
        return out, total

    def writev(self, offsets, lengths, buf, *, int64_t xfer=0):
        cdef dm_err e
        cdef int64_t total = 0
        cdef _Batch b = _batch(offsets, lengths, buf, False)
        with nogil:
            rc = dm_mpiio_writev(&self.h, b.off.shape[0], <int64_t *>b.off.data,
                                 <int64_t *>b.ln.data, xfer, <char *>b.view.buf, &total, &e)
        if rc != 0:
            raise_err(&e)
        return total

    def write_all(self, offsets, lengths, buf):
        """Collective write of non-overlapping ranges in one MPI_File_write_at_all."""
        cdef dm_err e
        cdef int64_t total = 0
        offs = _i64(offsets)
        lens = _i64(lengths)
        cdef _Batch b = _batch(offs, lens, buf, False)
        with nogil:
            rc = dm_mpiio_write_all(&self.h, b.off.shape[0], <int64_t *>b.off.data,
                                    <int64_t *>b.ln.data, <char *>b.view.buf, &total, &e)
        if rc != 0:
            raise_err(&e)
        return total

    def write_at_all(self, int64_t offset, buf):
        """Collective: buf (all of it) at offset in one MPI_File_write_at_all, without a file
        view (dm_mpiio_write_at_all). Every rank calls it, an empty buf if it has nothing."""
        cdef dm_err e
        cdef int64_t total = 0
        cdef Py_buffer v
        PyObject_GetBuffer(buf, &v, PyBUF_SIMPLE)
        try:
            with nogil:
                rc = dm_mpiio_write_at_all(&self.h, offset, v.len, <char *>v.buf, &total, &e)
        finally:
            PyBuffer_Release(&v)
        if rc != 0:
            raise_err(&e)
        return total

    def read_at_all(self, int64_t offset, out):
        """Collective: len(out) bytes at offset into out in one MPI_File_read_at_all, without
        a file view. Returns the bytes MPI reports read (ompio reports a read across the end of
        the file as whole: check the size first)."""
        cdef dm_err e
        cdef int64_t total = 0
        cdef Py_buffer v
        PyObject_GetBuffer(out, &v, PyBUF_WRITABLE)
        try:
            with nogil:
                rc = dm_mpiio_read_at_all(&self.h, offset, v.len, <char *>v.buf, &total, &e)
        finally:
            PyBuffer_Release(&v)
        if rc != 0:
            raise_err(&e)
        return total

    def sync(self):
        """Collective MPI_File_sync."""
        cdef dm_err e
        with nogil:
            rc = dm_mpiio_sync(&self.h, &e)
        if rc != 0:
            raise_err(&e)


cdef class H5Dataset:
    """One dataset of an HDF5 file, through the MPI-IO driver ("mpio", collective or
    independent transfers) or sec2. A sample is a row (index along dimension 0)."""
    cdef dm_h5 h
    cdef bint is_open
    cdef OpLog log
    cdef readonly object path
    cdef readonly object name

    def __cinit__(self, path, name, *, driver="mpio", comm=None, bint collective=False,
                  mode="r", hints=None, int32_t file_id=0, OpLog oplog=None, create=None,
                  chunk_rows=0):
        cdef dm_err e
        cdef int drv = _driver(driver)
        cdef bytes p = _path(path)
        cdef bytes n = str(name).encode()
        cdef const char *cp = p
        cdef const char *cn = n
        cdef _Hints hi = _Hints(hints)
        cdef dm_oplog *L = _log_of(oplog)
        cdef MPI_Comm c = MPI_COMM_SELF
        cdef hsize_t dims[8]
        cdef int nd = 0
        cdef hsize_t chunk = chunk_rows
        cdef int writing = 1 if mode != "r" else 0
        if comm is not None:
            c = (<MPI.Comm>comm).ob_mpi
        self.is_open = False
        self.log = oplog
        self.path = os.fspath(path)
        self.name = name
        if create is not None:
            nd = len(create)
            if nd < 1 or nd > 8:
                raise ValueError(f"dataset shape {create!r} must have 1 to 8 dimensions")
            for i in range(nd):
                dims[i] = create[i]
            with nogil:
                rc = dm_h5_create(&self.h, cp, cn, nd, dims, chunk, drv, c, collective,
                                  hi.n, hi.keys, hi.vals, file_id, L, &e)
        else:
            with nogil:
                rc = dm_h5_open(&self.h, cp, cn, drv, c, collective, writing, hi.n, hi.keys,
                                hi.vals, file_id, L, &e)
        if rc != 0:
            raise_err(&e)
        self.is_open = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        cdef dm_err e
        if self.is_open:
            self.is_open = False
            with nogil:
                rc = dm_h5_close(&self.h, &e)
            if rc != 0:
                raise_err(&e)

    @property
    def shape(self):
        return tuple(self.h.dims[i] for i in range(self.h.rank_ndims))

    @property
    def itemsize(self):
        return self.h.elem_size

    @property
    def row_bytes(self):
        return self.h.row_bytes

    @property
    def collective(self):
        return bool(self.h.collective)

    def read_rows(self, starts, counts, *, out=None):
        """Rows [starts[i], starts[i]+counts[i]) for every i, as one union of hyperslabs in one
        H5Dread; they arrive in ascending row order, overlaps read once. Collective datasets:
        every rank calls it (with no rows if it has none). Returns (out, bytes)."""
        cdef dm_err e
        cdef int64_t total = 0
        st = _i64(starts)
        ct = _i64(counts)
        out = _out(_sum(ct) * self.h.row_bytes, out, 64)
        cdef _Batch b = _batch(st, ct, out, True, self.h.row_bytes)
        with nogil:
            rc = dm_h5_read_rows(&self.h, b.off.shape[0], <int64_t *>b.off.data,
                                 <int64_t *>b.ln.data, <char *>b.view.buf, &total, &e)
        if rc != 0:
            raise_err(&e)
        return out, total

    def read_box(self, start, count, *, out=None):
        """The box [start[d], start[d]+count[d]) of every dimension in one independent
        H5Dread (C order into out). Returns (out, bytes)."""
        cdef dm_err e
        cdef int64_t total = 0
        cdef cnp.ndarray st = _i64(start)
        cdef cnp.ndarray ct = _i64(count)
        if st.shape[0] != ct.shape[0]:
            raise ValueError(f"{st.shape[0]} start values but {ct.shape[0]} counts")
        cdef int64_t need = int(np.prod(ct)) * self.h.elem_size
        out = _out(need, out, 64)
        cdef Py_buffer view
        PyObject_GetBuffer(out, &view, PyBUF_WRITABLE)
        try:
            if view.len < need:
                raise ValueError(f"out holds {view.len} bytes, the box needs {need}")
            with nogil:
                rc = dm_h5_read_box(&self.h, <int>st.shape[0], <int64_t *>st.data,
                                    <int64_t *>ct.data, <char *>view.buf, &total, &e)
        finally:
            PyBuffer_Release(&view)
        if rc != 0:
            raise_err(&e)
        return out, total

    def write_rows(self, starts, counts, buf):
        cdef dm_err e
        cdef int64_t total = 0
        st = _i64(starts)
        ct = _i64(counts)
        cdef _Batch b = _batch(st, ct, buf, False, self.h.row_bytes)
        with nogil:
            rc = dm_h5_write_rows(&self.h, b.off.shape[0], <int64_t *>b.off.data,
                                  <int64_t *>b.ln.data, <char *>b.view.buf, &total, &e)
        if rc != 0:
            raise_err(&e)
        return total

    def flush(self):
        cdef dm_err e
        with nogil:
            rc = dm_h5_flush(&self.h, &e)
        if rc != 0:
            raise_err(&e)


cdef int _driver(driver) except -1:
    if driver == "mpio":
        return DM_H5_MPIO
    if driver == "sec2":
        return DM_H5_SEC2
    raise ValueError(f"unknown HDF5 driver {driver!r}: use 'mpio' or 'sec2'")


include "_readahead.pxi"

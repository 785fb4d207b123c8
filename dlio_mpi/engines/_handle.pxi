# The base classes of the engines' open files, included by _engines.pyx.


cdef class _Handle:
    """What every engine's open file shares: its path, file id and op log, and the engine's
    table of operations (csrc/dm.h dm_engine_ops), through which it is opened, closed, sized,
    synced, read and written (read-ahead reads any handle through the same table); a context
    manager, the closed check. An engine's class embeds its C handle and fills the open's
    arguments; the rest is here."""
    cdef bint is_open
    cdef OpLog log
    cdef readonly object path
    cdef readonly int32_t file_id
    cdef const dm_engine_ops *ops
    cdef void *hp
    cdef int pending        # reads and writes submitted and not completed (PendingIO)
    # deferred: opened by the read-ahead thread that reads it, with these arguments (and
    # closed by it after the read), never by the program; `keeps` holds what they point into
    cdef readonly bint deferred
    cdef bint taken             # a deferred handle queued for its segment
    cdef dm_open_args deferred_args
    cdef object keeps

    cdef _init(self, path, int32_t file_id, OpLog oplog, const dm_engine_ops *ops, void *hp):
        self.path = os.fspath(path)
        self.file_id = file_id
        self.log = oplog
        self.ops = ops
        self.hp = hp

    cdef int _open(self, dm_open_args *a, keeps=None) except -1:
        """Open through the table: a's path, file id and op log are the handle's. A deferred
        handle keeps the arguments (and keeps, the objects they point into) for the read-ahead
        thread that opens it."""
        cdef dm_err e
        cdef bytes p = _path(self.path)
        a.path = p
        a.file_id = self.file_id
        a.log = _log_of(self.log)
        if self.deferred:
            self.deferred_args = a[0]
            self.keeps = (p, self.log, keeps)
            return 0
        with nogil:
            CHK(self.ops.open(self.hp, a, &e), &e)
        self.is_open = True
        return 0

    def __dealloc__(self):
        cdef dm_err e
        if self.is_open and self.ops != NULL and self.ops.close_when_freed:
            self.ops.close(self.hp, &e)

    cdef int _check(self) except -1:
        if not self.is_open:
            if self.deferred:
                raise ValueError(f"{self.path} is opened by the read-ahead thread that reads "
                                 "it, not by the program")
            raise ValueError(f"I/O on closed file {self.path}")
        return 0

    cdef int _io(self, int op, _Batch b, int64_t xfer, int64_t *got, bint exact,
                 int64_t *total, bint discard=False) except -1:
        """One read or write of b's ranges through the table, submitted and completed."""
        cdef dm_err e
        cdef dm_io io
        _io_of(&io, op, b, xfer, got, exact, discard)
        with nogil:
            CHK(dm_engine_io(self.ops, self.hp, &io, &e), &e)
        total[0] = io.total
        return 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def engine(self):
        """The name of the engine's table (posix, stdio, mpiio, hdf5, io_uring)."""
        return self.ops.name.decode() if self.ops != NULL else None

    @property
    def inflight(self):
        """Read-ahead segments of this file queued or being read."""
        if self.hp == NULL or self.ops == NULL:
            return 0
        return dm_inflight_count(self.ops.inflight(self.hp))

    def close(self):
        """Close the file (collective for MPI-IO and HDF5 through the MPI-IO driver), once no
        read-ahead segment of it is queued or being read (waits for them: a thread must not
        read through a descriptor closed, or reused by another open, under it). Refused while
        a read or write of it is submitted and not completed."""
        cdef dm_err e
        if self.is_open:
            if self.pending:
                raise ValueError(f"cannot close {self.path}: {self.pending} submitted "
                                 f"read(s) or write(s) not completed")
            with nogil:
                dm_inflight_wait(self.ops.inflight(self.hp))
            self.is_open = False
            with nogil:
                CHK(self.ops.close(self.hp, &e), &e)

    def size(self):
        """The file's size in bytes (STDIO: on disk, without what a writing stream still
        buffers; HDF5: as libhdf5 knows it)."""
        cdef dm_err e
        cdef int64_t s = 0
        self._check()
        with nogil:
            CHK(self.ops.size(self.hp, &s, &e), &e)
        return s

    def sync(self, bint data_only=False):
        """Make the written bytes durable, logged as its own operation: fsync (fdatasync with
        data_only) for POSIX, fflush then fsync (fdatasync) for STDIO, the collective
        MPI_File_sync for MPI-IO, H5Fflush for HDF5 (data_only applies to POSIX and STDIO)."""
        cdef dm_err e
        self._check()
        with nogil:
            CHK(self.ops.sync(self.hp, data_only, &e), &e)


cdef bint _deferrable(bint deferred, mode, path) except -1:
    """Whether a handle is deferred (opened by its read-ahead thread): reading only."""
    if deferred and mode != "r":
        raise ValueError(f"{path}: only a file opened for reading can be opened by a "
                         "read-ahead thread")
    return deferred


cdef void _io_of(dm_io *io, int op, _Batch b, int64_t xfer, int64_t *got, bint exact,
                 bint discard):
    memset(io, 0, sizeof(dm_io))
    io.op = op
    io.n = b.off.shape[0]
    io.off = <int64_t *>b.off.data
    io.len = <int64_t *>b.ln.data
    io.buf = <char *>b.view.buf
    io.xfer = xfer
    io.discard = discard
    io.exact = exact
    io.got = got


cdef class PendingIO:
    """A read submitted through a file's engine and not completed yet (_RangeFile.submit_readv):
    complete() waits for it and returns (out, total bytes). An engine that moves its bytes
    synchronously has done so at submit; io_uring has queued its transfers on the ring and
    moves them at complete. Completed when freed if complete() was not called."""
    cdef _Handle handle
    cdef _Batch batch
    cdef object out
    cdef dm_io io
    cdef bint done

    def complete(self):
        """Wait for the read and end it: (out, total bytes)."""
        cdef dm_err e
        cdef int rc
        if self.done:
            raise ValueError(f"the read of {self.handle.path} is already completed")
        self.done = True
        self.handle.pending -= 1
        with nogil:
            rc = self.handle.ops.complete(self.handle.hp, &self.io, &e)
        CHK(rc, &e)
        return self.out, self.io.total

    def __dealloc__(self):
        cdef dm_err e
        if not self.done and self.handle is not None:
            self.handle.pending -= 1
            self.handle.ops.complete(self.handle.hp, &self.io, &e)


cdef class _RangeFile(_Handle):
    """A file read and written as byte ranges (POSIX, STDIO, MPI-IO, io_uring): read, readv,
    submit_readv and writev, each range cut into transfers of at most xfer bytes (0: no cut) by
    the engine (the one transfer loop, csrc/engines/transfer.c, or io_uring's queue)."""

    cdef size_t _out_align(self):
        return 64

    def readv(self, offsets, lengths, *, int64_t xfer=0, out=None, bint exact=False,
              bint per_range=False, bint discard=False):
        """Read the ranges into out (packed one after another; allocated, aligned, if None).
        Returns (out, total bytes) or, with per_range, (out, array of bytes per range); with
        exact a range cut short by the end of the file raises ShortReadError. With discard the
        bytes are not kept: every transfer lands at the start of out, which needs to hold the
        largest transfer only (a range, or xfer bytes)."""
        cdef int64_t total = 0
        self._check()
        offs = _i64(offsets)
        lens = _i64(lengths)
        out = _out(_widest(lens, xfer) if discard else _sum(lens), out, self._out_align())
        cdef _Batch b = _batch(offs, lens, out, True, 1, _widest(lens, xfer) if discard else -1)
        cdef cnp.ndarray got = np.zeros(b.off.shape[0], dtype=np.int64) if per_range else None
        self._io(DM_OP_READ, b, xfer, <int64_t *>got.data if per_range else NULL, exact,
                 &total, discard)
        return (out, got) if per_range else (out, total)

    def submit_readv(self, offsets, lengths, *, int64_t xfer=0, out=None):
        """Submit a read of the ranges into out (as readv) and return at once, the read
        pending: its PendingIO's complete() waits for it. The file cannot be closed while a
        read of it is pending."""
        cdef dm_err e
        cdef int rc
        self._check()
        offs = _i64(offsets)
        lens = _i64(lengths)
        out = _out(_sum(lens), out, self._out_align())
        cdef PendingIO p = PendingIO()
        p.batch = _batch(offs, lens, out, True)
        p.out = out
        _io_of(&p.io, DM_OP_READ, p.batch, xfer, NULL, False, False)
        with nogil:
            rc = self.ops.submit(self.ops, self.hp, &p.io, &e)
        CHK(rc, &e)
        p.handle = self
        self.pending += 1
        return p

    def read(self, int64_t offset, int64_t length, *, int64_t xfer=0):
        """Bytes at [offset, offset+length) (fewer at EOF) as a uint8 array."""
        out, total = self.readv([offset], [length], xfer=xfer)
        return out[:total]

    def writev(self, offsets, lengths, buf, *, int64_t xfer=0):
        """Write the ranges from buf (packed one after another); returns the bytes written."""
        cdef int64_t total = 0
        self._check()
        self._io(DM_OP_WRITE, _batch(offsets, lengths, buf, False), xfer, NULL, False, &total)
        return total

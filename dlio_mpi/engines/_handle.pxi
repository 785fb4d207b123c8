# The base classes of the engines' open files, included by _engines.pyx.


cdef class _Handle:
    """What every engine's open file shares: its path, file id and op log, the engine's table
    of operations (read-ahead reads any handle through it), a context manager, close(), the
    closed check and sync(data_only=False). An engine implements _close and _sync."""
    cdef bint is_open
    cdef OpLog log
    cdef readonly object path
    cdef readonly int32_t file_id
    cdef const dm_engine_ops *ops
    cdef void *hp

    cdef _init(self, path, int32_t file_id, OpLog oplog, const dm_engine_ops *ops, void *hp):
        self.path = os.fspath(path)
        self.file_id = file_id
        self.log = oplog
        self.ops = ops
        self.hp = hp

    cdef int _close(self, dm_err *e) noexcept nogil:
        return 0

    cdef int _sync(self, bint data_only, dm_err *e) noexcept nogil:
        return 0

    cdef int _check(self) except -1:
        if not self.is_open:
            raise ValueError(f"I/O on closed file {self.path}")
        return 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def inflight(self):
        """Read-ahead segments of this file queued or being read."""
        if self.hp == NULL or self.ops == NULL:
            return 0
        return dm_inflight_count(self.ops.inflight(self.hp))

    def close(self):
        """Close the file (collective for MPI-IO and HDF5 through the MPI-IO driver), once no
        read-ahead segment of it is queued or being read (waits for them: a thread must not
        read through a descriptor closed, or reused by another open, under it)."""
        cdef dm_err e
        if self.is_open:
            with nogil:
                dm_inflight_wait(self.ops.inflight(self.hp))
            self.is_open = False
            with nogil:
                CHK(self._close(&e), &e)

    def sync(self, bint data_only=False):
        """Make the written bytes durable, logged as its own operation: fsync (fdatasync with
        data_only) for POSIX, fflush then fsync (fdatasync) for STDIO, the collective
        MPI_File_sync for MPI-IO, H5Fflush for HDF5 (data_only applies to POSIX and STDIO)."""
        cdef dm_err e
        self._check()
        with nogil:
            CHK(self._sync(data_only, &e), &e)


cdef class _RangeFile(_Handle):
    """A file read and written as byte ranges (POSIX, STDIO, MPI-IO): read, readv and writev,
    each range cut into transfers of at most xfer bytes (0: no cut) by the one transfer loop
    (csrc/engines/transfer.c). An engine implements _transfer, its transfers of an operation."""

    cdef size_t _out_align(self):
        return 64

    cdef dm_transfer _transfer(self, int op, int64_t xfer) noexcept nogil:
        cdef dm_transfer t
        memset(&t, 0, sizeof(t))
        return t

    cdef int _ranges(self, int op, _Batch b, int64_t xfer, int64_t *got, bint exact,
                     int64_t *total, bint discard=False) except -1:
        cdef dm_err e
        cdef dm_transfer t = self._transfer(op, xfer)
        if t.move == NULL:
            raise TypeError(f"{type(self).__name__} has no transfers")
        t.discard = discard
        with nogil:
            CHK(dm_transfer_ranges(&t, b.off.shape[0], <int64_t *>b.off.data,
                                   <int64_t *>b.ln.data, <char *>b.view.buf, got, exact, total,
                                   &e), &e)
        return 0

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
        self._ranges(DM_OP_READ, b, xfer, <int64_t *>got.data if per_range else NULL, exact,
                     &total, discard)
        return (out, got) if per_range else (out, total)

    def read(self, int64_t offset, int64_t length, *, int64_t xfer=0):
        """Bytes at [offset, offset+length) (fewer at EOF) as a uint8 array."""
        out, total = self.readv([offset], [length], xfer=xfer)
        return out[:total]

    def writev(self, offsets, lengths, buf, *, int64_t xfer=0):
        """Write the ranges from buf (packed one after another); returns the bytes written."""
        cdef int64_t total = 0
        self._check()
        self._ranges(DM_OP_WRITE, _batch(offsets, lengths, buf, False), xfer, NULL, False,
                     &total)
        return total

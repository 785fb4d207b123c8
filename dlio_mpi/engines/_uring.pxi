# UringFile, included by _engines.pyx.

URING_AVAILABLE = bool(dm_uring_available())


cdef class UringFile(_RangeFile):
    """A file read and written through an io_uring of its own (liburing): up to `depth`
    transfers in flight, each range cut into transfers of at most xfer bytes, submitted and
    completed apart. The file is opened and closed as POSIX opens it. Raises EngineError at
    open in a build without liburing (URING_AVAILABLE)."""
    cdef dm_uring h

    def __cinit__(self, path, mode="r", *, int depth=32, int32_t file_id=0, OpLog oplog=None):
        cdef dm_err e
        cdef int flags = _mode_flags(mode)
        cdef bytes p = _path(path)
        cdef const char *cp = p
        cdef dm_oplog *L = _log_of(oplog)
        self._init(path, file_id, oplog, &dm_uring_ops, &self.h)
        with nogil:
            CHK(dm_uring_open(&self.h, cp, flags, depth, file_id, L, &e), &e)
        self.is_open = True

    def __dealloc__(self):
        cdef dm_err e
        if self.is_open:
            dm_uring_close(&self.h, &e)

    @property
    def depth(self):
        return self.h.depth

    cdef int _close(self, dm_err *e) noexcept nogil:
        return dm_uring_close(&self.h, e)

    cdef int _sync(self, bint data_only, dm_err *e) noexcept nogil:
        return dm_posix_sync(&self.h.file, data_only, e)

    cdef int _ranges(self, int op, _Batch b, int64_t xfer, int64_t *got, bint exact,
                     int64_t *total, bint discard=False) except -1:
        cdef dm_err e
        cdef int writing = op == DM_OP_WRITE
        with nogil:
            CHK(dm_uring_ranges(&self.h, b.off.shape[0], <int64_t *>b.off.data,
                                <int64_t *>b.ln.data, xfer, <char *>b.view.buf, discard,
                                writing, got, exact, total, &e), &e)
        return 0

    def size(self):
        cdef dm_err e
        cdef int64_t s = 0
        self._check()
        CHK(dm_posix_size(&self.h.file, &s, &e), &e)
        return s

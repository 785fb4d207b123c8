# StdioFile, included by _engines.pyx.


cdef class StdioFile(_RangeFile):
    """A file through STDIO streams (fopen/fseeko/fread/fwrite) with a settable buffer size
    (bufsize=0 keeps the C library's default)."""
    cdef dm_stdio h

    def __cinit__(self, path, mode="r", *, size_t bufsize=0, int32_t file_id=0,
                  OpLog oplog=None, bint direct=False):
        cdef dm_err e
        cdef int flags = _mode_flags(mode) | (DM_O_DIRECT if direct else 0)
        cdef bytes p = _path(path)
        cdef const char *cp = p
        cdef dm_oplog *L = _log_of(oplog)
        self._init(path, file_id, oplog, &dm_stdio_ops, &self.h)
        with nogil:
            CHK(dm_stdio_open(&self.h, cp, flags, bufsize, file_id, L, &e), &e)
        self.is_open = True

    def __dealloc__(self):
        cdef dm_err e
        if self.is_open:
            dm_stdio_close(&self.h, &e)

    cdef int _close(self, dm_err *e) noexcept nogil:
        return dm_stdio_close(&self.h, e)

    cdef int _sync(self, bint data_only, dm_err *e) noexcept nogil:
        return dm_stdio_sync(&self.h, data_only, e)

    cdef dm_transfer _transfer(self, int op, int64_t xfer) noexcept nogil:
        return dm_stdio_transfer(&self.h, op, xfer)

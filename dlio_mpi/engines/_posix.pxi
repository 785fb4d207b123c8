# PosixFile, included by _engines.pyx.


cdef class PosixFile(_RangeFile):
    """A file through POSIX: buffered pread/pwrite, O_DIRECT (direct=True) or mmap reads
    (mmap=True). advice: None or a os.POSIX_FADV_* value applied to the whole file at open."""
    cdef dm_posix h

    def __cinit__(self, path, mode="r", *, bint direct=False, bint mmap=False, advice=None,
                  int32_t file_id=0, OpLog oplog=None):
        cdef dm_err e
        cdef int flags = _mode_flags(mode) | (DM_O_DIRECT if direct else 0)
        cdef int adv = -1 if advice is None else int(advice)
        cdef bytes p = _path(path)
        cdef const char *cp = p
        cdef dm_oplog *L = _log_of(oplog)
        self._init(path, file_id, oplog, &dm_posix_ops, &self.h)
        with nogil:
            CHK(dm_posix_open(&self.h, cp, flags, 1 if mmap else 0, adv, file_id, L, &e), &e)
        self.is_open = True

    def __dealloc__(self):
        cdef dm_err e
        if self.is_open:
            dm_posix_close(&self.h, &e)

    cdef int _close(self, dm_err *e) noexcept nogil:
        return dm_posix_close(&self.h, e)

    cdef int _sync(self, bint data_only, dm_err *e) noexcept nogil:
        return dm_posix_sync(&self.h, data_only, e)

    cdef size_t _out_align(self):
        return max(self.h.mem_align, 64)

    cdef dm_transfer _transfer(self, int op, int64_t xfer) noexcept nogil:
        return dm_posix_transfer(&self.h, op, xfer)

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
        CHK(dm_posix_size(&self.h, &s, &e), &e)
        return s

    def fadvise(self, int64_t offset, int64_t length, int advice):
        cdef dm_err e
        self._check()
        CHK(dm_posix_fadvise(&self.h, offset, length, advice, &e), &e)

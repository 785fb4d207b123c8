# PosixFile, included by _engines.pyx.


cdef class PosixFile(_RangeFile):
    """A file through POSIX: buffered pread/pwrite, O_DIRECT (direct=True) or mmap reads
    (mmap=True). advice: None or a os.POSIX_FADV_* value applied to the whole file at open.
    deferred (reading): not opened here but by the read-ahead thread that reads it (ReadAhead)."""
    cdef dm_posix h

    def __cinit__(self, path, mode="r", *, bint direct=False, bint mmap=False, advice=None,
                  int32_t file_id=0, OpLog oplog=None, bint deferred=False):
        cdef dm_open_args a
        memset(&a, 0, sizeof(a))
        self.deferred = _deferrable(deferred, mode, path)
        a.flags = _mode_flags(mode) | (DM_O_DIRECT if direct else 0)
        a.mmap_mode = 1 if mmap else 0
        a.advice = -1 if advice is None else int(advice)
        self._init(path, file_id, oplog, &dm_posix_ops, &self.h)
        self._open(&a)

    cdef size_t _out_align(self):
        return max(self.h.mem_align, 64)

    @property
    def alignment(self):
        """(memory, offset) alignment required in O_DIRECT mode, (1, 1) otherwise."""
        if self.h.flags & DM_O_DIRECT:
            return self.h.mem_align, self.h.off_align
        return 1, 1

    def fadvise(self, int64_t offset, int64_t length, int advice):
        cdef dm_err e
        self._check()
        CHK(dm_posix_fadvise(&self.h, offset, length, advice, &e), &e)

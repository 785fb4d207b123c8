# UringFile, included by _engines.pyx.

URING_AVAILABLE = bool(dm_uring_available())


cdef class UringFile(_RangeFile):
    """A file read and written through an io_uring of its own (liburing): up to `depth`
    transfers in flight, each range cut into transfers of at most xfer bytes, submitted and
    completed apart. The file is opened and closed as POSIX opens it. Raises EngineError at
    open in a build without liburing (URING_AVAILABLE)."""
    cdef dm_uring h

    def __cinit__(self, path, mode="r", *, int depth=32, int32_t file_id=0, OpLog oplog=None):
        cdef dm_open_args a
        memset(&a, 0, sizeof(a))
        a.flags = _mode_flags(mode)
        a.depth = depth
        self._init(path, file_id, oplog, &dm_uring_ops, &self.h)
        self._open(&a)

    @property
    def depth(self):
        return self.h.depth

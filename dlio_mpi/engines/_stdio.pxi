# StdioFile, included by _engines.pyx.


cdef class StdioFile(_RangeFile):
    """A file through STDIO streams (fopen/fseeko/fread/fwrite) with a settable buffer size
    (bufsize=0 keeps the C library's default). deferred (reading): not opened here but by the
    read-ahead thread that reads it (ReadAhead)."""
    cdef dm_stdio h

    def __cinit__(self, path, mode="r", *, size_t bufsize=0, int32_t file_id=0,
                  OpLog oplog=None, bint direct=False, bint deferred=False):
        cdef dm_open_args a
        memset(&a, 0, sizeof(a))
        self.deferred = _deferrable(deferred, mode, path)
        a.flags = _mode_flags(mode) | (DM_O_DIRECT if direct else 0)
        a.bufsize = bufsize
        self._init(path, file_id, oplog, &dm_stdio_ops, &self.h)
        self._open(&a)

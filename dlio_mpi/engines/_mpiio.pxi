# MPIFile, included by _engines.pyx.


cdef class MPIFile(_RangeFile):
    """A file through MPI-IO, opened collectively on comm with info hints (a dict such as
    {"romio_cb_read": "enable", "cb_buffer_size": 16777216}). readv and writev are independent
    (one MPI_File_read_at / write_at per transfer); read_all and write_all collective."""
    cdef dm_mpiio h
    cdef readonly object comm

    def __cinit__(self, MPI.Comm comm, path, mode="r", *, hints=None, int32_t file_id=0,
                  OpLog oplog=None):
        cdef dm_open_args a
        cdef _Hints hi = _Hints(hints)
        memset(&a, 0, sizeof(a))
        a.flags = _mode_flags(mode)
        a.comm = comm.ob_mpi
        a.nhints = hi.n
        a.keys = hi.keys
        a.vals = hi.vals
        self._init(path, file_id, oplog, &dm_mpiio_ops, &self.h)
        self.comm = comm
        self._open(&a)

    def read_all(self, offsets, lengths, *, out=None):
        """Collective: every range in one MPI_File_read_at_all. Every rank of the communicator
        must call it (with no ranges if it has none). Returns (out, total)."""
        cdef dm_err e
        cdef int64_t total = 0
        self._check()
        offs = _i64(offsets)
        lens = _i64(lengths)
        out = _out(_sum(lens), out, 64)
        cdef _Batch b = _batch(offs, lens, out, True)
        with nogil:
            CHK(dm_mpiio_read_all(&self.h, b.off.shape[0], <int64_t *>b.off.data,
                                  <int64_t *>b.ln.data, <char *>b.view.buf, &total, &e), &e)
        return out, total

    def write_at_all(self, int64_t offset, buf):
        """Collective: buf (all of it) at offset in one MPI_File_write_at_all, without a file
        view (dm_mpiio_write_at_all). Every rank calls it, an empty buf if it has nothing."""
        cdef dm_err e
        cdef int64_t total = 0
        cdef Py_buffer v
        self._check()
        PyObject_GetBuffer(buf, &v, PyBUF_SIMPLE)
        try:
            with nogil:
                CHK(dm_mpiio_write_at_all(&self.h, offset, v.len, <char *>v.buf, &total, &e),
                    &e)
        finally:
            PyBuffer_Release(&v)
        return total

    def read_at_all(self, int64_t offset, out):
        """Collective: len(out) bytes at offset into out in one MPI_File_read_at_all, without
        a file view. Returns the bytes MPI reports read (ompio reports a read across the end of
        the file as whole: check the size first)."""
        cdef dm_err e
        cdef int64_t total = 0
        cdef Py_buffer v
        self._check()
        PyObject_GetBuffer(out, &v, PyBUF_WRITABLE)
        try:
            with nogil:
                CHK(dm_mpiio_read_at_all(&self.h, offset, v.len, <char *>v.buf, &total, &e),
                    &e)
        finally:
            PyBuffer_Release(&v)
        return total

    def write_all(self, offsets, lengths, buf):
        """Collective write of non-overlapping ranges in one MPI_File_write_at_all."""
        cdef dm_err e
        cdef int64_t total = 0
        self._check()
        cdef _Batch b = _batch(offsets, lengths, buf, False)
        with nogil:
            CHK(dm_mpiio_write_all(&self.h, b.off.shape[0], <int64_t *>b.off.data,
                                   <int64_t *>b.ln.data, <char *>b.view.buf, &total, &e), &e)
        return total

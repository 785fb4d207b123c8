# H5Dataset, included by _engines.pyx.


cdef int _driver(driver) except -1:
    if driver == "mpio":
        return DM_H5_MPIO
    if driver == "sec2":
        return DM_H5_SEC2
    if driver == "core":
        return DM_H5_CORE
    raise ValueError(f"unknown HDF5 driver {driver!r}: use 'mpio', 'sec2' or 'core'")


cdef class H5Dataset(_Handle):
    """One dataset of an HDF5 file, through the MPI-IO driver ("mpio", collective or
    independent transfers), sec2, or "core" (reading: the whole file read at open, as
    libhdf5's core driver reads it, and the reads served from memory). A sample is a row (index along dimension 0). With create
    (the dataset's shape), the file is created: a new one with exclusive=True (failing when any
    entry, a link included, holds the name), else an existing file is truncated. deferred
    (reading, independent transfers on the rank's own): not opened here but by the read-ahead
    thread that reads it (ReadAhead), its rows of row_bytes each. dataset_per_read (reading):
    the dataset opened anew before each read, libhdf5's chunk cache then empty (a program
    indexing h5py's f["x"][i] for each sample). chunk_cache=False (reading): the datasets
    opened with no chunk cache (h5py's File(rdcc_nbytes=0)), a selection inside a chunk read
    from the file alone. fields (reading): the names of datasets of as
    many rows that hold further fields of every row (an image's label): each read of rows reads
    the same rows of each after, into out after the rows, and row_bytes counts them."""
    cdef dm_h5 h
    cdef readonly object name

    def __cinit__(self, path, name, *, driver="mpio", comm=None, bint collective=False,
                  mode="r", hints=None, int32_t file_id=0, OpLog oplog=None, create=None,
                  chunk_rows=0, libver="earliest", bint exclusive=False, bint deferred=False,
                  int64_t row_bytes=0, bint dataset_per_read=False, fields=(),
                  bint chunk_cache=True):
        cdef dm_open_args a
        cdef bytes n = str(name).encode()
        cdef _Hints hi = _Hints(hints)
        cdef _Hints fi = _Hints({str(f): "" for f in fields})
        cdef hsize_t dims[8]
        memset(&a, 0, sizeof(a))
        a.driver = _driver(driver)
        a.dataset = n
        a.comm = MPI_COMM_SELF if comm is None else (<MPI.Comm>comm).ob_mpi
        a.collective = collective
        a.flags = DM_O_WRITE if mode != "r" else DM_O_READ
        a.nhints = hi.n
        a.keys = hi.keys
        a.vals = hi.vals
        if fields and (mode != "r" or create is not None):
            raise ValueError(f"{path}: fields beside dataset {name} are read only")
        if fi.n != len(fields) or fi.n > 8:
            raise ValueError(f"{path}: fields {list(fields)!r}: up to 8, each named once")
        a.nfields = fi.n
        a.fields = fi.keys
        if libver not in ("earliest", "latest"):
            raise ValueError(f"unknown HDF5 libver {libver!r}: use 'earliest' or 'latest'")
        if create is not None:
            a.ndims = len(create)
            if a.ndims < 1 or a.ndims > 8:
                raise ValueError(f"dataset shape {create!r} must have 1 to 8 dimensions")
            for i in range(a.ndims):
                dims[i] = create[i]
            a.dims = dims
            a.chunk_rows = chunk_rows
            a.latest = 1 if libver == "latest" else 0
            a.exclusive = exclusive
        self._init(path, file_id, oplog, &dm_h5_ops, &self.h)
        self.name = name
        if dataset_per_read and (collective or mode != "r"):
            raise ValueError(f"{path}: a dataset opened for each read is read independently")
        self.h.dset_per_read = dataset_per_read
        if not chunk_cache and mode != "r":
            raise ValueError(f"{path}: a dataset without a chunk cache is read only")
        self.h.no_chunk_cache = not chunk_cache
        if deferred:
            if collective or create is not None or row_bytes <= 0:
                raise ValueError(f"{path}: a deferred HDF5 dataset is read by its rank alone "
                                 "and needs its row bytes")
            self.deferred = _deferrable(deferred, mode, path)
            self.h.row_bytes = row_bytes    # its span in a read-ahead buffer, before the open
        self._open(&a, (n, hi, fi))

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
        cdef int64_t total = 0
        self._check()
        st = _i64(starts)
        ct = _i64(counts)
        out = _out(_sum(ct) * self.h.row_bytes, out, 64)
        cdef _Batch b = _batch(st, ct, out, True, self.h.row_bytes)
        self._io(DM_OP_READ, b, 0, NULL, False, &total)
        return out, total

    def read_box(self, start, count, *, out=None):
        """The box [start[d], start[d]+count[d]) of every dimension in one H5Dread (C order
        into out), collective if the dataset was opened so. Every count 0 is a box of nothing:
        a collective read of it joins the other ranks' calls. Returns (out, bytes)."""
        cdef dm_err e
        cdef int64_t total = 0
        cdef int rc = 0
        self._check()
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
        CHK(rc, &e)
        return out, total

    def write_rows(self, starts, counts, buf):
        cdef int64_t total = 0
        self._check()
        st = _i64(starts)
        ct = _i64(counts)
        cdef _Batch b = _batch(st, ct, buf, False, self.h.row_bytes)
        self._io(DM_OP_WRITE, b, 0, NULL, False, &total)
        return total


def hdf5_unclosed():
    """How many HDF5 files this process could not close (their metadata could not be written)
    while HDF5 still holds their ids: the process must then end without MPI_Finalize, whose
    HDF5 shutdown would close them again from freed memory (HDF5 1.10)."""
    return dm_h5_unclosed()

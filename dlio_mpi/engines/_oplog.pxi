# OpLog, included by _engines.pyx: the per-rank log of every operation the engines issue.


cdef class OpLog:
    """Per-rank log of every operation the engines issue: start and duration (ns, from the
    log's origin on CLOCK_MONOTONIC), offset, bytes moved, file id, op and interface.

    Storage is preallocated for `capacity` entries; operations past it are still counted (count,
    bytes, latency histogram) in `overflow`. Call finalize() (which converts timestamps in place)
    before reading arrays(); the arrays are views of the C storage, valid until reset()."""
    cdef dm_oplog *L

    def __cinit__(self, size_t capacity=1 << 20):
        cdef dm_err e
        self.L = dm_oplog_create(capacity, &e)
        if self.L == NULL:
            raise_err(&e)

    def __dealloc__(self):
        if self.L != NULL:
            dm_oplog_free(self.L)
            self.L = NULL

    @property
    def capacity(self):
        return self.L.cap

    @property
    def count(self):
        """Entries held (at most capacity)."""
        return min(self.L.n, self.L.cap)

    @property
    def overflow(self):
        """Operations that did not fit and were only counted."""
        return dm_oplog_overflow(self.L)

    @property
    def origin_mono_ns(self):
        return self.L.mono0_ns

    @property
    def enabled(self):
        return bool(self.L.enabled)

    @enabled.setter
    def enabled(self, value):
        self.L.enabled = 1 if value else 0

    def overflow_totals(self, iface=None):
        """{op name: (count, bytes)} of the operations past capacity, of one interface name or
        all."""
        out = {}
        for f in range(len(IFACES)):
            if iface is not None and IFACES[f] != iface:
                continue
            for k in range(len(OPS)):
                if self.L.over_count[f][k]:
                    c, b = out.get(OPS[k], (0, 0))
                    out[OPS[k]] = (c + self.L.over_count[f][k], b + self.L.over_bytes[f][k])
        return out

    def finalize(self):
        """Convert the entries recorded so far to nanoseconds (call with no I/O in flight)."""
        with nogil:
            dm_oplog_finalize(self.L)

    def reset(self):
        """Forget every entry and the overflow counts (invalidates arrays from arrays())."""
        self.L.n = 0
        self.L.concurrent = 0
        dm_oplog_reset(self.L)

    cdef _view(self, void *ptr, int typenum, cnp.npy_intp n):
        cdef cnp.npy_intp dims[1]
        dims[0] = n
        arr = cnp.PyArray_SimpleNewFromData(1, dims, typenum, ptr)
        Py_INCREF(self)
        cnp.PyArray_SetBaseObject(arr, self)
        arr.flags.writeable = False
        return arr

    def arrays(self):
        """Zero-copy numpy views of the finalized entries: start, dur, offset, bytes, file, op,
        iface."""
        self.finalize()
        cdef cnp.npy_intp n = self.L.nconv
        return {
            "start": self._view(self.L.start, cnp.NPY_INT64, n),
            "dur": self._view(self.L.dur, cnp.NPY_INT64, n),
            "offset": self._view(self.L.offset, cnp.NPY_INT64, n),
            "bytes": self._view(self.L.bytes, cnp.NPY_INT64, n),
            "file": self._view(self.L.file, cnp.NPY_INT32, n),
            "op": self._view(self.L.op, cnp.NPY_UINT8, n),
            "iface": self._view(self.L.iface, cnp.NPY_UINT8, n),
        }

    def histogram(self, op=None, iface=None):
        """Latency histogram (uint64 counts per bucket, see hist_bucket_bounds) of the finalized
        entries and overflow, for one op and/or interface name, or all."""
        self.finalize()
        cdef int o = -1 if op is None else OPS.index(op)
        cdef int i = -1 if iface is None else IFACES.index(iface)
        cdef cnp.ndarray[cnp.uint64_t, ndim=1] h = np.zeros(DM_HIST_BUCKETS, dtype=np.uint64)
        with nogil:
            dm_oplog_histogram(self.L, o, i, <uint64_t *>h.data)
        return h


cdef dm_oplog *_log_of(OpLog log):
    return log.L if log is not None else NULL

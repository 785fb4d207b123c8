# ReadAhead, included by _engines.pyx: C threads reading requests through the engine table.

cdef int _engine_of(handle, const dm_engine_ops **ops, void **hp) except -1:
    """The engine table and C handle of an open engine object."""
    if not isinstance(handle, _Handle):
        raise TypeError("read-ahead takes a PosixFile, StdioFile, MPIFile or H5Dataset")
    (<_Handle>handle)._check()
    ops[0] = (<_Handle>handle).ops
    hp[0] = (<_Handle>handle).hp
    return 0


cdef int _segment_of(handle, dm_ra_seg *seg, uintptr_t key) except -1:
    """A segment's engine table and C handle, of an open engine object or of a deferred one
    (which the reading thread opens and closes: its open's arguments); key non-zero: read after
    the earlier segments of that key."""
    cdef _Handle h
    if not isinstance(handle, _Handle):
        raise TypeError("read-ahead takes a PosixFile, StdioFile, MPIFile or H5Dataset")
    h = <_Handle>handle
    seg.open = NULL
    if h.deferred:
        if h.taken:
            raise ValueError(f"{h.path}: a deferred handle is read by one segment")
        seg.open = &h.deferred_args
        h.taken = True          # its thread's from now on: in no other segment
    else:
        h._check()
    seg.ops = h.ops
    seg.handle = h.hp
    seg.key = key
    seg.ordered = 1 if key else 0
    return 0


cdef class ReadAhead:
    """C threads executing a FIFO queue of read requests into a ring of `depth` aligned
    buffers of slot_bytes each. A request is one handle's ranges (submit) or a batch of
    segments, each one handle's ranges (submit_batch); it is handed over whole. submit returns
    a ticket; wait(ticket) gives a read-only view of the request's slot, valid until
    release(ticket). With keep=False the bytes are not kept, for a reader whose steps discard
    what they read: each thread reads into its own buffer of slot_bytes, reused, every transfer
    at its start (HDF5: a segment's rows packed), so that slot_bytes is the largest transfer
    (HDF5: the most a segment spans), and wait gives no data (None): `threads` buffers instead
    of `depth`.

    Handles: PosixFile, StdioFile and MPIFile ranges, rows (offsets=starts, lengths=counts) of
    an independent H5Dataset. A StdioFile's segments are read one at a time, in order; an
    MPIFile's or an MPI-IO H5Dataset's need MPI_THREAD_MULTIPLE (the caller's to check:
    mpi4py asks for it by default)."""
    cdef dm_readahead *ra
    cdef dict handles
    cdef dm_ra_seg *segs
    cdef size_t segcap
    cdef readonly int threads, depth
    cdef readonly bint keep

    def __cinit__(self, int threads=1, int depth=2, size_t slot_bytes=1 << 20,
                  size_t align=4096, bint keep=True):
        cdef dm_err e
        self.handles = {}
        self.threads = threads
        self.depth = depth
        self.keep = keep
        self.segs = NULL
        self.segcap = 0
        with nogil:
            self.ra = dm_ra_create(threads, depth, slot_bytes, align, keep, &e)
        if self.ra == NULL:
            raise_err(&e)

    def __dealloc__(self):
        if self.ra != NULL:
            with nogil:
                dm_ra_free(self.ra)
            self.ra = NULL
        free(self.segs)
        self.segs = NULL

    def close(self):
        """Finish the queued requests and stop the threads."""
        if self.ra != NULL:
            with nogil:
                dm_ra_free(self.ra)
            self.ra = NULL
        self.handles.clear()

    @property
    def slot_bytes(self):
        return dm_ra_slot_bytes(self.ra)

    def thread_buffer(self, int i):
        """Without keep: a copy of thread i's buffer (slot_bytes), where its last transfer
        landed (for inspection)."""
        if self.ra == NULL:
            raise ValueError("read-ahead is closed")
        cdef const char *p = dm_ra_thread_buffer(self.ra, i)
        if p == NULL:
            raise ValueError(f"no thread buffer {i}: {self.threads} threads"
                             + (", requests kept in their slots" if self.keep else ""))
        return p[:dm_ra_slot_bytes(self.ra)]

    cdef int _reserve(self, size_t n) except -1:
        cdef dm_ra_seg *p
        if n > self.segcap:
            p = <dm_ra_seg *>realloc(self.segs, n * sizeof(dm_ra_seg))
            if p == NULL:
                raise MemoryError()
            self.segs, self.segcap = p, n
        return 0

    cdef int64_t _submit(self, size_t nseg, cnp.ndarray off, cnp.ndarray ln) except -2:
        cdef dm_err e
        cdef int64_t t
        with nogil:
            t = dm_ra_submit(self.ra, nseg, self.segs, <int64_t *>off.data,
                             <int64_t *>ln.data, &e)
        if t < 0:
            raise_err(&e)
        return t

    def submit(self, handle, offsets, lengths, *, int64_t xfer=0, double busy=0.0):
        """Queue ranges of one handle; the worker then spends busy seconds (emulated
        preprocessing) before the request is done. Blocks while the ring's next slot is
        still held."""
        if self.ra == NULL:
            raise ValueError("read-ahead is closed")
        cdef cnp.ndarray off = _i64(offsets)
        cdef cnp.ndarray ln = _i64(lengths)
        if off.shape[0] != ln.shape[0]:
            raise ValueError(f"{off.shape[0]} offsets but {ln.shape[0]} lengths")
        self._reserve(1)
        _segment_of(handle, &self.segs[0], 0)
        self.segs[0].n = off.shape[0]
        self.segs[0].xfer = xfer
        self.segs[0].busy_ns = <int64_t>(busy * 1e9)
        t = self._submit(1, off, ln)
        self.handles[t] = handle   # keep the handle alive while its request is queued
        return t

    def submit_batch(self, handles, counts, offsets, lengths, *, int64_t xfer=0, busy=None,
                     keys=None):
        """Queue one request of len(handles) segments: segment k reads counts[k] ranges of
        handles[k], the next ones of offsets/lengths, then spends busy[k] seconds (emulated
        preprocessing; none when busy is None). keys[k] > 0 (a file's number + 1, say): read
        after every earlier segment of that key, one at a time. A deferred handle is opened by
        the thread that reads its segment and closed after it, and may be in one segment only
        (a file opened for each sample: give its segments the file's key, so that one is open
        at a time). Blocks while the ring's next slot is still held."""
        if self.ra == NULL:
            raise ValueError("read-ahead is closed")
        cdef cnp.ndarray off = _i64(offsets)
        cdef cnp.ndarray ln = _i64(lengths)
        cdef Py_ssize_t k, nseg = len(handles), n = 0
        if off.shape[0] != ln.shape[0]:
            raise ValueError(f"{off.shape[0]} offsets but {ln.shape[0]} lengths")
        if len(counts) != nseg or (busy is not None and len(busy) != nseg) \
                or (keys is not None and len(keys) != nseg):
            raise ValueError(f"{nseg} handles, {len(counts)} counts"
                             + ("" if busy is None else f", {len(busy)} busy times")
                             + ("" if keys is None else f", {len(keys)} keys"))
        if keys is not None and any(k < 0 for k in keys):
            raise ValueError(f"read-ahead keys are 0 (none) or positive: {list(keys)}")
        self._reserve(nseg if nseg > 0 else 1)
        for k in range(nseg):
            _segment_of(handles[k], &self.segs[k], 0 if keys is None else keys[k])
            self.segs[k].n = counts[k]
            self.segs[k].xfer = xfer
            self.segs[k].busy_ns = 0 if busy is None else <int64_t>(busy[k] * 1e9)
            n += counts[k]
        if n != off.shape[0]:
            raise ValueError(f"counts add up to {n} ranges, {off.shape[0]} given")
        t = self._submit(nseg, off, ln)
        self.handles[t] = handles
        return t

    def wait(self, int64_t ticket):
        """Block until the request is done. Returns (view, total): a read-only uint8 view of the
        request's ranges packed one after another (as readv packs them; a range cut short by
        EOF leaves the rest of its place unset), valid until release() (None without keep), and
        the bytes read."""
        cdef dm_err e
        cdef char *buf = NULL
        cdef int64_t need = 0, total = 0
        if self.ra == NULL:
            raise ValueError("read-ahead is closed")
        with nogil:
            rc = dm_ra_wait(self.ra, ticket, &buf, &need, &total, &e)
        if rc != 0:
            self.release(ticket)
            CHK(rc, &e)
        if buf == NULL:
            return None, total
        cdef cnp.npy_intp dims[1]
        dims[0] = need
        arr = cnp.PyArray_SimpleNewFromData(1, dims, cnp.NPY_UINT8, buf)
        Py_INCREF(self)
        cnp.PyArray_SetBaseObject(arr, self)
        arr.flags.writeable = False
        return arr, total

    def segment_bytes(self, int64_t ticket, size_t nseg):
        """The bytes each of the nseg segments of a done request read (before release)."""
        cdef dm_err e
        cdef cnp.ndarray got = np.zeros(nseg, dtype=np.int64)
        CHK(dm_ra_segment_bytes(self.ra, ticket, nseg, <int64_t *>got.data, &e), &e)
        return got

    def boost(self, int nice):
        """Catching up: from now on the threads run at nice while the request waited for, or
        the one after the last released, is not read yet (0: never; set back at once). Raises
        OSError when the kernel refuses that nice value (the boost is then off). For the thread
        that waits for and releases the requests."""
        if self.ra == NULL:
            raise ValueError("read-ahead is closed")
        cdef int r = dm_ra_boost(self.ra, nice)
        if r < 0:
            raise OSError(-r, f"setpriority (nice {nice}): {os.strerror(-r)}")

    def release(self, int64_t ticket):
        """Give the ticket's slot back to the ring."""
        cdef dm_err e
        if self.ra == NULL:
            return
        with nogil:
            rc = dm_ra_release(self.ra, ticket, &e)
        self.handles.pop(ticket, None)
        CHK(rc, &e)

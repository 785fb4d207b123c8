# Argument conversion and small C helpers, included by _engines.pyx.

from dlio_mpi.run.oplog_format import IFACES, OPS

if len(OPS) != DM_OP_N or len(IFACES) != DM_IF_N:
    raise ImportError(f"dlio_mpi.run.oplog_format has {len(OPS)} operations and {len(IFACES)} "
                      f"interfaces, csrc/dm.h {DM_OP_N} and {DM_IF_N}: rebuild")
HIST_BUCKETS = DM_HIST_BUCKETS


cdef bytes _path(path):
    return os.fsencode(os.fspath(path))


cdef cnp.ndarray _i64(a):
    """a as a 1-D contiguous int64 array (itself when it already is one)."""
    if (isinstance(a, np.ndarray) and (<cnp.ndarray>a).dtype == np.int64 and
            (<cnp.ndarray>a).ndim == 1 and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>a)):
        return <cnp.ndarray>a
    return np.ascontiguousarray(np.asarray(a, dtype=np.int64).reshape(-1))


cdef int64_t _sum(cnp.ndarray a):
    cdef int64_t s = 0
    cdef int64_t *p = <int64_t *>a.data
    cdef Py_ssize_t i
    for i in range(a.shape[0]):
        s += p[i]
    return s


cdef int64_t _widest(cnp.ndarray a, int64_t xfer):
    """The largest transfer of ranges of lengths a cut into xfer pieces (0: no cut)."""
    cdef int64_t w = 0, n
    cdef int64_t *p = <int64_t *>a.data
    cdef Py_ssize_t i
    for i in range(a.shape[0]):
        n = p[i] if xfer <= 0 or p[i] < xfer else xfer
        if n > w:
            w = n
    return w


cdef class _Batch:
    """A request's offsets/lengths as int64 arrays and the buffer they are read into."""
    cdef cnp.ndarray off, ln
    cdef Py_buffer view
    cdef bint have_view

    def __cinit__(self):
        self.have_view = False

    def __dealloc__(self):
        if self.have_view:
            PyBuffer_Release(&self.view)


cdef _Batch _batch(offsets, lengths, buf, bint writable, int64_t scale=1, int64_t room=-1):
    """The request and its buffer, which must hold the ranges packed (times scale) or, with
    room >= 0, room bytes."""
    cdef _Batch b = _Batch()
    b.off = _i64(offsets)
    b.ln = _i64(lengths)
    if b.off.shape[0] != b.ln.shape[0]:
        raise ValueError(f"{b.off.shape[0]} offsets but {b.ln.shape[0]} lengths")
    cdef int64_t *op = <int64_t *>b.off.data
    cdef int64_t *lp = <int64_t *>b.ln.data
    cdef int64_t need = 0
    cdef Py_ssize_t i
    for i in range(b.ln.shape[0]):
        if op[i] < 0 or lp[i] < 0:
            raise ValueError(f"negative offset or length ({op[i]}, {lp[i]})")
        need += lp[i]
    need = need * scale if room < 0 else room
    PyObject_GetBuffer(buf, &b.view, PyBUF_WRITABLE if writable else PyBUF_SIMPLE)
    b.have_view = True
    if b.view.len < need:
        raise ValueError(f"buffer of {b.view.len} bytes is smaller than the {need} requested")
    return b


cdef _out(int64_t need, out, size_t align):
    if out is None:
        return aligned_empty(need, align)
    return out


cdef int _mode_flags(mode) except -1:
    if mode == "r":
        return DM_O_READ
    if mode == "r+":
        return DM_O_WRITE
    if mode == "w":
        return DM_O_WRITE | DM_O_CREATE | DM_O_TRUNC
    if mode == "a" or mode == "c":
        return DM_O_WRITE | DM_O_CREATE
    if mode == "x":
        return DM_O_WRITE | DM_O_CREATE | DM_O_EXCL
    raise ValueError(f"unknown mode {mode!r}: use 'r', 'r+', 'w' (create, truncate), "
                     "'c' (create, keep) or 'x' (a new file: fails when any entry, a link "
                     "included, holds the name)")


cdef class _Hints:
    """MPI_Info hints as C string arrays."""
    cdef int n
    cdef const char **keys
    cdef const char **vals
    cdef list keep

    def __cinit__(self, hints):
        items = [(str(k).encode(), str(v).encode()) for k, v in (hints or {}).items()]
        self.n = len(items)
        self.keep = items
        self.keys = <const char **>malloc(max(self.n, 1) * sizeof(char *))
        self.vals = <const char **>malloc(max(self.n, 1) * sizeof(char *))
        if self.keys == NULL or self.vals == NULL:
            raise MemoryError(f"no memory for {self.n} MPI-IO hints")
        for i, (k, v) in enumerate(items):
            self.keys[i] = k
            self.vals[i] = v

    def __dealloc__(self):
        free(self.keys)
        free(self.vals)


def aligned_empty(size_t nbytes, size_t align=4096):
    """A uint8 numpy array of nbytes whose data starts on an align-byte boundary."""
    raw = np.empty(nbytes + align, dtype=np.uint8)
    cdef size_t addr = raw.ctypes.data
    cdef size_t skip = (align - addr % align) % align
    return raw[skip:skip + nbytes]


def hist_bucket_bounds():
    """Lower bounds (ns) of the op-log histogram buckets; bucket b covers [lower[b], lower[b+1])."""
    return np.array([dm_hist_bucket_lower_ns(b) for b in range(DM_HIST_BUCKETS)], dtype=np.float64)


def hist_bucket(int64_t ns):
    return dm_hist_bucket(ns)


def thread_slice(double seconds):
    """Ask Linux's fair scheduler (EEVDF, 6.12 and later) for a time slice of `seconds` for
    the calling thread, its policy and nice value kept; 0 gives back the kernel's default. A
    short slice lets a woken thread take a core from threads with longer ones at once.
    Returns the slice the kernel then reports for the thread, in seconds (0.0 where it has
    none: Linux before 6.12), or raises OSError when it refused."""
    cdef int64_t r = dm_thread_slice(<uint64_t>(seconds * 1e9))
    if r < 0:
        raise OSError(<int>-r, f"sched_setattr (time slice of {seconds * 1e6:.0f} us): "
                      f"{os.strerror(<int>-r)}")
    return r * 1e-9


def thread_fifo_probe(int priority):
    """Whether the calling thread may run under SCHED_FIFO at priority: sets it and gives
    the thread its attributes back at once; raises OSError (EPERM without CAP_SYS_NICE or an
    RLIMIT_RTPRIO that allows it) when the kernel refuses."""
    cdef dm_sched_attr was
    cdef int r = dm_thread_fifo(priority, &was)
    if r < 0:
        raise OSError(-r, f"sched_setattr (SCHED_FIFO, priority {priority}): "
                      f"{os.strerror(-r)}")
    r = dm_thread_sched_restore(&was)
    if r < 0:
        raise OSError(-r, f"sched_setattr (the thread's own policy back): {os.strerror(-r)}")


def thread_nice_probe(int nice):
    """Whether the calling thread may run at nice: sets it and gives the thread its value back
    at once; raises OSError (EACCES without CAP_SYS_NICE or an RLIMIT_NICE that allows it) when
    the kernel refuses."""
    cdef int r = dm_thread_nice_probe(nice)
    if r < 0:
        raise OSError(-r, f"setpriority (nice {nice}): {os.strerror(-r)}")


def mono_ns():
    """CLOCK_MONOTONIC in ns, the clock of the op log's origin."""
    return dm_mono_ns()


def status_guard_arm(tmp, final, skip_if, body, watch_pid=0):
    """On SIGTERM or SIGINT, even while this process is inside a blocking call, write body to
    final (through tmp, then a rename) unless skip_if exists or (watch_pid > 0) process
    watch_pid is alive, then run the handler installed before (Python's). Call after Python's
    signal handlers are set."""
    cdef dm_err e
    cdef bytes t = _path(tmp), f = _path(final), k = _path(skip_if)
    cdef bytes b = body.encode() if isinstance(body, str) else bytes(body)
    CHK(dm_status_guard_arm(t, f, k, b, watch_pid, &e), &e)


def status_guard_peers(ranks, pids):
    """The other ranks on this host and their pids: the guard (armed by rank 0) names the one
    whose process is gone when the signal arrives, as the rank that died."""
    cdef dm_err e
    cdef cnp.ndarray r = np.ascontiguousarray(ranks, dtype=np.intc)
    cdef cnp.ndarray p = np.ascontiguousarray(pids, dtype=np.int_)
    if r.shape[0] != p.shape[0]:
        raise ValueError(f"{r.shape[0]} ranks but {p.shape[0]} pids")
    CHK(dm_status_guard_peers(<int>r.shape[0], <const int *>r.data, <const long *>p.data, &e),
        &e)


def status_guard_lock(path, record):
    """A lock file the armed guard removes on the signal while it still holds record (the
    text written into it); path "" forgets it."""
    cdef dm_err e
    cdef bytes pa = _path(path) if path else b""
    cdef bytes rec = record.encode()
    CHK(dm_status_guard_lock(pa, rec, &e), &e)


def status_guard_disarm():
    """The handlers from before status_guard_arm, and no status written on a signal."""
    dm_status_guard_disarm()


def dio_alignment(path):
    """(memory alignment, offset alignment, source) for O_DIRECT on path's file system: from
    statx STATX_DIOALIGN where the kernel reports it ("statx"), else the logical block size of
    the device ("blocksize")."""
    cdef dm_err e
    cdef size_t mem = 0, off = 0
    cdef const char *src = NULL
    cdef bytes p = _path(path)
    cdef const char *cp = p
    with nogil:
        CHK(dm_dio_alignment(cp, &mem, &off, &src, &e), &e)
    return mem, off, src.decode()


def dio_probe(directory):
    """Raise EngineError unless the file system of directory accepts O_DIRECT reads and writes."""
    cdef dm_err e
    cdef bytes p = _path(directory)
    cdef const char *cp = p
    with nogil:
        CHK(dm_dio_probe(cp, &e), &e)

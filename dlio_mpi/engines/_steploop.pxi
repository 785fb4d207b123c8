# EpochRequests, included by _engines.pyx: an epoch's read-ahead requests built ahead, submitted
# one step at a time by one C call, and the training step loop in C (csrc/run/steploop.c).

STEPS_DONE, STEPS_CHECK, STEPS_PREPARE, STEPS_EXCHANGE, STEPS_SHORT = (
    DM_STEPS_DONE, DM_STEPS_CHECK, DM_STEPS_PREPARE, DM_STEPS_EXCHANGE, DM_STEPS_SHORT)
# the nice value of a rank's read threads while its next batch is behind (csrc/run/steploop.c)
STEPS_BOOST_NICE = DM_STEPS_BOOST_NICE


cdef class EpochRequests:
    """The read-ahead requests of an epoch's steps (dlio_mpi.readers.epoch_requests builds the arrays):
    step s is segments step_seg[s]:step_seg[s+1]; segment g reads ranges
    seg_range[g]:seg_range[g+1] of the file in slot seg_slot[g], then spends seg_busy[g] ns
    preprocessing (seg_busy None: none); range r is offs[range_at[r]], lens[range_at[r]], of
    which wants[range_at[r]] bytes are expected (wants None: all of them; a stream's reads at
    a file's end expect none). offs, lens (and wants) are read when a step is submitted: a
    file's entries may be filled in place until then. With ordered, a file's segments are read
    one after another, in step order (a stream's reads as its one reader issues them). A
    slot's handle is set with set_handle before the first step that reads it is submitted;
    the object keeps it alive.

    Steps are submitted in order (submit_next, or the loop) and consumed in order (wait_next,
    or the loop); their tickets follow each other from the first one's. run() is the step
    loop: from the step and phase where it last stopped, until the epoch ends or Python must
    act (the code it returns says what)."""
    cdef dm_epoch ep
    cdef dm_steps st
    cdef ReadAhead ra
    cdef list keep, handles
    cdef object barrier
    cdef readonly cnp.ndarray want, prepare, wait_s, compute_s, exchange_s
    cdef readonly int64_t nsteps

    def __cinit__(self, ReadAhead ra, step_seg, seg_slot, seg_range, range_at, offs, lens,
                  seg_busy=None, *, int64_t xfer=0, int ahead=1, wants=None,
                  bint ordered=False):
        cdef cnp.ndarray a_step = _i64(step_seg), a_slot = _i64(seg_slot)
        cdef cnp.ndarray a_range = _i64(seg_range), a_at = _i64(range_at)
        cdef cnp.ndarray a_offs = _i64(offs), a_lens = _i64(lens)
        cdef cnp.ndarray a_busy = None if seg_busy is None else _i64(seg_busy)
        cdef cnp.ndarray a_wants = None if wants is None else _i64(wants)
        cdef int64_t n = a_step.shape[0] - 1, nslots, s, widest_seg = 1, widest_range = 1
        memset(&self.ep, 0, sizeof(self.ep))
        memset(&self.st, 0, sizeof(self.st))
        if ra.ra == NULL:
            raise ValueError("read-ahead is closed")
        if n < 0 or a_range.shape[0] != a_slot.shape[0] + 1 or a_offs.shape[0] != a_lens.shape[0]:
            raise ValueError("inconsistent epoch request arrays")
        if a_wants is not None and a_wants.shape[0] != a_lens.shape[0]:
            raise ValueError(f"{a_wants.shape[0]} wanted sizes for {a_lens.shape[0]} ranges")
        if a_busy is not None and a_busy.shape[0] != a_slot.shape[0]:
            raise ValueError(f"{a_busy.shape[0]} busy times for {a_slot.shape[0]} segments")
        nslots = int(a_slot.max()) + 1 if a_slot.shape[0] else 0
        seg_per = np.diff(a_step)
        if n:
            widest_seg = max(1, int(seg_per.max()))
            widest_range = max(1, int(np.diff(a_range[a_step]).max()))
        self.ra = ra
        self.nsteps = n
        self.handles = [None] * nslots
        self.want = np.zeros(n, dtype=np.int64)
        self.prepare = np.zeros(n, dtype=np.uint8)
        self.wait_s = np.zeros(n)
        self.compute_s = np.zeros(n)
        self.exchange_s = np.zeros(n)
        scratch_off = np.zeros(widest_range, dtype=np.int64)
        scratch_len = np.zeros(widest_range, dtype=np.int64)
        scratch_seg = np.zeros(widest_seg * sizeof(dm_ra_seg), dtype=np.uint8)
        tables = np.zeros(max(nslots, 1) * 2 * sizeof(void *), dtype=np.uint8)
        self.keep = [a_step, a_slot, a_range, a_at, a_offs, a_lens, a_busy, a_wants,
                     scratch_off, scratch_len, scratch_seg, tables]
        self.ep.nsteps = n
        self.ep.step_seg = <int64_t *>a_step.data
        self.ep.seg_slot = <int64_t *>a_slot.data
        self.ep.seg_range = <int64_t *>a_range.data
        self.ep.range_at = <int64_t *>a_at.data
        self.ep.offs = <int64_t *>a_offs.data
        self.ep.lens = <int64_t *>a_lens.data
        self.ep.seg_busy = NULL if a_busy is None else <int64_t *>a_busy.data
        self.ep.wants = NULL if a_wants is None else <int64_t *>a_wants.data
        self.ep.ordered = ordered
        self.ep.ops = <const dm_engine_ops **>(<cnp.ndarray>tables).data
        self.ep.hp = <void **>((<cnp.ndarray>tables).data + max(nslots, 1) * sizeof(void *))
        self.ep.xfer = xfer
        self.ep.want = <int64_t *>self.want.data
        self.ep.segs = <dm_ra_seg *>(<cnp.ndarray>scratch_seg).data
        self.ep.off = <int64_t *>(<cnp.ndarray>scratch_off).data
        self.ep.len = <int64_t *>(<cnp.ndarray>scratch_len).data
        self.st.ra = ra.ra
        self.st.ep = &self.ep
        self.st.ticket0 = -1
        self.st.ahead = ahead
        self.st.prepare = <uint8_t *>self.prepare.data
        self.st.wait_s = <double *>self.wait_s.data
        self.st.compute_s = <double *>self.compute_s.data
        self.st.exchange_s = <double *>self.exchange_s.data
        self.st.phase = DM_PH_START

    @property
    def nsub(self):
        """The next step to submit."""
        return self.st.nsub

    @property
    def step(self):
        """The step being consumed (the next one to wait for, or the loop's)."""
        return self.st.step

    @property
    def ticket0(self):
        return self.st.ticket0

    def has_handle(self, int64_t slot):
        return self.handles[slot] is not None

    def set_handle(self, int64_t slot, handle):
        """The open engine object of the file in `slot`."""
        if not 0 <= slot < len(self.handles):
            raise IndexError(f"slot {slot} of {len(self.handles)}")
        _engine_of(handle, &self.ep.ops[slot], &self.ep.hp[slot])
        self.handles[slot] = handle

    def clear_handle(self, int64_t slot):
        """The file in `slot` is closed: a step reading it must set a handle again first."""
        if not 0 <= slot < len(self.handles):
            raise IndexError(f"slot {slot} of {len(self.handles)}")
        self.ep.ops[slot] = NULL
        self.ep.hp[slot] = NULL
        self.handles[slot] = None

    cdef int _check_ra(self) except -1:
        if self.ra.ra == NULL or self.ra.ra != self.st.ra:
            raise ValueError("read-ahead is closed")
        return 0

    def submit_next(self):
        """Submit step nsub (its files' handles set); returns its ticket."""
        cdef dm_err e
        cdef int64_t t, s = self.st.nsub
        self._check_ra()
        if s >= self.nsteps:
            raise ValueError(f"all {self.nsteps} steps are submitted")
        with nogil:
            t = dm_epoch_submit(self.st.ra, &self.ep, s, &e)
        if t < 0:
            raise_err(&e)
        if self.st.ticket0 < 0:
            self.st.ticket0 = t - s
        elif t != self.st.ticket0 + s:
            raise RuntimeError(f"step {s} got read-ahead ticket {t}, not {self.st.ticket0 + s}")
        self.st.nsub = s + 1
        return t

    def wait_next(self):
        """Wait for the step's batch; returns the bytes read. With all it wanted, the request
        is released and the next step comes; else (short) it stays held for the caller to
        inspect (ReadAhead.segment_bytes) and release."""
        cdef dm_err e
        cdef char *buf = NULL
        cdef int64_t need = 0, total = 0, t = self.st.ticket0 + self.st.step
        cdef int rc
        self._check_ra()
        if self.st.step >= self.st.nsub:
            raise ValueError(f"step {self.st.step} is not submitted")
        with nogil:
            rc = dm_ra_wait(self.st.ra, t, &buf, &need, &total, &e)
        if rc != 0:
            self.ra.release(t)
            raise_err(&e)
        if total >= self.want[self.st.step]:
            self.ra.release(t)
            self.st.step += 1
        return total

    def start_loop(self, sleep_ns, NodeBarrier barrier=None, double defer_s=0.0,
                   int priority=0, bint sync=False):
        """Before run(): each step's compute in ns, the node barrier that closes each step
        (None: run() returns STEPS_EXCHANGE for Python to run the exchange), how far into
        a step's compute (at most half of it) the next batches are queued, the SCHED_FIFO
        priority of the thread inside run() (0: its own policy; refused, run() goes on
        without it), and whether run() begins with the barrier that starts the epoch (sync,
        with a node barrier: t_start_ns is then when it released the rank)."""
        if not 0 <= priority <= 99:
            raise ValueError(f"priority {priority}: SCHED_FIFO priorities are 1-99 (0: none)")
        cdef cnp.ndarray sl = _i64(sleep_ns)
        if sl.shape[0] != self.nsteps:
            raise ValueError(f"{sl.shape[0]} compute times for {self.nsteps} steps")
        self.keep.append(sl)
        self.barrier = barrier
        self.st.sleep_ns = <int64_t *>sl.data
        self.st.defer_ns = <int64_t>(defer_s * 1e9)
        self.st.bar = NULL if barrier is None else barrier.b
        self.st.nbar = 0 if barrier is None else barrier.n
        self.st.spin_ns = 0 if barrier is None else <int64_t>(barrier.spin_s * 1e9)
        self.st.check_ns = <int64_t>((0.1 if barrier is None else barrier.check_s) * 1e9)
        dm_steps_leave(&self.st)
        self.st.rt_priority = priority
        self.st.sync_first = sync and barrier is not None
        self.st.t_start = self.st.t_end = 0

    @property
    def t_start_ns(self):
        """When the loop's epoch started for this rank (CLOCK_MONOTONIC ns; the release from
        the barrier with start_loop's sync), 0 before run()."""
        return self.st.t_start

    @property
    def t_end_ns(self):
        """When the loop's last step so far ended (its exchange done; CLOCK_MONOTONIC ns)."""
        return self.st.t_end

    def leave(self):
        """Give the thread back its own scheduling policy if run() left it under SCHED_FIFO
        (run() keeps it across STEPS_PREPARE and STEPS_CHECK): call when the loop is left
        before STEPS_DONE."""
        dm_steps_leave(&self.st)

    def run(self):
        """Run steps until the epoch ends (STEPS_DONE) or Python must act: STEPS_CHECK (time
        for signal handlers and progress), STEPS_PREPARE (step nsub's files to open),
        STEPS_EXCHANGE (run the exchange, set exchange_s[step]), STEPS_SHORT (the batch of
        `step` is short: held, as wait_next leaves it). A failed read raises its error."""
        cdef dm_err e
        cdef int rc
        self._check_ra()
        if self.st.sleep_ns == NULL:
            raise ValueError("start_loop first")
        with nogil:
            rc = dm_steps_run(&self.st, &e)
        if rc == DM_STEPS_ERROR:
            if self.st.phase == DM_PH_WAIT:
                self.ra.release(self.st.ticket0 + self.st.step)
            raise_err(&e)
        return rc

    @property
    def got(self):
        """The bytes of the batch the loop last waited for."""
        return self.st.got

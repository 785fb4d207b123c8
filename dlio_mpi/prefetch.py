"""Read-ahead: which runs have it (read_ahead_threads, read_ahead_off) and PrefetchReader, the
reader whose C threads read a rank's batches ahead of its steps."""
from collections import deque

import numpy as np

from dlio_mpi import engines, epoch_requests, formats
from dlio_mpi.readers import H5Reader, Reader, by_file

COLLECTIVE_INTERFACES = ("mpiio_coll", "hdf5_coll")
MPI_INTERFACES = ("mpiio", "hdf5")     # MPI-IO calls from the read-ahead threads


def read_ahead_off(cfg):
    """Why reader.read_threads is not emulated (the reads are issued by the rank's main
    thread) on this configuration, or None when threads read ahead (or none are asked for).
    Collective interfaces stay on the main thread: every rank must enter each collective call
    in the same order. MPI-IO from threads needs MPI_THREAD_MULTIPLE, which mpi4py asks for by
    default; an MPI that grants less keeps those reads on the main thread."""
    kind = cfg.io.interface
    if cfg.reader.read_threads < 1 or cfg.io.read_type != "on_demand" \
            or cfg.dataset.volume_shape:
        return None
    if kind in COLLECTIVE_INTERFACES:
        return (f"reads are issued by the rank's main thread on io.interface={kind}: every "
                "rank must enter each collective call in the same order")
    if kind in MPI_INTERFACES:
        from mpi4py import MPI
        level = MPI.Query_thread()
        if level < MPI.THREAD_MULTIPLE:
            names = {MPI.THREAD_SINGLE: "MPI_THREAD_SINGLE", MPI.THREAD_FUNNELED:
                     "MPI_THREAD_FUNNELED", MPI.THREAD_SERIALIZED: "MPI_THREAD_SERIALIZED"}
            return (f"reads are issued by the rank's main thread on io.interface={kind}: MPI "
                    f"runs at {names.get(level, level)}, and MPI-IO calls from read-ahead "
                    "threads need MPI_THREAD_MULTIPLE")
    return None


def read_ahead_threads(cfg):
    """The read-ahead threads a rank runs: reader.read_threads where they read ahead (samples
    read on demand, by sample or by an input library's pattern), else 0."""
    if cfg.reader.read_threads < 1 or cfg.io.read_type != "on_demand" \
            or cfg.dataset.volume_shape or read_ahead_off(cfg):
        return 0
    return cfg.reader.read_threads


class PrefetchReader(Reader):
    """reader.read_threads C threads read batches ahead, (reader.prefetch_size + 1) of them,
    as a data loader's workers do. A batch is one read-ahead request, read as the rank's main
    thread reads it: its samples grouped by file, each file's ranges (HDF5: rows) in one engine
    call, a segment of the request; the threads share the oldest batch's segments, and a step
    waits once, for its whole batch. The engine table lets the threads read every interface's
    handles: a STDIO stream's segments run one at a time, in order; MPI-IO and HDF5 through the
    MPI-IO driver need MPI_THREAD_MULTIPLE (read_ahead_off); libhdf5 calls take turns under the
    engine's one lock.

    Byte-range formats read without O_DIRECT build an epoch's requests at start_epoch
    (dlio_mpi.epoch_requests, engines.EpochRequests): a step's submit is then one C call, and
    the step loop can run in C (dlio_mpi.steploop). Files are opened, and headers read for
    their index, when the first step reading them is queued, as above; an epoch that would
    close a file (more files than max_open) or drop an index read from headers from the
    dataset's cache is queued batch by batch instead."""

    def __init__(self, cfg, comm, log, inner):
        self.inner = inner
        self.pre = inner.pre
        self.cfg, self.comm, self.log, self.data = cfg, comm, log, inner.data
        self.xfer = inner.xfer
        self.h5 = isinstance(inner, H5Reader)
        self.ahead = cfg.reader.prefetch_size + 1         # batches queued at most
        # queued batches hold handles of the files most recently used: those stay open
        inner.max_open = max(inner.max_open, self.ahead * inner.batch + 1)
        align = 4096
        if cfg.io.interface == "posix_direct":
            align = max(align, engines.dio_alignment(self.data.root)[0])
        per_file = min(inner.batch, self.data.spf)
        widen = 2 * inner.align if inner.align > 1 else 0
        # a thread's buffer holds one segment: a file's samples of a batch
        self.ra = engines.ReadAhead(threads=cfg.reader.read_threads, depth=self.ahead,
                                    slot_bytes=per_file * (self.data.max_sample_bytes() + widen),
                                    align=align, keep=False)   # steps discard the samples
        self.steps = []
        self.pending = deque()  # per queued batch: ticket, files, bytes wanted, first offsets
        self.ep = self.lay = None     # the epoch's requests, when built at start_epoch
        self.offs = self.lens = None

    def start_epoch(self, plan, files=None):
        self._settle()
        plan = np.asarray(plan)
        if plan.ndim == 2 and len(plan) and self._plan_epoch(plan):
            self._fill()
            return
        self.steps = list(plan)[::-1]
        self._fill()

    def _indexed_without_io(self):
        """Whether a file's index is computed (no I/O), or every index of the split stays in
        the dataset's cache once read (so it is read once, whenever it is asked for)."""
        d = self.data
        try:
            formats.layout(d.spec, 0)
            return True
        except ValueError:
            return d.num_files <= d.CACHE_FILES and d.num_samples <= d.CACHE_SAMPLES

    def _plan_epoch(self, plan):
        """Build the epoch's requests (engines.EpochRequests); False where it is read batch by
        batch instead (see the class)."""
        inner = self.inner
        if self.h5 or inner.align != 1 or not self._indexed_without_io():
            return False
        spf = self.data.spf
        lay = epoch_requests.layout(plan, spf)
        open_now = np.array([int(f) in inner.handles for f in lay.files.tolist()], dtype=bool)
        if len(inner.handles) + int((~open_now).sum()) > inner.max_open:
            return False
        busy = None
        if self.pre.active:
            busy = epoch_requests.segment_busy(lay, [self.pre.draw(plan.shape[1])
                                                    for _ in range(len(plan))])
        self.offs = np.zeros(len(lay.files) * spf, dtype=np.int64)
        self.lens = np.zeros_like(self.offs)
        ep = engines.EpochRequests(self.ra, lay.step_seg, lay.seg_slot, lay.seg_range,
                                   lay.range_at, self.offs, self.lens, busy, xfer=self.xfer,
                                   ahead=self.ahead)
        self.ready = np.zeros(len(lay.files), dtype=bool)   # index entries filled
        cached = self.data._indexes
        for slot, f in enumerate(lay.files.tolist()):
            if open_now[slot]:
                ep.set_handle(slot, inner.handles[f])
            if f in cached or open_now[slot]:
                self._fill_index(slot, f)
        first = lay.first_steps()
        ep.prepare[first[~(self.ready & open_now)]] = 1
        self.ep, self.lay = ep, lay
        return True

    def _fill_index(self, slot, f):
        idx = self.data.index(f)
        spf = self.data.spf
        self.offs[slot * spf:(slot + 1) * spf] = idx.offsets
        self.lens[slot * spf:(slot + 1) * spf] = idx.lengths
        self.ready[slot] = True

    def prepare(self, step):
        """Before step `step` is queued: its files' indexes and handles, in the order the
        batch reads them (as _fill does for a batch)."""
        slots, _, _ = self.lay.step_segments(step)
        for slot in slots.tolist():
            f = int(self.lay.files[slot])
            if not self.ready[slot]:
                self._fill_index(slot, f)
            if not self.ep.has_handle(slot):
                self.ep.set_handle(slot, self.inner._open(f))
        self.ep.prepare[step] = 0

    def _settle(self):
        """After an epoch of built requests: its files become the most recently used, in
        the order of their last use, as queueing batch by batch leaves them."""
        if self.lay is not None:
            handles = self.inner.handles
            for slot in self.lay.last_use().tolist():
                f = int(self.lay.files[slot])
                if f in handles:
                    handles.move_to_end(f)
                if f in self.data._indexes:
                    self.data._indexes.move_to_end(f)
        self.ep = self.lay = None

    def short_batch(self, step):
        """The error of a step whose batch came short (held by the read-ahead): names the
        first short file, what it wanted from which offset, and what it got."""
        ep, lay = self.ep, self.lay
        t = ep.ticket0 + step
        slots, first, count = lay.step_segments(step)
        per = self.ra.segment_bytes(t, len(slots)).tolist()
        self.ra.release(t)
        for k, (slot, a, n) in enumerate(zip(slots.tolist(), first.tolist(), count.tolist())):
            at = lay.range_at[a:a + n]
            want = int(self.lens[at].sum())
            if per[k] < want:
                return engines.end_of_file(
                    self.data.path(int(lay.files[slot])),
                    f"wanted {want} bytes from offset {int(self.offs[at[0]])}, got {per[k]}")
        return engines.end_of_file(self.data.path(int(lay.files[slots[0]])),
                                   f"wanted {int(ep.want[step])} bytes, got less")

    def _segment(self, f, ks):
        """Ranges of samples ks of file f: (offsets, lengths, bytes wanted, first offset)."""
        if self.h5:
            rows = self.inner.rows(f, np.array(ks, dtype=np.int64)).tolist()
            want = int(formats.sample_sizes(self.data.spec, f)[ks].sum())
            return rows, [1] * len(rows), want, rows[0]
        idx = self.data.index(f)
        if self.inner.align == 1:
            offs = [int(idx.offsets[k]) for k in ks]
            lens = [int(idx.lengths[k]) for k in ks]
            return offs, lens, sum(lens), offs[0]
        # O_DIRECT: the aligned ranges, which may run past the end of the file
        offs, lens = self.inner.sample_ranges(f, np.array(ks, dtype=np.int64))
        want = int((np.minimum(offs + lens, idx.file_size) - offs).sum())
        return offs.tolist(), lens.tolist(), want, int(idx.offsets[ks[0]])

    def _fill(self):
        ep = self.ep
        if ep is not None:
            while ep.nsub < ep.nsteps and ep.nsub - ep.step < self.ahead:
                if ep.prepare[ep.nsub]:
                    self.prepare(ep.nsub)
                ep.submit_next()
            return
        while self.steps and len(self.pending) < self.ahead:
            samples = self.steps.pop()
            groups = by_file(samples, self.data.spf)   # as the main thread reads them
            handles, counts, offs, lens, wants, wheres = [], [], [], [], [], []
            for f, ks in groups.items():
                o, n, want, where = self._segment(f, ks)
                handles.append(self.inner._open(f))
                counts.append(len(o))
                offs += o
                lens += n
                wants.append(want)
                wheres.append(where)
            busy = None
            if self.pre.active:
                draws, busy, at = self.pre.draw(len(samples)), [], 0
                for ks in groups.values():
                    busy.append(float(draws[at:at + len(ks)].sum()))
                    at += len(ks)
            t = self.ra.submit_batch(handles, counts, offs, lens, xfer=self.xfer, busy=busy)
            self.pending.append((t, list(groups), wants, wheres))

    def refill(self):
        """The next batches queued while the step computes: threads woken now take the CPU
        from the rank's thread while the emulated accelerator works, not before."""
        self._fill()

    def read_batch(self, samples):
        ep = self.ep
        if ep is not None:
            if ep.step >= ep.nsub:
                self._fill()
            step = ep.step
            got = ep.wait_next()
            if got < ep.want[step]:
                raise self.short_batch(step)
            return got
        if not self.pending:
            self._fill()
        t, files, wants, wheres = self.pending.popleft()
        _, got = self.ra.wait(t)
        if got < sum(wants):
            per = self.ra.segment_bytes(t, len(files)).tolist()
            self.ra.release(t)
            k = next(i for i, (g, w) in enumerate(zip(per, wants)) if g < w)
            raise engines.end_of_file(
                self.data.path(files[k]), f"wanted {wants[k]} bytes from offset {wheres[k]}, "
                f"got {per[k]}")
        self.ra.release(t)
        return got

    def read_extent(self, f, lo, hi):
        return self.inner.read_extent(f, lo, hi)

    def close(self):
        ep = self.ep
        if ep is not None:
            for t in range(ep.ticket0 + ep.step, ep.ticket0 + ep.nsub):
                try:
                    self.ra.wait(t)
                except engines.EngineError:
                    continue        # released by wait
                self.ra.release(t)
            self.ep = self.lay = None
        for t, _, _, _ in self.pending:
            try:
                self.ra.wait(t)
            except engines.EngineError:
                pass
            self.ra.release(t)
        self.pending.clear()
        self.ra.close()
        self.inner.close()

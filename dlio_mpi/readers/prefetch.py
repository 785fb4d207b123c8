"""Read-ahead: which runs have it (read_ahead_threads, read_ahead_off) and PrefetchReader, the
reader whose C threads read a rank's batches ahead of its steps."""
from collections import deque

import numpy as np

from dlio_mpi import backends, engines, formats
from dlio_mpi.readers import epoch_requests
from dlio_mpi.readers.reader import H5Reader, by_file


def read_ahead_off(cfg):
    """Why reader.read_threads is not emulated (the reads are issued by the rank's main
    thread) on this configuration, or None when threads read ahead (or none are asked for).
    Collective interfaces stay on the main thread: every rank must enter each collective call
    in the same order. MPI-IO from threads needs MPI_THREAD_MULTIPLE, which mpi4py asks for by
    default; an MPI that grants less keeps those reads on the main thread."""
    b = backends.of(cfg)
    kind = b.name
    if cfg.reader.read_threads < 1 or cfg.io.read_type != "on_demand" \
            or cfg.dataset.volume_shape:
        return None
    if not b.threadable:
        return (f"reads are issued by the rank's main thread on io.interface={kind}: every "
                "rank must enter each collective call in the same order")
    if b.mpi_threads:
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


class PrefetchReader:
    """A reader_protocol.BatchReader that reads ahead for another (inner: a readers.Reader,
    which it holds, not is): reader.read_threads C threads read batches ahead,
    (reader.prefetch_size + 1) of them, as a data loader's workers do. A batch is one read-ahead request, read as the rank's main
    thread reads it: its samples grouped by file, each file's ranges (HDF5: rows) in one engine
    call, a segment of the request; the threads share the oldest batch's segments, and a step
    waits once, for its whole batch. The engine table lets the threads read every interface's
    handles: a STDIO stream's segments run one at a time, in order; MPI-IO and HDF5 through the
    MPI-IO driver need MPI_THREAD_MULTIPLE (read_ahead_off); libhdf5 calls take turns under the
    engine's one lock. With reader.hdf5_reads=sample each sample is a segment of its own (one
    H5Dread). With reader.worker_files, batch k's files are read through handles of the k mod
    read_threads-th worker's own, as a data loader's worker processes each open the files
    they read (and, new every epoch, open them again): closed at an epoch's start (epoch) or
    kept (run). With reader.reopen each sample is a segment whose file the thread reading it
    opens and closes after the read, one open of a file at a time, as a loader's worker that
    opens a file for each sample (DLIO's HDF5 reader in its workers).

    Byte-range formats read without O_DIRECT build an epoch's requests before it starts
    (plan_epoch; dlio_mpi.readers.epoch_requests, engines.EpochRequests): a step's submit is then one
    C call, and the step loop can run in C (dlio_mpi.run.steploop). Files are opened (and closed
    beyond max_open), and headers read for their index, when the first step reading them is
    queued, as above (epoch_requests.EpochQueue); a format whose index is read from headers and
    whose files' indexes do not all fit the dataset's cache is queued batch by batch."""

    def __init__(self, cfg, comm, log, inner):
        self.inner = inner
        self.pre = inner.pre
        self.cfg, self.comm, self.log, self.data = cfg, comm, log, inner.data
        self.xfer = inner.xfer
        self.h5 = isinstance(inner, H5Reader)
        self.ahead = cfg.reader.prefetch_size + 1         # batches queued at most
        # queued batches hold handles of the files most recently used: those stay open
        inner.max_open = max(inner.max_open, self.ahead * inner.batch + 1)
        per_file = min(inner.batch, self.data.spf)
        widen = 2 * inner.align if inner.align > 1 else 0
        # a thread's buffer holds one transfer (HDF5: one segment, a file's samples of a batch)
        room = per_file * (self.data.max_sample_bytes() + widen)
        if not self.h5 and self.xfer > 0:
            room = min(room, self.xfer)
        self.ra = engines.ReadAhead(threads=cfg.reader.read_threads, depth=self.ahead,
                                    slot_bytes=room, align=inner.mem_align,
                                    keep=False)     # the bytes are not kept
        self.steps = []
        # reader.worker_files: batch k read through thread k mod read_threads's own handles
        self.workers = cfg.reader.worker_files != "shared"
        self.per_sample = self.h5 and cfg.reader.hdf5_reads == "sample"
        # reader.reopen: a segment a sample, its file opened by the thread that reads it
        # and closed after, one open of a file at a time (a loader's worker process)
        self.reopen = cfg.reader.reopen
        self.batches = 0        # batches queued this epoch
        self.pending = deque()  # per queued batch: ticket, files, bytes wanted, first offsets
        self.queue = self.ep = None   # the epoch's requests, when built (plan_epoch)
        self.planned = False          # plan_epoch ran for the next start_epoch

    ep = None           # the epoch's requests, when built (plan_epoch)

    def plan_epoch(self, plan, files=None):
        """The inner reader's plan_epoch, and the epoch's requests built (where they are):
        before the barrier that starts the epoch, so that after it a rank's thread only queues
        them."""
        self.inner.plan_epoch(plan, files)
        self._build(plan)
        self.planned = True

    def _build(self, plan):
        self._settle()
        plan = np.asarray(plan)
        if plan.ndim == 2 and len(plan):
            self._plan_epoch(plan)

    def start_epoch(self, plan, files=None, fill=True):
        """The epoch's first batches queued; with its requests built and fill False, none:
        the C step loop queues them (dlio_mpi.run.steploop)."""
        if not self.planned:
            self._build(plan)
        self.planned = False
        self.batches = 0
        if self.cfg.reader.worker_files == "epoch":
            self._close_worker_files()
        if self.ep is not None:
            if fill:
                self._fill()
            return
        self.steps = list(np.asarray(plan))[::-1]
        self._fill()

    def _plan_epoch(self, plan):
        """Build the epoch's requests (epoch_requests.EpochQueue); False where it is queued
        batch by batch instead (see the class)."""
        if self.h5 or self.workers or self.reopen or self.inner.align != 1 \
                or not epoch_requests.indexed_without_io(self.data):
            return False
        self.queue = epoch_requests.EpochQueue(self, self.inner, plan)
        self.ep = self.queue.ep
        return True

    def prepare(self, step):
        """Before step `step` of the built requests is queued (EpochQueue.prepare)."""
        self._built().prepare(step)

    def short_batch(self, step):
        """The error of a built step whose batch came short (EpochQueue.short_batch)."""
        return self._built().short_batch(self.ra, step)

    def _built(self):
        if self.queue is None:
            raise RuntimeError("no epoch of requests is built")
        return self.queue

    def _settle(self):
        if self.queue is not None:
            self.queue.settle()
        self.queue = self.ep = None

    def _segment(self, f, ks):
        """Ranges of samples ks of file f: (offsets, lengths, bytes wanted, first offset)."""
        if self.h5:
            rows = self.inner.rows(f, np.array(ks, dtype=np.int64)).tolist()
            want = int(formats.sample_sizes(self.data.spec, f)[ks].sum())
            return rows, [1] * len(rows), want, rows[0]
        idx = self.data.index(f)
        if self.inner.align == 1 and not self.cfg.reader.whole_file:
            offs = [int(idx.offsets[k]) for k in ks]
            lens = [int(idx.lengths[k]) for k in ks]
            return offs, lens, sum(lens), offs[0]
        # O_DIRECT: the aligned ranges, which may run past the end of the file
        offs, lens = self.inner.sample_ranges(f, np.array(ks, dtype=np.int64))
        want = int((np.minimum(offs + lens, idx.file_size) - offs).sum())
        return offs.tolist(), lens.tolist(), want, int(idx.offsets[ks[0]])

    def _fill(self):
        if self.ep is not None:
            self.queue.fill(self.ahead)
            return
        while self.steps and len(self.pending) < self.ahead:
            samples = self.steps.pop()
            if self.per_sample or self.reopen:     # a segment a sample (HDF5: one H5Dread)
                order = self.cfg.reader.batch_order
                if order:           # the reader's own order of a batch's calls
                    samples = samples[[k for k in order if k < len(samples)]]
                groups = [divmod(int(s), self.data.spf) for s in samples.tolist()]
                groups = [(f, [k]) for f, k in groups]
            else:
                groups = list(by_file(samples, self.data.spf).items())  # as the main thread
            worker = self.batches % self.cfg.reader.read_threads if self.workers else None
            self.batches += 1
            # the batch's files: none closed for another of them
            keep = {f if worker is None else (worker, f) for f, _ in groups}
            handles, counts, offs, lens, wants, wheres = [], [], [], [], [], []
            for f, ks in groups:
                o, n, want, where = self._segment(f, ks)
                handles.append(self.inner.sample_handle(f) if self.reopen
                               else self._handle(f, worker, keep))
                counts.append(len(o))
                offs += o
                lens += n
                wants.append(want)
                wheres.append(where)
            busy = None
            if self.pre.active:
                draws, busy, at = self.pre.draw(len(samples)), [], 0
                for _, ks in groups:
                    busy.append(float(draws[at:at + len(ks)].sum()))
                    at += len(ks)
            keys = [f + 1 for f, _ in groups] if self.reopen else None
            t = self.ra.submit_batch(handles, counts, offs, lens, xfer=self.xfer, busy=busy,
                                     keys=keys)
            self.pending.append((t, [f for f, _ in groups], wants, wheres))

    def _handle(self, f, worker, keep):
        """File f's handle for a batch: the rank's, or the given thread's own (opened when it
        first reads the file, under the same open-file policy)."""
        if worker is None:
            return self.inner._open(f, keep)
        return self.inner.files.open((worker, f), lambda: self.inner._new_handle(f), keep)

    def _close_worker_files(self):
        """The threads' own handles closed (the epoch's batches are read): a new epoch's
        workers open their files anew."""
        for key in self.inner.files:
            if isinstance(key, tuple):
                self.inner.files.close(key)

    def refill(self):
        """The next batches queued while the step computes: threads woken now take the CPU
        from the rank's thread while the emulated accelerator works, not before."""
        self._fill()

    def preprocess_inline(self, n):
        """None: the read-ahead threads preprocess a batch's samples, as a loader's workers
        do."""
        return 0.0

    def load(self, f, local):
        return self.inner.load(f, local)

    def read_batch(self, samples):
        if self.ep is not None:
            return self.queue.read_next(self.ra, self.ahead)
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
        if self.ep is not None:
            self.queue.drain(self.ra)
            self.queue = self.ep = None
        for t, _, _, _ in self.pending:
            try:
                self.ra.wait(t)
            except engines.EngineError:
                pass
            self.ra.release(t)
        self.pending.clear()
        self.ra.close()
        self.inner.close()

"""Read-ahead: which runs have it (read_ahead_threads, read_ahead_off) and PrefetchReader, the
reader whose C threads read a rank's batches ahead of its steps."""
import numpy as np

from dlio_mpi import engines, formats
from dlio_mpi.readers import H5Reader, Reader

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
    as a data loader's workers do. A batch is read as the rank's main thread reads it: its
    samples grouped by file, each file's ranges (HDF5: rows) in one engine call, one request
    each; a step waits for its own batch's requests only. The engine table lets the threads
    read every interface's handles: a STDIO stream's requests run one at a time, in order;
    MPI-IO and HDF5 through the MPI-IO driver need MPI_THREAD_MULTIPLE (read_ahead_off); libhdf5
    calls take turns under the engine's one lock."""

    def __init__(self, cfg, comm, log, inner):
        self.inner = inner
        self.pre = inner.pre
        self.cfg, self.comm, self.log, self.data = cfg, comm, log, inner.data
        self.xfer = inner.xfer
        self.h5 = isinstance(inner, H5Reader)
        self.ahead = cfg.reader.prefetch_size + 1         # batches queued at most
        self.depth = self.ahead * inner.batch             # requests: a file's samples each
        # queued requests hold handles of the files most recently used: those stay open
        inner.max_open = max(inner.max_open, self.depth + 1)
        align = 4096
        if cfg.io.interface == "posix_direct":
            align = max(align, engines.dio_alignment(self.data.root)[0])
        per_file = min(inner.batch, self.data.spf)
        widen = 2 * inner.align if inner.align > 1 else 0
        self.ra = engines.ReadAhead(threads=cfg.reader.read_threads, depth=self.depth,
                                    slot_bytes=per_file * (self.data.max_sample_bytes() + widen),
                                    align=align, keep=False)   # steps discard the samples
        self.steps = []
        self.pending = []       # per queued batch: its requests (ticket, file, offset, want)

    def start_epoch(self, plan, files=None):
        self.steps = [np.asarray(b) for b in np.asarray(plan)][::-1]
        self._fill()

    def _requests(self, samples):
        """A batch's requests, grouped by file in order of first appearance (the order of the
        main thread's reads): (file, offsets, lengths, want, first offset)."""
        spf = self.data.spf
        groups = {}
        for s in samples.tolist():
            f, k = divmod(s, spf)
            groups.setdefault(f, []).append(k)
        out = []
        for f, ks in groups.items():
            local = np.array(ks, dtype=np.int64)
            if self.h5:
                rows = self.inner.rows(f, local)
                want = int(formats.sample_sizes(self.data.spec, f)[local].sum())
                out.append((f, rows, np.ones_like(rows), want, int(rows[0])))
                continue
            offs, lens = self.inner.sample_ranges(f, local)
            # with O_DIRECT the aligned ranges may run past the end of the file
            size = self.data.index(f).file_size
            want = int((np.minimum(offs + lens, size) - offs).sum())
            out.append((f, offs, lens, want, int(self.data.index(f).offsets[ks[0]])))
        return out

    def _fill(self):
        while self.steps and len(self.pending) < self.ahead:
            samples = self.steps.pop()
            busy = self.pre.draw(len(samples)) if self.pre.active else None
            queued, at = [], 0
            for f, offs, lens, want, where in self._requests(samples):
                b = float(busy[at:at + len(offs)].sum()) if busy is not None else 0.0
                at += len(offs)
                t = self.ra.submit(self.inner._open(f), offs, lens, xfer=self.xfer, busy=b)
                queued.append((t, f, where, want))
            self.pending.append(queued)

    def read_batch(self, samples):
        total = 0
        for t, f, where, want in self.pending.pop(0):
            _, got = self.ra.wait(t)
            self.ra.release(t)
            if got < want:
                raise engines.ShortReadError(
                    61, f"unexpected end of file in {self.data.path(f)}: wanted {want} bytes "
                    f"from offset {where}, got {got}")
            total += got
        self._fill()
        return total

    def read_extent(self, f, lo, hi):
        return self.inner.read_extent(f, lo, hi)

    def close(self):
        for queued in self.pending:
            for t, _, _, _ in queued:
                try:
                    self.ra.wait(t)
                except engines.EngineError:
                    pass
                self.ra.release(t)
        self.pending.clear()
        self.ra.close()
        self.inner.close()

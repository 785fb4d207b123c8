"""The per-rank training loop: each epoch, read the rank's batches through the configured
interface, emulate compute, join the gradient exchange, and measure."""
import os
import time

import numpy as np

from dlio_mpi import datagen, engines, sampler, timing

_ADVICE = {"none": None, "normal": os.POSIX_FADV_NORMAL, "sequential": os.POSIX_FADV_SEQUENTIAL,
           "random": os.POSIX_FADV_RANDOM, "willneed": os.POSIX_FADV_WILLNEED}


class Reader:
    """Opens dataset files lazily through one interface and reads a batch's byte ranges."""

    def __init__(self, cfg, comm, log):
        self.cfg, self.comm, self.log = cfg, comm, log
        self.handles = {}
        ds = cfg.dataset
        self.spf, self.rec = ds.num_samples_per_file, ds.record_length
        self.xfer = cfg.reader.transfer_size
        self.buf = engines.aligned_empty(cfg.reader.batch_size * self.rec, 4096)

    def path(self, i):
        return os.path.join(self.cfg.dataset.data_folder, datagen.file_name(i))

    def _open(self, i):
        h = self.handles.get(i)
        if h is None:
            kind, io = self.cfg.io.interface, self.cfg.io
            if kind == "stdio":
                h = engines.StdioFile(self.path(i), bufsize=io.stdio_buffer, file_id=i,
                                      oplog=self.log)
            else:
                h = engines.PosixFile(self.path(i), direct=kind == "posix_direct",
                                      mmap=kind == "mmap", advice=_ADVICE[io.fadvise],
                                      file_id=i, oplog=self.log)
            self.handles[i] = h
        return h

    def read_batch(self, samples):
        files, offs = sampler.locate(samples, self.spf, self.rec)
        total = pos = 0
        for f in np.unique(files):
            sel = files == f
            k = int(sel.sum())
            _, got = self._open(int(f)).readv(offs[sel], np.full(k, self.rec), xfer=self.xfer,
                                              out=self.buf[pos:pos + k * self.rec], exact=True)
            total += got
            pos += k * self.rec
        return total

    def close(self):
        for i in sorted(self.handles):
            self.handles[i].close()
        self.handles.clear()


class MPIReader(Reader):
    """Through MPI-IO: files opened collectively on all ranks (in the same order); with
    mpiio_coll every step's ranges of a file are read in one collective call."""

    def open_all(self):
        for i in range(self.cfg.dataset.num_files_train):
            self.handles[i] = engines.MPIFile(self.comm, self.path(i),
                                              hints=self.cfg.io.mpiio_hints, file_id=i,
                                              oplog=self.log)

    def _open(self, i):
        return self.handles[i]

    def read_batch(self, samples):
        if self.cfg.io.interface == "mpiio":
            return super().read_batch(samples)
        files, offs = sampler.locate(samples, self.spf, self.rec)
        # every rank walks the same files in the same order, with or without ranges in them
        touched = np.unique(np.concatenate(self.comm.allgather(np.unique(files))))
        total = pos = 0
        for f in touched:
            sel = files == f
            k = int(sel.sum())
            _, got = self.handles[int(f)].read_all(offs[sel], np.full(k, self.rec),
                                                   out=self.buf[pos:pos + k * self.rec])
            total += got
            pos += k * self.rec
        return total


class PrefetchReader(Reader):
    """reader.read_threads C threads read samples ahead into a ring of
    (reader.prefetch_size + 1) batches, as a data loader's workers do; a step waits only for
    the samples of its own batch. The samples of the epoch are queued in order."""

    def __init__(self, cfg, comm, log):
        super().__init__(cfg, comm, log)
        bs = cfg.reader.batch_size
        self.depth = (cfg.reader.prefetch_size + 1) * bs
        _, align = (1, 1) if cfg.io.interface != "posix_direct" else \
            engines.dio_alignment(cfg.dataset.data_folder)[:2]
        self.ra = engines.ReadAhead(threads=cfg.reader.read_threads, depth=self.depth,
                                    slot_bytes=self.rec, align=max(align, 4096))
        self.queue = []        # samples of the epoch not yet submitted
        self.pending = []      # tickets submitted, oldest first

    def start_epoch(self, plan):
        self.queue = list(np.asarray(plan).reshape(-1)[::-1])
        self._fill()

    def _fill(self):
        while self.queue and len(self.pending) < self.depth:
            s = int(self.queue.pop())
            f, off = divmod(s, self.spf)
            t = self.ra.submit(self._open(f), [off * self.rec], [self.rec], xfer=self.xfer)
            self.pending.append((t, f, off * self.rec))

    def read_batch(self, samples):
        total = 0
        for _ in range(len(samples)):
            t, f, off = self.pending.pop(0)
            view, got = self.ra.wait(t)
            self.ra.release(t)
            if got != self.rec:
                raise engines.ShortReadError(
                    61, f"unexpected end of file in {self.path(f)}: wanted {self.rec} bytes at "
                    f"offset {off}, got {got}")
            total += got
        self._fill()
        return total

    def close(self):
        for t, _, _ in self.pending:
            try:
                self.ra.wait(t)
            except engines.EngineError:
                pass
            self.ra.release(t)
        self.pending.clear()
        self.ra.close()
        super().close()


PREFETCH_INTERFACES = ("posix", "posix_direct", "mmap")


def make_reader(cfg, comm, log):
    if cfg.io.interface in ("mpiio", "mpiio_coll"):
        r = MPIReader(cfg, comm, log)
        r.open_all()
        return r
    if cfg.reader.read_threads >= 1 and cfg.io.interface in PREFETCH_INTERFACES:
        return PrefetchReader(cfg, comm, log)
    return Reader(cfg, comm, log)


class Exchange:
    """The gradient exchange closing every step: a barrier, or an MPI_Allreduce of a
    configured size."""

    def __init__(self, comm, nbytes):
        self.comm = comm
        n = max(nbytes // 4, 0)
        self.send = np.ones(n, dtype=np.float32) if n else None
        self.recv = np.empty_like(self.send) if n else None

    def __call__(self):
        if self.send is None:
            self.comm.Barrier()
        else:
            from mpi4py import MPI
            self.comm.Allreduce(self.send, self.recv, op=MPI.SUM)


def _log_totals(log):
    """(bytes, operations, histogram) of the reads in the finalized op log and its overflow."""
    log.finalize()
    ops = log.arrays()
    reads = ops["op"] == engines.OP["read"]
    over = log.overflow_totals().get("read", (0, 0))
    return (int(ops["bytes"][reads].sum()) + over[1], int(reads.sum()) + over[0],
            log.histogram(op="read"))


def step_histogram(seconds):
    """Counts of step durations in the op log's latency buckets (uint64, summable)."""
    buckets = [engines.hist_bucket(int(x * 1e9)) for x in seconds]
    return np.bincount(buckets, minlength=engines.HIST_BUCKETS).astype(np.uint64)


def load_into_memory(cfg, comm, reader, log):
    """io.read_type=memory: the rank reads its whole input at start, file by file, in
    transfer-size pieces, as applications that load a CSV or NPZ dataset do. Returns the load
    phase's numbers, as an epoch entry with epoch=-1."""
    share = sampler.memory_share(cfg.num_samples, comm.Get_size(), comm.Get_rank(),
                                 cfg.io.layout)
    files, offs = sampler.locate(share, reader.spf, reader.rec)
    comm.Barrier()
    t0 = time.perf_counter()
    for f in np.unique(files):
        sel = offs[files == f]
        lo, hi = int(sel.min()), int(sel.max()) + reader.rec
        buf = engines.aligned_empty(hi - lo, 4096)
        reader._open(int(f)).readv([lo], [hi - lo], xfer=reader.xfer, out=buf, exact=True)
    wall = time.perf_counter() - t0
    moved, nops, hist = _log_totals(log)
    return {"epoch": -1, "steps": 0, "samples": int(share.size), "wall_s": wall,
            "io_wait_s": wall, "compute_s": 0.0, "first_step_io_s": wall, "bytes_moved": moved,
            "read_ops": nops, "latency_hist": hist, "step_wait_hist": step_histogram([])}


def run_epochs(cfg, comm, log, progress=None):
    """Run the training loop; returns this rank's per-epoch numbers and, with io.keep_oplog,
    the op log arrays of each epoch."""
    rank, size = comm.Get_rank(), comm.Get_size()
    reader = make_reader(cfg, comm, log)
    exchange = Exchange(comm, cfg.io.allreduce_bytes)
    rng = np.random.default_rng([cfg.train.seed, rank])
    shuffle = cfg.reader.sample_shuffle != "off"
    max_steps = cfg.train.total_training_steps
    done_steps = 0
    epochs, oplogs = [], []
    in_memory = cfg.io.read_type == "memory"
    try:
        if in_memory:
            epochs.append(load_into_memory(cfg, comm, reader, log))
            if cfg.io.keep_oplog:
                oplogs.append({k: np.array(v) for k, v in log.arrays().items()})
            log.reset()
        for epoch in range(cfg.train.epochs):
            if 0 <= max_steps <= done_steps:
                break
            seed_epoch = epoch if cfg.train.seed_change_epoch else 0
            plan = sampler.rank_samples(cfg.num_samples, size, rank, cfg.reader.batch_size,
                                        seed_epoch, cfg.train.seed, shuffle, cfg.io.remainder,
                                        cfg.io.layout, cfg.io.read_type)
            if max_steps >= 0:
                plan = plan[:max_steps - done_steps]
            sleeps = timing.draw(cfg.train.computation_time, rng, len(plan),
                                 cfg.train.computation_time_stdev)
            comm.Barrier()
            if isinstance(reader, PrefetchReader):
                reader.start_epoch(plan)
            t_start = time.perf_counter()
            io_wait = compute = first_io = 0.0
            waits = np.zeros(len(plan))
            for step, batch in enumerate(plan):
                t0 = time.perf_counter()
                if not in_memory:
                    reader.read_batch(batch)
                t1 = time.perf_counter()
                if step == 0:
                    first_io = t1 - t0
                io_wait += t1 - t0
                waits[step] = t1 - t0
                if sleeps[step] > 0:
                    time.sleep(sleeps[step])
                compute += time.perf_counter() - t1
                exchange()
                if progress and rank == 0:
                    progress(epoch, step + 1, len(plan))
            wall = time.perf_counter() - t_start
            done_steps += len(plan)
            moved, nops, hist = _log_totals(log)
            epochs.append({"epoch": epoch, "steps": len(plan), "samples": int(plan.size),
                           "wall_s": wall, "io_wait_s": io_wait, "compute_s": compute,
                           "first_step_io_s": first_io, "bytes_moved": moved,
                           "read_ops": nops, "latency_hist": hist,
                           "step_wait_hist": step_histogram(waits)})
            if cfg.io.keep_oplog:
                oplogs.append({k: np.array(v) for k, v in log.arrays().items()})
            log.reset()
    finally:
        reader.close()
    return epochs, oplogs

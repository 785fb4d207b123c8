"""The per-rank training loop: each epoch, read the rank's batches through the configured
interface, emulate compute, join the gradient exchange (a barrier), and measure."""
import os
import time

import numpy as np

from dlio_mpi import datagen, engines, sampler


class Reader:
    """Opens dataset files lazily through one interface and reads a batch's byte ranges."""

    def __init__(self, cfg, comm, log):
        self.cfg, self.comm, self.log = cfg, comm, log
        self.handles = {}
        self.files = cfg.num_files
        self.buf = engines.aligned_empty(cfg.batch_size * cfg.record_bytes, 4096)

    def _open(self, i):
        h = self.handles.get(i)
        if h is None:
            path = os.path.join(self.cfg.data_dir, datagen.file_name(i))
            kind = self.cfg.interface
            if kind == "stdio":
                h = engines.StdioFile(path, file_id=i, oplog=self.log)
            else:
                h = engines.PosixFile(path, direct=kind == "posix_direct", mmap=kind == "mmap",
                                      file_id=i, oplog=self.log)
            self.handles[i] = h
        return h

    def read_batch(self, samples):
        files, offs = sampler.locate(samples, self.cfg.samples_per_file, self.cfg.record_bytes)
        n = self.cfg.record_bytes
        total = 0
        pos = 0
        for f in np.unique(files):
            sel = files == f
            k = int(sel.sum())
            _, got = self._open(int(f)).readv(offs[sel], np.full(k, n), xfer=self.cfg.transfer_size,
                                              out=self.buf[pos:pos + k * n], exact=True)
            total += got
            pos += k * n
        return total

    def close(self):
        for h in self.handles.values():
            h.close()
        self.handles.clear()


class CollectiveReader(Reader):
    """Every batch's ranges of one file per call through MPI-IO; with interface mpiio_coll the
    ranks read the file collectively. Files are opened on the communicator of all ranks."""

    def _open(self, i):
        h = self.handles.get(i)
        if h is None:
            path = os.path.join(self.cfg.data_dir, datagen.file_name(i))
            h = engines.MPIFile(self.comm, path, hints=self.cfg.mpiio_hints, file_id=i,
                                oplog=self.log)
            self.handles[i] = h
        return h

    def read_batch(self, samples):
        files, offs = sampler.locate(samples, self.cfg.samples_per_file, self.cfg.record_bytes)
        n = self.cfg.record_bytes
        if self.cfg.interface == "mpiio":
            return super().read_batch(samples)
        # collective: all ranks walk every file the step touches anywhere, in the same order
        touched = np.unique(np.concatenate(self.comm.allgather(np.unique(files))))
        total = pos = 0
        for f in touched:
            sel = files == f
            k = int(sel.sum())
            _, got = self._open(int(f)).read_all(offs[sel], np.full(k, n),
                                                 out=self.buf[pos:pos + k * n])
            total += got
            pos += k * n
        return total

    def close(self):
        # collective close, in the same order on every rank
        for i in sorted(self.handles):
            self.handles[i].close()
        self.handles.clear()


def _collective_open_all(reader, cfg):
    """MPI-IO opens are collective: every rank opens every file, in order, before reading."""
    for i in range(cfg.num_files):
        reader._open(i)


def run_epochs(cfg, comm, log, progress=None):
    """Run the training loop; returns a list of per-epoch dicts (this rank's numbers) and the
    op log arrays per epoch (when cfg.keep_oplog)."""
    rank, size = comm.Get_rank(), comm.Get_size()
    mpi = cfg.interface in ("mpiio", "mpiio_coll")
    reader = CollectiveReader(cfg, comm, log) if mpi else Reader(cfg, comm, log)
    if mpi:
        _collective_open_all(reader, cfg)
    epochs, oplogs = [], []
    try:
        for epoch in range(cfg.epochs):
            plan = sampler.rank_samples(cfg.num_samples, size, rank, cfg.batch_size, epoch,
                                        cfg.seed, cfg.shuffle)
            comm.Barrier()
            t_start = time.perf_counter()
            io_wait = compute = 0.0
            first_io = None
            nbytes = 0
            for step, batch in enumerate(plan):
                t0 = time.perf_counter()
                nbytes += reader.read_batch(batch)
                t1 = time.perf_counter()
                if step == 0:
                    first_io = t1 - t0
                io_wait += t1 - t0
                if cfg.computation_time > 0:
                    time.sleep(cfg.computation_time)
                t2 = time.perf_counter()
                compute += t2 - t1
                comm.Barrier()          # the gradient exchange
                if progress and rank == 0:
                    progress(epoch, step + 1, len(plan))
            wall = time.perf_counter() - t_start
            epochs.append({"epoch": epoch, "steps": len(plan), "samples": int(plan.size),
                           "bytes": nbytes, "wall_s": wall, "io_wait_s": io_wait,
                           "compute_s": compute, "first_step_io_s": first_io or 0.0})
            log.finalize()
            ops = log.arrays()
            reads = ops["op"] == engines.OP["read"]
            moved = int(ops["bytes"][reads].sum()) + log.overflow_totals().get("read", (0, 0))[1]
            epochs[-1]["bytes_moved"] = moved
            epochs[-1]["read_ops"] = int(reads.sum()) + log.overflow_totals().get("read", (0, 0))[0]
            epochs[-1]["latency_hist"] = log.histogram(op="read")
            if cfg.keep_oplog:
                oplogs.append({k: np.array(v) for k, v in log.arrays().items()})
            log.reset()
    finally:
        reader.close()
    return epochs, oplogs

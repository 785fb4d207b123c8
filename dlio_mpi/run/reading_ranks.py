"""reader.reading_ranks: the data read by the first K ranks of the job alone, the others
training on what those ranks read without touching the files (a program whose rank 0 loads
the samples and broadcasts them, IOR's -N, h5bench's read made by rank 0).

The reading ranks have a communicator of their own, over which they share the epoch's samples
(and write the data with io.write_first) exactly as a job of K ranks would; every rank, reading
or not, runs the same steps (those of the K readers) with the same compute and the same
exchange over the whole job, and the same checkpoints."""
import numpy as np

from dlio_mpi.data import sampler


def count(cfg, size):
    """The ranks that read data, of a job of ``size`` ranks."""
    k = cfg.reader.reading_ranks
    return size if k <= 0 or k >= size else k


def split(cfg, comm):
    """(the communicator of the reading ranks or None, that of the others or None): this
    rank's group's own, the other None (``comm`` itself for the readers when every rank
    reads). Collective over ``comm``."""
    k = count(cfg, comm.Get_size())
    if k == comm.Get_size():
        return comm, None
    reads = comm.Get_rank() < k
    mine = comm.Split(0 if reads else 1, comm.Get_rank())
    return (mine, None) if reads else (None, mine)


def open_once(cfg, comm, log):
    """reader.idle_ranks_open: a rank that reads no data opens every data file once and
    closes it, through the run's interface, as a program whose every rank opens the data
    that one of them reads (h5bench's cross-stencil read: H5Fopen on every rank); ``comm``
    the non-reading ranks', over which a shared file is opened together."""
    from dlio_mpi import backends
    from dlio_mpi.readers.reader import H5Reader, MPIReader, Reader
    b = backends.of(cfg)
    if b.library == backends.HDF5:
        kind = H5Reader
    elif b.library == backends.MPIIO and cfg.io.layout != "multi":
        kind = MPIReader
    else:
        kind = Reader
    reader = kind(cfg, comm, log)
    try:
        for i in range(reader.data.num_files):
            reader.open_file(i)
    finally:
        reader.close()


def idle_plan(cfg, size, batch):
    """The epoch of a rank that reads nothing: the readers' steps, no sample in them."""
    k = count(cfg, size)
    io = cfg.io
    steps = sampler.steps_per_epoch(cfg.num_samples, k, batch, io.remainder, io.layout,
                                    io.read_type)
    return np.zeros((steps, 0), dtype=np.int64)


class NoReads:
    """The reader of a rank that reads no data: every step's batch comes from another rank."""

    ep = None
    data = None
    max_open = 0

    def plan_epoch(self, plan, files=None):
        pass

    def start_epoch(self, plan, files=None, fill=True):
        pass

    def read_batch(self, samples):
        pass

    def preprocess_inline(self, n):
        return 0.0

    def refill(self):
        pass

    def close(self):
        pass


def idle_phase(phase, epoch, log):
    """A phase's numbers for a rank that took no part in it (io.write_first's writes, the
    in-memory load): nothing moved, in the same entry the others make, so that the job's
    figures gather the same phases from every rank."""
    from dlio_mpi import engines
    hist = np.zeros(engines.HIST_BUCKETS, np.uint64)
    entry = {"phase": phase, "epoch": epoch, "steps": 0, "samples": 0, "wall_s": 0.0,
             "io_wait_s": 0.0, "compute_s": 0.0, "first_step_io_s": 0.0, "bytes_moved": 0,
             "read_ops": 0, "latency_hist": hist.copy(), "step_wait_hist": hist.copy()}
    if phase == "write":
        entry["write_ops"] = 0
    log.finalize()
    return entry

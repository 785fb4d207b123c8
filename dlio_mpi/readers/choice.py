"""The reader a run's configuration gets: volumes, a read pattern other than per sample, HDF5
rows, a shared MPI-IO file or POSIX/STDIO ranges, read ahead by C threads where the run has
them."""
import fcntl
import os
import resource

from dlio_mpi import backends
from dlio_mpi.readers.reader import H5Reader, MPIReader, Reader


def make_reader(cfg, comm, log, split="train"):
    """The reader of split's files for this rank (modules imported when a run needs them), with
    room in the process's descriptor table for the files it keeps open (reserve_descriptors)."""
    reader = _make(cfg, comm, log, split)
    inner = getattr(reader, "inner", reader)
    reserve_descriptors(min(inner.max_open, inner.data.num_files))
    return reader


def reserve_descriptors(n):
    """Grow this process's table of file descriptors now, before any step, so that n more
    files can be open. The kernel grows the table when a descriptor falls beyond it, doubling
    it, and in a process with threads each growth waits for an RCU grace period: 10-15 ms
    inside the open of one step (cosmoflow at 16 ranks on 2 cores, a new file a step, the
    files kept open: the epochs where the table passed 256 and 512 descriptors had AU 66-68 %,
    the others 75-79 %). One descriptor taken at the top of the range and given back grows it
    once (the table never shrinks). Best effort: returns that descriptor, or -1 (nothing to
    do, the open-file limit is lower, or no descriptor was free: the opens then grow the table
    as before, and a real shortage is reported where a file is opened)."""
    if n < 1:
        return -1
    try:
        fd = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return -1
    try:
        want = fd + n + 16              # and a few for the run's own files (outputs, logs)
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY:
            want = min(want, soft - 1)
        if want <= fd:
            return -1
        top = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, want)
        os.close(top)
        return top
    except OSError:
        return -1
    finally:
        os.close(fd)


def _make(cfg, comm, log, split):
    b = backends.of(cfg)
    if cfg.dataset.volume_shape:
        from dlio_mpi.readers.volume_reader import VolumeReader
        return VolumeReader(cfg, comm, log, split)
    if cfg.reader.access != "sample":
        from dlio_mpi.readers.pattern_reader import PatternReader
        return PatternReader(cfg, comm, log, split)
    if b.library == backends.HDF5:
        inner = H5Reader(cfg, comm, log, split)
    elif b.library == backends.MPIIO and cfg.io.layout != "multi":
        inner = MPIReader(cfg, comm, log, split)
    else:
        inner = Reader(cfg, comm, log, split)
    from dlio_mpi.readers.prefetch import PrefetchReader, read_ahead_threads
    if read_ahead_threads(cfg):
        return PrefetchReader(cfg, comm, log, inner)
    return inner

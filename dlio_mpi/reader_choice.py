"""The reader a run's configuration gets: volumes, a read pattern other than per sample, HDF5
rows, a shared MPI-IO file or POSIX/STDIO ranges, read ahead by C threads where the run has
them."""
from dlio_mpi.readers import H5Reader, MPIReader, Reader


def make_reader(cfg, comm, log, split="train"):
    """The reader of split's files for this rank (modules imported when a run needs them)."""
    kind = cfg.io.interface
    if cfg.dataset.volume_shape:
        from dlio_mpi.volume_reader import VolumeReader
        return VolumeReader(cfg, comm, log, split)
    if cfg.reader.access != "sample":
        from dlio_mpi.pattern_reader import PatternReader
        return PatternReader(cfg, comm, log, split)
    if kind.startswith("hdf5"):
        inner = H5Reader(cfg, comm, log, split)
    elif kind in ("mpiio", "mpiio_coll") and cfg.io.layout != "multi":
        inner = MPIReader(cfg, comm, log, split)
    else:
        inner = Reader(cfg, comm, log, split)
    from dlio_mpi.prefetch import PrefetchReader, read_ahead_threads
    if read_ahead_threads(cfg):
        return PrefetchReader(cfg, comm, log, inner)
    return inner

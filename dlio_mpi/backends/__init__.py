"""The I/O interfaces a run reads and writes through (io.interface), one Backend each,
registered by name: what the application calls (the library), the traits the rest of the
emulator asks about (collective calls, O_DIRECT, a buffered file, where its calls show in the
op log and in Darshan), and how a file is opened through it. Nothing outside this module
compares an interface's name: it asks the backend.

    from dlio_mpi import backends
    b = backends.of(cfg)                # the run's io.interface
    if b.collective: ...
    h = b.open_read(path, io=cfg.io, comm=comm, file_id=3, oplog=log)

Adding an interface is one entry here (and its engine in csrc/ and dlio_mpi/engines/)."""
import os
from dataclasses import dataclass

POSIX, STDIO, MPIIO, HDF5, URING = "POSIX", "STDIO", "MPI-IO", "HDF5", "io_uring"

# io.fadvise: the advice a POSIX file is opened with
ADVICE = {"none": None, "normal": os.POSIX_FADV_NORMAL, "sequential": os.POSIX_FADV_SEQUENTIAL,
          "random": os.POSIX_FADV_RANDOM, "willneed": os.POSIX_FADV_WILLNEED}


@dataclass(frozen=True)
class Backend:
    """An io.interface.

    name         its io.interface value
    library      what the application calls: POSIX, STDIO, MPI-IO, HDF5 or io_uring (a
                 queue of transfers in flight, submitted and completed apart)
    oplog        the op log's interface of its reads and writes
    darshan      the Darshan modules its calls show in, the application's own first
    byte_ranges  it reads byte ranges of a file (HDF5: rows of a dataset)
    direct       O_DIRECT: offsets, lengths and buffers aligned to the file system's blocks
    mapped       reads are copies out of a memory mapping (no call per read)
    collective   every rank enters each read call, in the same order
    hdf5_driver  libhdf5's file driver: "mpio" (MPI-IO), "sec2" (POSIX) or "core" (the file
                 read whole at open, the reads served from memory), else None
    buffered     a buffered file as Python's open and C stdio make: what numpy.load and image
                 decoders read through
    reopen       a file may be opened for each sample a loader reads (reader.reopen)
    mpi_threads  its reads from read-ahead threads need MPI_THREAD_MULTIPLE"""
    name: str
    library: str
    oplog: str
    darshan: tuple
    summary: str
    byte_ranges: bool = True
    direct: bool = False
    mapped: bool = False
    collective: bool = False
    hdf5_driver: str = None
    buffered: bool = False
    reopen: bool = False
    mpi_threads: bool = False

    @property
    def threadable(self):
        """Read-ahead threads may read through it (a collective call cannot run in a thread
        beside the rank's own: every rank must enter each in the same order)."""
        return not self.collective

    @property
    def uses_mpi(self):
        """Its calls are MPI-IO's (directly or under libhdf5)."""
        return self.library == MPIIO or self.hdf5_driver == "mpio"

    @property
    def streams(self):
        """It can read a rank's own files as a byte stream (reader.access=stream)."""
        return self.byte_ranges and not self.collective

    @property
    def reads_past_end(self):
        """A read at a file's end is a call that returns no bytes (reader.eof_reads): byte
        ranges through a call per read, without O_DIRECT's alignment."""
        return self.streams and not self.direct and not self.mapped

    def open_read(self, path, *, io, comm=None, file_id=0, oplog=None, dataset=None,
                  shared=False, deferred=False, row_bytes=0, dataset_per_read=False,
                  fields=(), chunk_cache=True):
        """An engine handle of path for reading: through MPI-IO or libhdf5's MPI-IO driver on
        comm where shared (a file all ranks open together), else on the rank's own; HDF5 opens
        `dataset` of the file. deferred (a backend with reopen): a handle the read-ahead thread
        that reads it opens (HDF5: its rows of row_bytes each). dataset_per_read (HDF5): the
        dataset opened anew for each read; fields (HDF5): datasets of further fields read with
        each read of rows; chunk_cache=False (HDF5): its datasets opened without a chunk
        cache."""
        from dlio_mpi import engines
        if deferred and not self.reopen:
            raise ValueError(f"io.interface={self.name} opens no file in a read-ahead thread")
        if self.library == HDF5:
            from mpi4py import MPI
            on = comm if shared else MPI.COMM_SELF
            extra = {"deferred": True, "row_bytes": row_bytes} if deferred else {}
            return engines.H5Dataset(path, dataset, driver=self.hdf5_driver,
                                     comm=on if self.hdf5_driver == "mpio" else None,
                                     collective=self.collective, hints=io.mpiio_hints,
                                     file_id=file_id, oplog=oplog,
                                     dataset_per_read=dataset_per_read, fields=fields,
                                     chunk_cache=chunk_cache, **extra)
        if self.library == MPIIO:
            from mpi4py import MPI
            return engines.MPIFile(comm if shared else MPI.COMM_SELF, path,
                                   hints=io.mpiio_hints, file_id=file_id, oplog=oplog)
        if self.library == STDIO:
            return engines.StdioFile(path, bufsize=io.stdio_buffer, file_id=file_id,
                                     oplog=oplog, deferred=deferred)
        if self.library == URING:
            return engines.UringFile(path, depth=io.queue_depth, file_id=file_id, oplog=oplog)
        return engines.PosixFile(path, direct=self.direct, mmap=self.mapped,
                                 advice=ADVICE[io.fadvise], file_id=file_id, oplog=oplog,
                                 deferred=deferred)

    def open_write(self, path, *, io, comm=None, file_id=0, oplog=None, shared=False):
        """An engine handle of a byte-range file for writing in place (made if missing, not
        truncated): a file of the dataset the run writes first."""
        from dlio_mpi import engines
        if self.library == MPIIO:
            from mpi4py import MPI
            return engines.MPIFile(comm if shared else MPI.COMM_SELF, path, "c",
                                   hints=io.mpiio_hints, file_id=file_id, oplog=oplog)
        if self.library == STDIO:
            return engines.StdioFile(path, "c", bufsize=io.stdio_buffer, file_id=file_id,
                                     oplog=oplog)
        if self.library == URING:
            return engines.UringFile(path, "c", depth=io.queue_depth, file_id=file_id,
                                     oplog=oplog)
        if self.library == POSIX and not self.mapped:
            return engines.PosixFile(path, "c", direct=self.direct, file_id=file_id,
                                     oplog=oplog)
        raise ValueError(f"io.interface={self.name} writes no byte ranges")


BACKENDS = {b.name: b for b in (
    Backend("posix", POSIX, "posix", ("POSIX",), "buffered pread/pwrite", buffered=True,
            reopen=True),
    Backend("posix_direct", POSIX, "posix_direct", ("POSIX",),
            "pread/pwrite with O_DIRECT (aligned)", direct=True),
    Backend("stdio", STDIO, "stdio", ("STDIO",), "fseeko + fread/fwrite", buffered=True,
            reopen=True),
    Backend("mmap", POSIX, "mmap", ("POSIX",), "copies out of a memory mapping",
            mapped=True, reopen=True),
    Backend("mpiio", MPIIO, "mpiio_ind", ("MPI-IO", "POSIX"), "independent MPI-IO",
            mpi_threads=True),
    Backend("mpiio_coll", MPIIO, "mpiio_coll", ("MPI-IO", "POSIX"), "collective MPI-IO",
            collective=True),
    Backend("hdf5", HDF5, "hdf5_ind", ("H5D", "H5F", "MPI-IO", "POSIX"),
            "libhdf5, MPI-IO driver, independent transfers", byte_ranges=False,
            hdf5_driver="mpio", reopen=True, mpi_threads=True),
    Backend("hdf5_coll", HDF5, "hdf5_coll", ("H5D", "H5F", "MPI-IO", "POSIX"),
            "libhdf5, MPI-IO driver, collective transfers", byte_ranges=False,
            hdf5_driver="mpio", collective=True),
    Backend("hdf5_sec2", HDF5, "hdf5_sec2", ("H5D", "H5F", "POSIX"), "libhdf5, sec2 driver",
            byte_ranges=False, hdf5_driver="sec2", reopen=True),
    # h5py's driver='core': one read of the whole file at open, the H5Dread calls copies out
    # of memory (Darshan: the H5D calls, and beneath them only the read at open)
    Backend("hdf5_core", HDF5, "hdf5_sec2", ("H5D", "H5F", "POSIX"),
            "libhdf5, core driver (the file read whole at open)", byte_ranges=False,
            hdf5_driver="core"),
    # Darshan intercepts the open and close of such a file, not the transfers the kernel takes
    # from the ring: its log shows the file with no reads
    Backend("io_uring", URING, "io_uring", ("POSIX",),
            "io_uring (liburing), io.queue_depth transfers in flight per file"),
)}

NAMES = tuple(BACKENDS)


def get(name):
    """The backend of io.interface=name (KeyError naming the known ones)."""
    try:
        return BACKENDS[name]
    except KeyError:
        raise KeyError(f"no io.interface {name!r}: one of {', '.join(NAMES)}") from None


def of(cfg):
    """The backend of a run's configuration."""
    return get(cfg.io.interface)


def collective_writes(cfg):
    """Whether io.write_first's transfers on a shared file are collective: under a collective
    io.interface, or io.write_collective."""
    return of(cfg).collective or cfg.io.write_collective


def names(where):
    """The names of the backends for which where(backend) holds."""
    return [b.name for b in BACKENDS.values() if where(b)]


def listed(where, last="or"):
    """The names of the backends for which where(backend) holds, for a message: "a, b or c"."""
    n = names(where)
    return n[0] if len(n) == 1 else f"{', '.join(n[:-1])} {last} {n[-1]}"

"""The native I/O engines (csrc/ through the Cython module _engines) and names for the op
log's codes (dlio_mpi.run.oplog_format).

    from dlio_mpi.engines import OpLog, PosixFile
    log = OpLog(1 << 16)
    with PosixFile("data.bin", oplog=log, file_id=3) as f:
        buf, n = f.readv([0, 8192], [4096, 4096], xfer=1 << 20)
    ops = log.arrays()          # zero-copy numpy views: start, dur, offset, bytes, file, ...

Importing this module initializes MPI (through mpi4py)."""
from dlio_mpi.engines._engines import (  # noqa: F401
    HIST_BUCKETS,
    IFACES,
    OPS,
    AlignmentError,
    EngineError,
    EpochRequests,
    H5Dataset,
    MPIFile,
    NodeBarrier,
    OpLog,
    STEPS_BOOST_NICE,
    STEPS_CHECK,
    STEPS_DONE,
    STEPS_EXCHANGE,
    STEPS_PREPARE,
    STEPS_SHORT,
    PosixFile,
    ReadAhead,
    ShortReadError,
    StdioFile,
    URING_AVAILABLE,
    UringFile,
    aligned_empty,
    dio_alignment,
    dio_probe,
    end_of_file,
    hdf5_unclosed,
    hist_bucket,
    hist_bucket_bounds,
    mono_ns,
    status_guard_arm,
    status_guard_disarm,
    status_guard_lock,
    status_guard_peers,
    thread_fifo_probe,
    thread_nice_probe,
    thread_slice,
)

import atexit
import os
import sys

from dlio_mpi.run.oplog_format import IFACE, OP  # noqa: F401


def _end_before_hdf5_shutdown():
    """A process holding an HDF5 file whose close failed (engines.hdf5_unclosed) ends here,
    with exit status 1, before mpi4py's MPI_Finalize runs HDF5's shutdown: HDF5 1.10 would
    close that file again from freed memory and segfault. This happens on an error path only
    (the failure was said), where a status other than 1 is not expected."""
    if hdf5_unclosed():
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(1)


# Python's exit handlers run before mpi4py's MPI_Finalize (a C-level exit function)
atexit.register(_end_before_hdf5_shutdown)

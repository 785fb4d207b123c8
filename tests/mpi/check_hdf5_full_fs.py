"""An HDF5 file written collectively onto a file system that rank 0 fills completely, at WHEN:
"before-create" or "after-create" (between the create and the rows' writes). Prints each rank's
errors; the process must then end without a segfault (HDF5 1.10 frees a file whose close fails
but keeps its id, which its shutdown at MPI_Finalize closes again)."""
import os
import sys

import numpy as np
from mpi4py import MPI

from dlio_mpi import engines

comm = MPI.COMM_WORLD
folder, when = sys.argv[1], sys.argv[2]
path = os.path.join(folder, "ckpt.h5")
rows = 1 << 18


def fill():
    """Rank 0 takes every free byte of the file system (large writes, then single bytes)."""
    if comm.rank == 0:
        for name, size in (("fill", 1 << 16), ("fill.tail", 1)):
            fd = os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                pass
            finally:
                os.close(fd)
    comm.Barrier()


if when == "before-create":
    fill()
try:
    h = engines.H5Dataset(path, "checkpoint", driver="mpio", comm=comm, collective=True,
                          create=(rows,), exclusive=True)
except engines.EngineError as e:
    print(f"rank {comm.rank}: create: {e}", flush=True)
else:
    if when == "after-create":
        fill()
    share = rows // comm.size
    try:
        h.write_rows([comm.rank * share], [share], np.ones(share, np.uint8))
    except engines.EngineError as e:
        print(f"rank {comm.rank}: write: {e}", flush=True)
    try:
        h.close()
    except engines.EngineError as e:
        print(f"rank {comm.rank}: close: {e}", flush=True)
print(f"rank {comm.rank}: unclosed {engines.hdf5_unclosed()}", flush=True)

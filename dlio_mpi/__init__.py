"""dlio_mpi: an MPI-native emulator of the I/O that scientific deep-learning training does.

Importing the package does not initialize MPI; the engines (dlio_mpi.engines) do."""
import os

__version__ = "0.1.0"

# A rank does no linear algebra: one BLAS thread, not one per core (each of many ranks on a
# node would otherwise start a thread per core when numpy is imported, at a cost of about
# 0.1 CPU second per rank here). Set before numpy's first import, whether the run starts from
# `python -m dlio_mpi` or the `dlio_mpi` command; a value the user set is kept.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

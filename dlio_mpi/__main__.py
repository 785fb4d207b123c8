import os

# A rank does no linear algebra: one BLAS thread, not one per core (each of many ranks on a
# node would otherwise start a thread per core at start-up). A value the user set is kept.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from dlio_mpi.cli import main  # noqa: E402

if __name__ == "__main__":
    main()

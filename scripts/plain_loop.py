"""The baseline of bench-emulator: a plain Python loop under mpiexec in which rank r opens and
reads whole the files r, r+size, ... of a list, once to warm up, then timed. Prints the samples
per second of the job (files read over the slowest rank's time) on rank 0.

    mpiexec -n 2 python scripts/plain_loop.py FILE..."""
import sys
import time

from mpi4py import MPI


def main():
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    mine = sys.argv[1 + rank::size]
    comm.Barrier()
    t0 = time.perf_counter()
    for path in mine:
        with open(path, "rb") as f:
            f.read()
    dt = comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)
    n = comm.allreduce(len(mine))
    if rank == 0:
        print(f"{n / dt}")


if __name__ == "__main__":
    main()

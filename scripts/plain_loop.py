"""The baseline of bench-emulator: a plain Python loop under mpiexec in which rank r opens and
reads whole the files r, r+size, ... of a list, PASSES times over (the first pass warms the
process up, as the emulator's first epoch does). Prints, on rank 0, the samples per second of
the job in each pass (files read over the slowest rank's time), one number per line.

    mpiexec -n 2 python scripts/plain_loop.py PASSES FILE..."""
import sys
import time

from mpi4py import MPI


def main():
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    passes, files = int(sys.argv[1]), sys.argv[2:]
    mine = files[rank::size]
    n = comm.allreduce(len(mine))
    rates = []
    for _ in range(passes):
        comm.Barrier()
        t0 = time.perf_counter()
        for path in mine:
            with open(path, "rb") as f:
                f.read()
        rates.append(n / comm.allreduce(time.perf_counter() - t0, op=MPI.MAX))
    if rank == 0:
        print("\n".join(f"{r}" for r in rates))


if __name__ == "__main__":
    main()

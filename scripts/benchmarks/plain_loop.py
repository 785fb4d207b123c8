"""The baseline of bench-emulator: a plain Python loop under mpiexec in which rank r opens and
reads whole the files r, r+size, ... of a list, PASSES times over (the first pass warms the
process up, as the emulator's first epoch does). With COMPUTE seconds (optional, as
compute=S before the files) each rank sleeps that long after every BATCH files (4), as a
training step's compute. Prints, on rank 0, the samples per second of the job in each pass
(files read over the slowest rank's time), one number per line.

    mpiexec -n 2 python scripts/benchmarks/plain_loop.py PASSES [compute=S] FILE..."""
import sys
import time

from mpi4py import MPI

BATCH = 4


def main():
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    passes, files = int(sys.argv[1]), sys.argv[2:]
    compute = 0.0
    if files and files[0].startswith("compute="):
        compute, files = float(files[0][len("compute="):]), files[1:]
    mine = files[rank::size]
    n = comm.allreduce(len(mine))
    rates = []
    for _ in range(passes):
        comm.Barrier()
        t0 = time.perf_counter()
        for i, path in enumerate(mine):
            with open(path, "rb") as f:
                f.read()
            if compute and (i + 1) % BATCH == 0:
                time.sleep(compute)
        rates.append(n / comm.allreduce(time.perf_counter() - t0, op=MPI.MAX))
    if rank == 0:
        print("\n".join(f"{r}" for r in rates))


if __name__ == "__main__":
    main()

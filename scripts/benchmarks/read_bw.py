"""Aggregate read bandwidth of the ranks of an mpiexec job over a list of files: every rank
reads every file front to back with preads of BLOCK bytes into one reused, touched, aligned
buffer (4 KiB), starting at its own place in the list, PASSES times; rank 0 prints the bytes read
by all ranks over the slowest rank's time (from a barrier), in bytes/s.

    mpiexec -n N python scripts/benchmarks/read_bw.py PASSES BLOCK DIRECT FILE...
    mpiexec -n N python scripts/benchmarks/read_bw.py PASSES BLOCK DIRECT @LIST   (LIST: a path a line)
"""
import os
import sys
import time

from mpi4py import MPI

from dlio_mpi import engines


def main():
    comm = MPI.COMM_WORLD
    passes, block, direct = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
    files = sys.argv[4:]
    if len(files) == 1 and files[0].startswith("@"):       # a file listing the files
        with open(files[0][1:]) as f:
            files = [ln for ln in f.read().splitlines() if ln]
    buf = engines.aligned_empty(block, 4096)
    buf[:] = 0
    flags = os.O_RDONLY | (os.O_DIRECT if direct else 0)
    start = comm.Get_rank() * len(files) // comm.Get_size()
    comm.Barrier()
    t0 = time.perf_counter()
    total = 0
    for _ in range(passes):
        for i in range(len(files)):
            fd = os.open(files[(start + i) % len(files)], flags)
            try:
                off = 0
                while True:
                    n = os.preadv(fd, [buf], off)
                    off += n
                    if n < block:          # the end of the file (an O_DIRECT read stops there)
                        break
                total += off
            finally:
                os.close(fd)
    dt = time.perf_counter() - t0
    total = comm.allreduce(total)
    wall = comm.allreduce(dt, op=MPI.MAX)
    if comm.Get_rank() == 0:
        print(total / wall)


if __name__ == "__main__":
    main()

"""Run under mpiexec by tests/mpi/test_check_exchange.py: the gradient exchange closing every
step (dlio_mpi.run.training_loop.Exchange), as a barrier and as an MPI_Allreduce, waiting by sleeping or
in the blocking MPI call, then its barrier of all ranks (Exchange.sync, an epoch's start), waited
for the same way. Rank r enters each exchange r * DELAY seconds after the others; every
rank must leave after the last one entered, the allreduce must give the sum over the ranks,
and with wait=sleep the ranks that wait must take less CPU time than a spinning wait.

With GROUPS > 1 the ranks are grouped into GROUPS "nodes" (rank % GROUPS) for the barrier's
path across nodes.

usage: check_exchange.py WAIT NBYTES [GROUPS]"""
import resource
import sys
import time

import numpy as np
from mpi4py import MPI

import abort_on_error

from dlio_mpi.run.exchange import Exchange

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
DELAY = 0.15
ROUNDS = 3


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main():
    wait, nbytes = sys.argv[1], int(sys.argv[2])
    groups = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    ex = Exchange(comm, nbytes, wait, node_color=rank % groups if groups > 1 else None)
    if wait == "sleep" and nbytes == 0:
        assert ex.barrier is not None and ex.nodes == groups, (ex.barrier, ex.nodes)
    waited = cpu = 0.0
    for i in range(2 * ROUNDS):
        call = ex if i < ROUNDS else ex.sync
        if ex.send is not None:
            ex.send[:] = rank + i
        comm.Barrier()
        time.sleep(rank * DELAY)
        entered = time.time()
        c0 = cpu_s()
        call()
        left = time.time()
        cpu += cpu_s() - c0
        waited += left - entered
        last_entry = comm.allreduce(entered, op=MPI.MAX)
        assert left >= last_entry - 1e-3, (rank, left, last_entry)
        if ex.send is not None and call is ex:
            want = sum(r + i for r in range(size))
            assert ex.recv.size == nbytes // 4
            assert np.all(ex.recv == want), (rank, ex.recv[:4], want)
    if wait == "sleep" and rank < size - 1:
        # the first ranks wait (size - 1 - rank) * DELAY a round: a spinning wait takes about
        # that much CPU (measured: 100 %), a sleeping one a part of it (the futex barrier
        # about none, the allreduce tested every 50 us 25-35 %)
        assert cpu < 0.6 * waited, (rank, cpu, waited)
    ex.close()
    print(f"rank {rank}: ok waited {waited:.3f} s, cpu {cpu:.3f} s", flush=True)


abort_on_error.run(main)

"""The gradient exchange closing every training step: a barrier of all ranks, or an
MPI_Allreduce of io.allreduce_bytes.

A rank waits for it without spinning by default (io.exchange_wait=sleep): the accelerators of a
real job exchange gradients (NCCL on the device) without taking the host's cores, while a
blocking MPI call spins on its core (Open MPI, MPICH) and, with more ranks and read threads
than cores, takes the time the read threads need. The barrier is a futex barrier of each
node's ranks in an MPI shared-memory window (engines.NodeBarrier: early ranks sleep in the
kernel, after spinning 20 us when the node has a CPU per rank, and the last one wakes them at
once); across nodes, one rank per node then joins an
MPI_Ibarrier of the nodes, tested every POLL_S seconds with sleeps between, and the node's
ranks wait for it at a second node barrier. An allreduce is MPI_Iallreduce, tested in the same
way. io.exchange_wait=mpi makes the blocking MPI call instead.

Measured on 2 cores (scripts/bench-accelerators' scaled workloads, AU of one run's later
epochs): unet3d at 3 ranks 83 % with the blocking barrier, 91 % with MPI_Ibarrier tested
every 50 us; resnet50 at 8 ranks 87.7 % with the tested MPI call, 91.6 % with the futex
barrier. scripts/bench-emulator (2 ranks, no compute): 0.87x the plain loop with a futex
barrier that sleeps at once, 1.04x with the 20 us spin."""
import os
import time

import numpy as np

from dlio_mpi import engines


def _mpi():
    from mpi4py import MPI
    return MPI


class Exchange:
    """exchange() closes a step; close() frees the shared window (collective). node_color
    (tests): group the ranks into "nodes" by this color instead of by shared memory, to run
    the path across nodes on one host."""

    POLL_S = 50e-6
    SPIN_S = 20e-6

    def __init__(self, comm, nbytes, wait="sleep", node_color=None):
        self.comm = comm
        self.sleep = wait == "sleep"
        n = max(nbytes // 4, 0)
        self.send = np.ones(n, dtype=np.float32) if n else None
        self.recv = np.empty_like(self.send) if n else None
        self.node = self.win = self.barrier = self.leaders = None
        if self.sleep and self.send is None:
            self._node_barrier(node_color)

    def _node_barrier(self, color):
        MPI = _mpi()
        node = (self.comm.Split_type(MPI.COMM_TYPE_SHARED) if color is None
                else self.comm.Split(color, self.comm.Get_rank()))
        win = MPI.Win.Allocate_shared(64 if node.Get_rank() == 0 else 0, 1, comm=node)
        mem, _ = win.Shared_query(0)
        if node.Get_rank() == 0:
            np.frombuffer(mem, dtype=np.uint8)[:] = 0
        node.Barrier()
        self.node, self.win = node, win
        # ranks with a core each (no more ranks than the node's CPUs) spin SPIN_S before they
        # sleep: a futex wake-up costs tens of microseconds, which steps without compute would
        # pay at every step; more ranks than CPUs would take the time from each other
        spin = self.SPIN_S if node.Get_size() <= (os.cpu_count() or 1) else 0.0
        self.barrier = engines.NodeBarrier(mem, node.Get_size(), spin_s=spin)
        leader = node.Get_rank() == 0
        self.nodes = self.comm.allreduce(1 if leader else 0)
        if self.nodes > 1:
            self.leaders = self.comm.Split(0 if leader else MPI.UNDEFINED,
                                           self.comm.Get_rank())

    def _poll(self, req):
        while not req.Test():
            time.sleep(self.POLL_S)

    def _barrier_all(self):
        """The node barrier, and across nodes their leaders' Ibarrier, then the node's."""
        self.barrier.wait()
        if self.nodes > 1:
            if self.leaders != _mpi().COMM_NULL:
                self._poll(self.leaders.Ibarrier())
            self.barrier.wait()

    def sync(self):
        """A barrier of all ranks (an epoch's start), waited for as the exchange waits."""
        if self.barrier is not None:
            self._barrier_all()
        elif not self.sleep:
            self.comm.Barrier()
        else:
            self._poll(self.comm.Ibarrier())

    def __call__(self):
        MPI = _mpi()
        if self.barrier is not None:
            self._barrier_all()
        elif not self.sleep:
            if self.send is None:
                self.comm.Barrier()
            else:
                self.comm.Allreduce(self.send, self.recv, op=MPI.SUM)
        else:
            self._poll(self.comm.Iallreduce(self.send, self.recv, op=MPI.SUM))

    def close(self):
        """Free the node's shared window and communicators (every rank calls it)."""
        if self.win is not None:
            self.barrier = None
            self.win.Free()
            self.node.Free()
            if self.leaders is not None and self.leaders != _mpi().COMM_NULL:
                self.leaders.Free()
            self.win = self.node = self.leaders = None

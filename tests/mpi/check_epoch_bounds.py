"""Run under mpiexec by tests/mpi/test_check_epoch_bounds.py: the training loop
(pipeline.run_epochs) with the C step loop, the last rank late at each epoch's start (2 LATE
seconds of sleep in a spy before steploop.run) and rank 0 late back in Python after each
epoch's steps (LATE after it).

- The C loop waits for the barrier that starts the epoch: no rank's epoch starts
  (EpochRequests.t_start_ns) before the last rank arrived at it, and every rank's first batch
  is queued after that (the op log's first read of the epoch).
- The epoch's time (the phase's wall_s) is from that start to the end of its last step
  (t_end_ns): what a rank does in Python after the steps stays out of it, and the rank that
  waited at the start barrier for the late rank does not count the wait.
- The first step's I/O (first_step_io_s) counts from that start: the files of the epoch's
  first batches (closed after each epoch here) are opened LATE / 2 slowly, and it holds that.
- Every rank reads every sample of its shard once per epoch, as without the delays.

usage: check_epoch_bounds.py DATA_DIR key=value ..."""
import sys
import time

from mpi4py import MPI

import abort_on_error

from dlio_mpi import engines
from dlio_mpi.config import loader as config
from dlio_mpi.data import generation as datagen
from dlio_mpi.run import training_loop as pipeline
from dlio_mpi.readers import prefetch
from dlio_mpi.run import steploop

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
LATE = 0.2


def main():
    data, args = sys.argv[1], sys.argv[2:]
    cfg = config.load([f"dataset.data_folder={data}", "workflow.checkpoint=false",
                       "workflow.evaluation=false", "io.keep_oplog=true"] + args)
    datagen.generate(cfg, comm)
    loops, run, log = [], steploop.run, engines.OpLog(1 << 16)
    prepare, slow = prefetch.PrefetchReader.prepare, []

    def prepare_spy(self, step):        # the first batch's files opened slowly
        if step == 0:
            time.sleep(LATE / 2)
            slow.append(step)
        return prepare(self, step)

    def run_spy(reader, *a, **k):
        if rank == size - 1:
            time.sleep(2 * LATE)
        origin = log.origin_mono_ns
        entered = engines.mono_ns()
        out = run(reader, *a, **k)
        done = engines.mono_ns()
        loops.append((entered, reader.ep.t_start_ns, reader.ep.t_end_ns, done,
                      float(out[1].sum()), origin))
        if rank == 0:
            time.sleep(LATE)
        for f in list(reader.inner.files):    # the next epoch opens its files anew
            reader.inner.reopen(f)
        return out

    steploop.run, prefetch.PrefetchReader.prepare = run_spy, prepare_spy
    try:
        phases, oplogs, _, _ = pipeline.run_epochs(cfg, comm, log)
    finally:
        steploop.run, prefetch.PrefetchReader.prepare = run, prepare
    # every epoch's steps in the loop, the first epoch's from step 1 (step 0 in Python, its
    # start barrier too)
    assert len(loops) == cfg.train.epochs, loops
    every = comm.allgather(loops)
    logs = dict(oplogs)
    for e in range(1, cfg.train.epochs):
        entered, t0, t1, done, compute, origin = loops[e]
        last_in = max(r[e][0] for r in every)
        assert t0 >= last_in, (e, t0, last_in)
        ops = logs[f"train{e}"]
        reads = ops["start"][ops["op"] == engines.OP["read"]] + origin
        assert len(reads) and reads.min() >= t0, (e, reads.min(), t0)
        assert entered <= t0 <= t1 <= done, (entered, t0, t1, done)
        # the first step's I/O (left out of the AU) counts from the epoch's start: the
        # opens of its files, and the queueing, of the first batches
        assert phases[e]["first_step_io_s"] >= LATE / 2, phases[e]
        wall = phases[e]["wall_s"]
        assert abs(wall - (t1 - t0) * 1e-9) < 1e-6, (wall, t0, t1)
        first = phases[e]["first_step_io_s"]
        assert wall - first < LATE / 2 + compute, (wall, first, compute)   # no late rank's
        if rank == 0 and size > 1:
            assert t0 - entered >= LATE * 1e9 * 0.5, (t0, entered)    # it waited
    print(f"rank {rank}: ok", flush=True)


abort_on_error.run(main)

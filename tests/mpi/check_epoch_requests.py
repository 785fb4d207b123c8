"""Run under mpiexec by tests/mpi/test_check_epoch_requests.py: the training loop
(pipeline.run_epochs) of one workload three ways on real files, each rank comparing its op logs:

- queued: every batch's request built when it is queued, the Python step loop (as before
  requests were built per epoch: PrefetchReader._plan_epoch refuses);
- built: the epoch's requests built at start_epoch, the Python step loop (steploop.usable
  refuses);
- loop: built requests and the C step loop (the run's own choice).

Per training epoch the op logs must hold the same operations (op, file, offset, bytes: sorted,
as the read-ahead threads' order varies), the files opened in the same order, and the epoch
the same steps, samples, bytes and read operations; the built ways must have built every
epoch's requests and the loop must have run.

--max-open N: a rank keeps at most N files open (Reader.MAX_OPEN; the read-ahead queue's files
stay open), so that files are closed and opened again within epochs.

usage: check_epoch_requests.py DATA_DIR [--max-open N] key=value ..."""
import sys

from mpi4py import MPI

import abort_on_error
import loop_ways

from dlio_mpi.readers import prefetch
from dlio_mpi.readers import reader as readers

comm = MPI.COMM_WORLD
rank = comm.Get_rank()


def run(cfg, way):
    return loop_ways.run(cfg, comm, way, prefetch.PrefetchReader, "_plan_epoch")


def ops(a):
    rows = zip(a["op"].tolist(), a["file"].tolist(), a["offset"].tolist(), a["bytes"].tolist())
    return sorted(rows, key=lambda r: (r[1], r[0], r[2], r[3]))


def main():
    cfg = loop_ways.load(sys.argv[1:], comm)
    runs = {way: run(cfg, way) for way in ("queued", "built", "loop")}
    for way, name, a, b in loop_ways.compared(runs):
        assert ops(a) == ops(b), (way, name)
        assert loop_ways.opens(a) == loop_ways.opens(b), (way, name)
        if readers.Reader.MAX_OPEN < 20 and name == "train1":
            closes = sum(1 for op, _ in loop_ways.opens(b) if op == loop_ways.CLOSE)
            assert closes > 10, (way, name, closes)    # files closed within the epoch
    print(f"rank {rank}: ok", flush=True)


abort_on_error.run(main)

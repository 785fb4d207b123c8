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

import numpy as np
from mpi4py import MPI

import abort_on_error
import loop_ways

from dlio_mpi import config, datagen, engines, prefetch, readers

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
OPEN, CLOSE = engines.OP["open"], engines.OP["close"]


def run(cfg, way):
    return loop_ways.run(cfg, comm, way, prefetch.PrefetchReader, "_plan_epoch")


def ops(a):
    rows = zip(a["op"].tolist(), a["file"].tolist(), a["offset"].tolist(), a["bytes"].tolist())
    return sorted(rows, key=lambda r: (r[1], r[0], r[2], r[3]))


def opens(a):
    """The files opened and closed, in order (the rank's own thread opens and closes them)."""
    m = (a["op"] == OPEN) | (a["op"] == CLOSE)
    return list(zip(a["op"][m].tolist(), a["file"][m].tolist()))


def main():
    data, args = sys.argv[1], sys.argv[2:]
    if args[0] == "--max-open":
        readers.Reader.MAX_OPEN = int(args[1])
        args = args[2:]
    cfg = config.load([f"dataset.data_folder={data}", "io.keep_oplog=true",
                       "workflow.checkpoint=false", "workflow.evaluation=false"] + args)
    datagen.generate(cfg, comm)
    runs = {way: run(cfg, way) for way in ("queued", "built", "loop")}
    ref_phases, ref_logs, _, _ = runs["queued"]
    for way in ("built", "loop"):
        phases, logs, built, looped = runs[way]
        assert built and all(built), (way, built)
        assert all(looped) == (way == "loop") and any(looped) == (way == "loop"), (way, looped)
        assert sorted(logs) == sorted(ref_logs), (way, sorted(logs))
        for name in ref_logs:
            a, b = ref_logs[name], logs[name]
            assert len(a["op"]) == len(b["op"]) > 0, (way, name, len(a["op"]), len(b["op"]))
            assert ops(a) == ops(b), (way, name)
            assert opens(a) == opens(b), (way, name, opens(a), opens(b))
            if readers.Reader.MAX_OPEN < 20 and name == "train1":
                closes = sum(1 for op, _ in opens(b) if op == CLOSE)
                assert closes > 10, (way, name, closes)    # files closed within the epoch
        for p, q in zip(ref_phases, phases):
            for key in ("phase", "epoch", "steps", "samples", "bytes_moved", "read_ops"):
                assert p[key] == q[key], (way, key, p[key], q[key])
            assert np.isfinite(q["io_wait_s"]) and q["compute_s"] > 0, (way, q)
    print(f"rank {rank}: ok", flush=True)


abort_on_error.run(main)

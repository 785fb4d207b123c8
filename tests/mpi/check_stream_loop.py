"""Run under mpiexec by tests/mpi/test_check_stream_loop.py: the training loop
(pipeline.run_epochs) of a stream (reader.access=stream, read ahead) three ways on real files,
each rank comparing its op logs:

- queued: requests queued step by step from Python (PatternReader._builds refuses);
- built: the epoch's requests built before it (epoch_requests.EpochQueue over the stream's
  plan), the Python step loop (steploop.usable refuses);
- loop: built requests and the C step loop (the run's own choice).

Per training epoch every file's reads must be the plan's, in its order (a stream's reads reach
the file system as its one reader issues them, whichever thread reads them: none begins
before the one before it ended), and the same
in all three ways; the files opened and closed in the same order; the epoch the same steps,
samples, bytes and read operations. The built ways must have built every epoch's requests and
the loop must have run.

--max-open N: a rank keeps at most N files open (Reader.MAX_OPEN).

usage: check_stream_loop.py DATA_DIR [--max-open N] key=value ..."""
import sys

import numpy as np
from mpi4py import MPI

import abort_on_error
import loop_ways

from dlio_mpi import engines
from dlio_mpi.readers import pattern_reader

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
READ = engines.OP["read"]


def run(cfg, way):
    plans = []
    out = loop_ways.run(cfg, comm, way, pattern_reader.PatternReader, "_builds",
                        lambda reader: plans.append(reader.reads))
    return (*out, plans)


def per_file(a):
    """Each file's reads (offset, bytes) in the order they were issued."""
    m = a["op"] == READ
    out = {}
    for f, o, n in zip(a["file"][m].tolist(), a["offset"][m].tolist(), a["bytes"][m].tolist()):
        out.setdefault(f, []).append((o, n))
    return out


SLACK_NS = 100      # the op log's times are rounded to the ns on both ends


def overlaps(a):
    """Reads of a file that began before the one issued before them had ended."""
    m = a["op"] == READ
    last, n = {}, 0
    for f, t, d in zip(a["file"][m].tolist(), a["start"][m].tolist(), a["dur"][m].tolist()):
        if f in last and t < last[f] - SLACK_NS:
            n += 1
        last[f] = max(last.get(f, 0), t + d)
    return n


def main():
    cfg = loop_ways.load(sys.argv[1:], comm, "reader.access=stream")
    runs = {way: run(cfg, way) for way in ("queued", "built", "loop")}
    _, ref_logs, _, _, plans = runs["queued"]
    names = [n for n in ref_logs if n.startswith("train")]
    assert len(names) == cfg.train.epochs and len(plans) >= len(names), (names, len(plans))
    empty = 0
    for name, plan in zip(names, plans):
        # what the file system must see: the plan's reads, each file's in order; a read at
        # a file's end returns nothing
        want = {}
        for f, o, n in zip(plan.file.tolist(), plan.offset.tolist(), plan.length.tolist()):
            size = engines_size(cfg, f)
            want.setdefault(f, []).append((o, max(0, min(o + n, size) - o)))
        assert per_file(ref_logs[name]) == want, name
        empty += int((np.diff(plan.first) == 0).sum())
    for way, name, a, b in loop_ways.compared(runs):
        assert per_file(a) == per_file(b), (way, name)
        assert overlaps(b) == 0, (way, name, overlaps(b))
        assert loop_ways.opens(a) == loop_ways.opens(b), (way, name)
    print(f"rank {rank}: ok, {empty} steps without reads", flush=True)


_sizes = {}


def engines_size(cfg, f):
    if f not in _sizes:
        from dlio_mpi.data.dataset import Dataset
        _sizes[f] = Dataset(cfg).index(int(f)).file_size
    return _sizes[f]


abort_on_error.run(main)

"""The training loop (pipeline.run_epochs) run one of three ways, for the checks that compare
them (check_epoch_requests.py, check_stream_loop.py): requests queued step by step from
Python ("queued": the reader's hook that builds an epoch's requests refuses), built but run by
the Python step loop ("built": steploop.usable refuses), or built and run by the C step loop
("loop": the run's own choice)."""
import numpy as np

from dlio_mpi import engines
from dlio_mpi.config import loader as config
from dlio_mpi.data import generation as datagen
from dlio_mpi.run import training_loop as pipeline
from dlio_mpi.readers import reader as readers
from dlio_mpi.run import steploop

OPEN, CLOSE = engines.OP["open"], engines.OP["close"]


def load(argv, comm, *extra):
    """The configuration of `DATA_DIR [--max-open N] key=value ...` (with --max-open a rank
    keeps at most N files open: Reader.MAX_OPEN), its dataset generated."""
    data, args = argv[0], argv[1:]
    if args[0] == "--max-open":
        readers.Reader.MAX_OPEN = int(args[1])
        args = args[2:]
    cfg = config.load([f"dataset.data_folder={data}", "io.keep_oplog=true",
                       "workflow.checkpoint=false", "workflow.evaluation=false", *extra]
                      + args)
    datagen.generate(cfg, comm)
    return cfg


def opens(a):
    """The files opened and closed, in order (the rank's own thread opens and closes them)."""
    m = (a["op"] == OPEN) | (a["op"] == CLOSE)
    return list(zip(a["op"][m].tolist(), a["file"][m].tolist()))


def compared(runs, ref="queued"):
    """(way, phase name, reference op log, its op log) of every phase of the built ways, once
    each way is found to have built its requests (and run the C loop, or not) and to have
    the reference's phases with as many operations; then their phases' figures are checked
    (same_phases)."""
    ref_phases, ref_logs = runs[ref][0], runs[ref][1]
    for way in ("built", "loop"):
        phases, logs, built, looped = runs[way][:4]
        assert built and all(built), (way, built)
        assert all(looped) == (way == "loop") and any(looped) == (way == "loop"), (way, looped)
        assert sorted(logs) == sorted(ref_logs), (way, sorted(logs))
        for name in ref_logs:
            a, b = ref_logs[name], logs[name]
            assert len(a["op"]) == len(b["op"]) > 0, (way, name, len(a["op"]), len(b["op"]))
            yield way, name, a, b
        same_phases(ref_phases, phases, way)


def same_phases(ref, phases, way):
    """The phases' steps, samples, bytes and read operations as the reference's."""
    for p, q in zip(ref, phases):
        for key in ("phase", "epoch", "steps", "samples", "bytes_moved", "read_ops"):
            assert p[key] == q[key], (way, key, p[key], q[key])
        assert np.isfinite(q["io_wait_s"]) and q["compute_s"] > 0, (way, q)


def run(cfg, comm, way, cls, hook, seen=None):
    """pipeline.run_epochs(cfg) with cls.hook (the reader's method that builds an epoch's
    requests, true when it did) and steploop.usable as `way` has them. Returns (phases, op
    logs by phase, the hook's answers, usable's answers); seen(reader) is called at each
    call of the hook."""
    build, usable = getattr(cls, hook), steploop.usable
    built, looped = [], []

    def build_spy(self, *a):
        ok = way != "queued" and build(self, *a)
        built.append(ok)
        if seen is not None:
            seen(self)
        return ok

    def usable_spy(*a):
        ok = way == "loop" and usable(*a)
        looped.append(ok)
        return ok

    setattr(cls, hook, build_spy)
    steploop.usable = usable_spy
    try:
        log = engines.OpLog(1 << 20)
        phases, oplogs, _, _ = pipeline.run_epochs(cfg, comm, log)
    finally:
        setattr(cls, hook, build)
        steploop.usable = usable
    return phases, dict(oplogs), built, looped

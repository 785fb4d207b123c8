"""The training loop (pipeline.run_epochs) run one of three ways, for the checks that compare
them (check_epoch_requests.py, check_stream_loop.py): requests queued step by step from
Python ("queued": the reader's hook that builds an epoch's requests refuses), built but run by
the Python step loop ("built": steploop.usable refuses), or built and run by the C step loop
("loop": the run's own choice)."""
from dlio_mpi import engines, pipeline, steploop


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

"""Run under mpiexec by tests/mpi/test_check_rank_priority.py: the training loop
(pipeline.run_epochs, the C step loop) with io.rank_priority, while a thread of each rank reads
every thread's scheduling policy and nice value from /proc every half millisecond. The read
threads' preprocessing outlasts the compute, so that batches fall behind.

granted: the rank's thread runs under SCHED_FIFO inside the C loop of the epochs whose files
are all open (not the first, which opens them: those opens run under the thread's own policy),
the read-ahead threads never do, and after the run, and after an error raised in Python between
steps (rank 0's progress, on 1 rank), the thread has its policy and time slice back; the read
threads catch up at nice engines.STEPS_BOOST_NICE there, and have their own nice back after
that error.
refused (ranks launched without CAP_SYS_NICE, RLIMIT_RTPRIO 0): run_facts notes why, and the
loop runs under the thread's own policy; the epochs are the same; no thread is boosted.
no_boost (without CAP_SYS_NICE, RLIMIT_RTPRIO 99, RLIMIT_NICE 0): the loop runs under
SCHED_FIFO, the read threads at their own nice value, and run_facts notes why.

usage: check_rank_priority.py DATA_DIR granted|refused|no_boost key=value ..."""
import errno
import glob
import os
import sys
import threading
import time

from mpi4py import MPI

import abort_on_error

from dlio_mpi import engines
from dlio_mpi.config import loader as config
from dlio_mpi.data import generation as datagen
from dlio_mpi.run import training_loop as pipeline
from dlio_mpi.readers import prefetch
from dlio_mpi.readers import choice as reader_choice
from dlio_mpi.run import facts as run_facts

comm = MPI.COMM_WORLD
rank = comm.Get_rank()


def policies():
    """{thread id: (scheduling policy, nice value)} of this process's threads (/proc, stat
    fields 41 and 19)."""
    out = {}
    for path in glob.glob(f"/proc/{os.getpid()}/task/*/stat"):
        try:
            with open(path) as f:
                stat = f.read()
        except OSError:
            continue                    # a thread that ended
        fields = stat[stat.rindex(")") + 2:].split()
        out[int(path.split("/")[-2])] = (int(fields[38]), int(fields[16]))
    return out


def slice_ns(tid):
    with open(f"/proc/{os.getpid()}/task/{tid}/sched") as f:
        return next(int(float(ln.split(":")[1])) for ln in f if ln.startswith("se.slice"))


def main():
    data, mode, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    cfg = config.load([f"dataset.data_folder={data}", "workflow.checkpoint=false",
                       "workflow.evaluation=false"] + args)
    datagen.generate(cfg, comm)
    main_tid = threading.get_native_id()
    engines.thread_slice(200e-6)
    before = (os.sched_getscheduler(0), slice_ns(main_tid))
    fact = run_facts.rank_priority(cfg, comm)

    seen, nices, stop = {}, {}, threading.Event()

    def poll():
        while not stop.is_set():
            for tid, (pol, nice) in policies().items():
                seen.setdefault(tid, set()).add(pol)
                nices.setdefault(tid, set()).add(nice)
            time.sleep(0.0005)

    in_python = []
    prepare = prefetch.PrefetchReader.prepare

    def prepare_spy(self, step):
        in_python.append(os.sched_getscheduler(0))
        return prepare(self, step)

    poller = threading.Thread(target=poll)
    poller.start()
    prefetch.PrefetchReader.prepare = prepare_spy
    try:
        phases, _, _, _ = pipeline.run_epochs(cfg, comm, engines.OpLog(1 << 16))
    finally:
        prefetch.PrefetchReader.prepare = prepare
        stop.set()
        poller.join()
    others = {tid: pols for tid, pols in seen.items() if tid not in (main_tid, poller.native_id)}
    assert len(others) >= cfg.reader.read_threads, others
    assert all(pols == {os.SCHED_OTHER} for pols in others.values()), others
    boosted = {tid for tid in others if engines.STEPS_BOOST_NICE in nices[tid]}
    assert all(nices[tid] <= {0, engines.STEPS_BOOST_NICE} for tid in others), nices
    assert nices[main_tid] == {0}, nices[main_tid]
    assert in_python and set(in_python) == {os.SCHED_OTHER}, in_python
    assert os.sched_getscheduler(0) == before[0], "the thread was left under SCHED_FIFO"
    assert slice_ns(main_tid) == before[1], before
    steps = phases[0]["steps"]
    assert len(phases) == cfg.train.epochs and all(p["steps"] == steps > 0 for p in phases)
    if mode == "granted":
        assert fact == {"rank_priority": cfg.io.rank_priority,
                        "read_boost_nice": engines.STEPS_BOOST_NICE}, fact
        assert os.SCHED_FIFO in seen[main_tid], seen[main_tid]
        assert len(boosted) >= cfg.reader.read_threads, nices
        if comm.Get_size() == 1:
            failing_progress(cfg, before, main_tid)
    elif mode == "no_boost":
        assert fact["rank_priority"] == cfg.io.rank_priority, fact
        assert fact["read_boost_nice"] == 0, fact
        note = fact["read_boost_note"]
        assert note.startswith(f"read threads behind: setpriority (nice "
                               f"{engines.STEPS_BOOST_NICE}): "), note
        assert os.strerror(errno.EACCES) in note and "\n" not in note, note
        assert os.SCHED_FIFO in seen[main_tid], seen[main_tid]
        assert not boosted, nices
    else:
        assert not boosted, nices
        assert fact["read_boost_nice"] == 0, fact
        assert fact["rank_priority"] == 0, fact
        note = fact["rank_priority_note"]
        assert note.startswith(f"io.rank_priority={cfg.io.rank_priority}: sched_setattr"), note
        assert os.strerror(errno.EPERM) in note and "\n" not in note, note
        assert seen[main_tid] == {os.SCHED_OTHER}, seen[main_tid]
    print(f"rank {rank}: ok", flush=True)


def failing_progress(cfg, before, main_tid):
    """An error raised in Python between the steps of an epoch run under SCHED_FIFO (the
    progress shown from inside the loop), its read threads boosted: the thread leaves the loop
    with its own policy and slice, the read threads with their own nice value."""
    seen, reads = [], []

    def progress(epoch, at, total):
        if epoch >= 1 and at < total:
            seen.append(os.sched_getscheduler(0))
            reads.extend(tid for tid, (_, nice) in policies().items()
                         if nice == engines.STEPS_BOOST_NICE)
            raise RuntimeError("progress failed")

    readers, make = [], reader_choice.make_reader

    def keep_reader(*args):         # its threads outlive the error, to be looked at
        readers.append(make(*args))
        return readers[-1]

    reader_choice.make_reader = keep_reader
    try:
        pipeline.run_epochs(cfg, comm, engines.OpLog(1 << 16), progress)
        raise AssertionError("the failing progress raised nothing")
    except RuntimeError as e:
        assert str(e) == "progress failed", e
    finally:
        reader_choice.make_reader = make
    assert seen == [os.SCHED_FIFO], seen
    assert len(reads) == cfg.reader.read_threads, reads     # boosted when the error came
    assert os.sched_getscheduler(0) == before[0], "the thread was left under SCHED_FIFO"
    assert slice_ns(main_tid) == before[1], before
    now = policies()
    assert all(tid in now for tid in reads), (reads, now)   # still running, not boosted
    assert all(now[tid][1] == 0 for tid in reads), now
    readers[0].close()


abort_on_error.run(main)

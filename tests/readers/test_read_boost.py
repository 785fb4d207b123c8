"""Catching up (ReadAhead.boost, csrc/readahead/readahead_setup.c): a rank's read threads run at the boost's
nice value while the request waited for, or the one after the last released, is not read yet,
and at their own value again once it is; batches read in time boost nothing; turning the boost
off sets the threads back at once. Thread nice values are read from /proc (stat field 19)."""
import errno
import os
import threading
import time

import pytest

from dlio_mpi import engines

BOOST = engines.STEPS_BOOST_NICE


def tasks():
    return {int(t) for t in os.listdir(f"/proc/{os.getpid()}/task")}


def started():
    """The process's tasks as (id, start time in clock ticks) pairs."""
    out = set()
    for tid in tasks():
        try:
            with open(f"/proc/{os.getpid()}/task/{tid}/stat") as f:
                stat = f.read()
        except FileNotFoundError:       # ended meanwhile
            continue
        out.add((tid, int(stat[stat.rindex(")") + 2:].split()[19])))
    return out


def nice_of(tid):
    with open(f"/proc/{os.getpid()}/task/{tid}/stat") as f:
        stat = f.read()
    return int(stat[stat.rindex(")") + 2:].split()[16])


def nices(tids):
    return {nice_of(t) for t in tids}


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(os.urandom(1 << 16))
    with engines.PosixFile(str(path)) as f:
        yield f


@pytest.fixture
def make_ra():
    made = []

    def make(nice=None, threads=2):
        """A ReadAhead made by a thread of its own (at nice), and its read threads' ids."""
        before, box = started(), {}

        def create():
            box["creator"] = threading.get_native_id()
            if nice is not None:
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
            box["ra"] = engines.ReadAhead(threads=threads, depth=3, slot_bytes=1 << 16,
                                          keep=False)
        t = threading.Thread(target=create)
        t.start()
        t.join()
        made.append(box["ra"])
        # a task is its id and its start time: an id freed since `before` may be taken again
        # by a new thread (ids wrap at pid_max)
        tids = {tid for tid, _ in started() - before} - {box["creator"]}
        assert len(tids) == threads, tids
        return box["ra"], tids

    yield make
    for ra in made:
        ra.close()


@pytest.fixture(autouse=True)
def privileged():
    try:
        engines.thread_nice_probe(BOOST)
    except OSError:
        pytest.skip("a negative nice value needs CAP_SYS_NICE or RLIMIT_NICE")


def test_the_batch_waited_for_boosts_its_threads_until_released(data, make_ra):
    ra, tids = make_ra()
    ra.boost(BOOST)
    assert nices(tids) == {0}
    t = ra.submit(data, [0], [4096], busy=0.3)
    ra.wait(t)                  # not read when the wait began
    assert nices(tids) == {BOOST}
    ra.release(t)               # nothing queued after it
    assert nices(tids) == {0}


def test_the_next_batch_behind_at_a_release_boosts(data, make_ra):
    ra, tids = make_ra()
    ra.boost(BOOST)
    t1 = ra.submit(data, [0], [4096])
    t2 = ra.submit(data, [4096], [4096], busy=0.4)
    time.sleep(0.15)            # t1 read, t2 in its preprocessing
    ra.wait(t1)
    assert nices(tids) == {0}
    ra.release(t1)
    assert nices(tids) == {BOOST}
    ra.wait(t2)
    ra.release(t2)
    assert nices(tids) == {0}


def test_batches_read_in_time_boost_nothing(data, make_ra):
    ra, tids = make_ra()
    ra.boost(BOOST)
    seen, stop = set(), threading.Event()

    def poll():
        while not stop.is_set():
            seen.update(nices(tids))
            time.sleep(0.0005)

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        for k in range(10):
            tickets = [ra.submit(data, [j * 4096], [4096]) for j in range(3)]
            time.sleep(0.02)
            for t in tickets:
                ra.wait(t)
                ra.release(t)
    finally:
        stop.set()
        poller.join()
    assert seen == {0}, seen


def test_turning_the_boost_off_sets_the_threads_back_at_once(data, make_ra):
    ra, tids = make_ra()
    ra.boost(BOOST)
    t1 = ra.submit(data, [0], [4096])
    t2 = ra.submit(data, [4096], [4096], busy=0.3)
    time.sleep(0.1)
    ra.wait(t1)
    ra.release(t1)
    assert nices(tids) == {BOOST}
    ra.boost(0)
    assert nices(tids) == {0}
    ra.wait(t2)
    ra.release(t2)
    t3 = ra.submit(data, [0], [4096], busy=0.2)
    ra.wait(t3)                 # behind, but the boost is off
    assert nices(tids) == {0}
    ra.release(t3)


def test_the_threads_get_their_own_nice_back(data, make_ra):
    ra, tids = make_ra(nice=5)
    assert nices(tids) == {5}   # as the thread that made them
    ra.boost(BOOST)
    t = ra.submit(data, [0], [4096], busy=0.2)
    ra.wait(t)
    assert nices(tids) == {BOOST}
    ra.release(t)
    assert nices(tids) == {5}


def test_the_probe_gives_the_thread_its_nice_back():
    me = threading.get_native_id()
    engines.thread_nice_probe(BOOST)
    assert nice_of(me) == 0


def test_a_refused_boost_is_noted_in_the_run_facts(monkeypatch):
    """The note when the kernel gives SCHED_FIFO but not the nice value (RLIMIT_RTPRIO without
    CAP_SYS_NICE; the probe's refusal stands in for the kernel's here)."""
    from mpi4py import MPI
    from dlio_mpi.config import loader as config
    from dlio_mpi.run import facts as run_facts

    def refused(nice):
        raise OSError(errno.EACCES, f"setpriority (nice {nice}): {os.strerror(errno.EACCES)}")

    cfg = config.load(["workload=default", "io.rank_priority=2"])
    assert run_facts.rank_priority(cfg, MPI.COMM_SELF) == {"rank_priority": 2,
                                                           "read_boost_nice": BOOST}
    monkeypatch.setattr(engines, "thread_nice_probe", refused)
    fact = run_facts.rank_priority(cfg, MPI.COMM_SELF)
    assert fact["rank_priority"] == 2 and fact["read_boost_nice"] == 0, fact
    assert fact["read_boost_note"] == (
        f"read threads behind: setpriority (nice {BOOST}): {os.strerror(errno.EACCES)}; a rank "
        "whose next batch falls behind gets the cores' share of every other rank"), fact

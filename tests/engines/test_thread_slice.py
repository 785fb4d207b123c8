"""The rank thread's time slice (io.rank_slice_us): engines.thread_slice sets the calling
thread's slice under EEVDF, read-ahead threads keep the kernel's default slice rather than
inherit the short one, a run records the slice it was given, and a slice outside the kernel's
bounds is a config error."""
import glob
import os
import threading

import pytest

from dlio_mpi import engines
from dlio_mpi.config import loader as config


def slices():
    """{thread id: se.slice in ns} of this process's threads, from /proc (6.6 and later)."""
    out = {}
    for path in glob.glob(f"/proc/{os.getpid()}/task/*/sched"):
        with open(path) as f:
            for line in f:
                if line.startswith("se.slice"):
                    out[int(path.split("/")[-2])] = int(float(line.split(":")[1]))
    return out


def test_read_threads_keep_the_default_slice():
    main = threading.get_native_id()
    default = engines.thread_slice(0)
    if default == 0 or main not in slices():
        pytest.skip("this kernel has no per-thread time slices (Linux before 6.12)")
    try:
        assert engines.thread_slice(100e-6) == pytest.approx(100e-6)
        before = set(slices())
        ra = engines.ReadAhead(threads=3, depth=2, slot_bytes=4096)
        try:
            now = slices()
            new = set(now) - before
            assert len(new) == 3, now
            assert now[main] == 100_000
            assert all(now[t] == round(default * 1e9) for t in new), (now, default)
        finally:
            ra.close()
    finally:
        engines.thread_slice(0)


@pytest.mark.parametrize("value", [50, 100_001])
def test_slice_out_of_bounds_is_a_config_error(value):
    with pytest.raises(config.ConfigError, match=f"io.rank_slice_us={value}: Linux takes"):
        config.load(["workload=default", f"io.rank_slice_us={value}"])


def test_rank_priority_beyond_fifo_is_a_config_error():
    with pytest.raises(config.ConfigError, match="io.rank_priority=100: SCHED_FIFO priorities "
                       "are 1 to 99"):
        config.load(["workload=default", "io.rank_priority=100"])
    assert config.load(["workload=default", "io.rank_priority=0"]).io.rank_priority == 0


def test_the_fifo_probe_gives_the_thread_its_policy_back():
    if os.geteuid() != 0:
        pytest.skip("SCHED_FIFO needs CAP_SYS_NICE (root here)")
    main = threading.get_native_id()
    engines.thread_slice(300e-6)
    try:
        engines.thread_fifo_probe(5)
        assert os.sched_getscheduler(0) == os.SCHED_OTHER
        if main in slices():
            assert slices()[main] == 300_000
        with pytest.raises(ValueError, match="priority 100"):
            engines.EpochRequests.start_loop(None, [], priority=100)
    finally:
        engines.thread_slice(0)

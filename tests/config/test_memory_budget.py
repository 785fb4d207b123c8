"""memory_budget: the estimate of what a run allocates, pinned to the sizes the real readers
allocate, and the check before any I/O that refuses a run whose ranks would not fit in their
host's memory (one line naming the keys and the numbers, exit 2, nothing allocated)."""
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np
import pytest

from dlio_mpi import engines
from dlio_mpi.config import loader as config
from dlio_mpi.data import generation as datagen
from dlio_mpi.config import memory_budget
from dlio_mpi.config import memory_check
from dlio_mpi.run import training_loop as pipeline
from dlio_mpi.readers import choice as reader_choice
from dlio_mpi.data.dataset import Dataset
from mpirun import HERE, mpiexec_cmd, run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec


def load(tmp_path, *overrides):
    return config.load(("workload=default", f"dataset.data_folder={tmp_path}/d",
                        f"output.folder={tmp_path}/o") + overrides)


def comm():
    from mpi4py import MPI
    return MPI.COMM_WORLD


def close_to(estimate, real):
    """The estimate is at least what the reader allocated, and within 10 % of it."""
    return real <= estimate <= real * 1.10


READERS = [
    # (overrides, what is compared)
    (("reader.read_threads=0", "reader.batch_size=4"), "buf"),
    (("reader.read_threads=3", "reader.batch_size=4", "dataset.record_length=100000",
      "dataset.record_length_stdev=1000"), "ring"),
    (("reader.read_threads=2", "reader.batch_size=4", "reader.transfer_size=65536",
      "io.interface=stdio"), "ring"),
    (("reader.read_threads=2", "dataset.format=hdf5", "io.interface=hdf5_sec2",
      "dataset.record_length=300000"), "ring"),
    (("reader.read_threads=2", "dataset.format=tfrecord", "reader.access=stream", "reader.sample_shuffle=off",
      "reader.transfer_size=262144"), "ring"),
    (("reader.read_threads=0", "dataset.format=npz", "reader.access=numpy", "reader.sample_shuffle=off",
      "reader.buffer_size=65536", "reader.batch_size=2"), "buf"),
    (("reader.read_threads=2", "dataset.format=npz", "reader.access=numpy", "reader.sample_shuffle=off",
      "reader.buffer_size=65536", "dataset.record_length=1000000"), "ring"),
]


@pytest.mark.parametrize("overrides,what", READERS)
def test_the_estimate_matches_what_real_readers_allocate(tmp_path, overrides, what):
    cfg = load(tmp_path, *overrides)
    datagen.generate(cfg, comm())
    log = engines.OpLog(1024)
    reader = reader_choice.make_reader(cfg, comm(), log)
    try:
        plan, files = pipeline.epoch_plan(cfg, comm(), reader, cfg.reader.batch_size, 0, False)
        reader.plan_epoch(plan, files)
        reader.start_epoch(plan, files)
        needs = {n.what: n.bytes for n in memory_budget.reader_needs(cfg)}
        if what == "buf":
            real = len(getattr(reader, "inner", reader).buf)
            estimate = needs.get("batch buffer") or needs["read buffer"]
            assert close_to(estimate, real + memory_budget.READER_ALIGN), (estimate, real)
        else:
            threads = cfg.reader.read_threads
            real = threads * reader.ra.slot_bytes
            assert close_to(needs["read-ahead buffers"], real), (needs, real)
            for _ in range(len(plan)):
                reader.read_batch(None)
    finally:
        reader.close()


def test_a_thread_takes_no_more_than_its_count(tmp_path):
    """A read-ahead thread's resident share (stack pages, TLS; its kernel stack is not in RSS
    and is 16 KiB on x86-64) is within THREAD_BYTES."""
    def rss():
        with open("/proc/self/status") as f:
            return next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("VmRSS:"))

    n, slot = 400, 4096
    before = rss()
    ra = engines.ReadAhead(threads=n, depth=2, slot_bytes=slot, keep=False)
    try:
        per_thread = (rss() - before) / n - slot
    finally:
        ra.close()
    assert per_thread + (16 << 10) <= memory_budget.THREAD_BYTES, per_thread


def test_the_check_refuses_100000_read_threads_at_once(tmp_path):
    cfg = load(tmp_path, "reader.read_threads=100000")
    t0 = time.perf_counter()
    with pytest.raises(config.ConfigError) as e:
        memory_check.check(cfg, comm())
    assert time.perf_counter() - t0 < 0.5
    line = str(e.value)
    assert "\n" not in line
    assert "reader.read_threads=100000" in line and "MemAvailable" in line
    assert "io.memory_limit_fraction=0.9" in line and "1 rank on this host" in line
    assert not os.path.exists(f"{tmp_path}/d")


def test_a_normal_workload_and_fraction_0_pass(tmp_path):
    memory_check.check(load(tmp_path), comm())
    memory_check.check(load(tmp_path, "reader.read_threads=100000",
                            "io.memory_limit_fraction=0"), comm())


def test_a_lower_fraction_refuses_what_the_default_allows(tmp_path):
    cfg = load(tmp_path)
    need, _, _ = memory_budget.rank_need(cfg, 1, 0)
    room, _ = memory_check.host_room()
    memory_check.check(cfg, comm())
    low = need / room / 2
    with pytest.raises(config.ConfigError, match=f"io.memory_limit_fraction={low}"):
        memory_check.check(load(tmp_path, f"io.memory_limit_fraction={low}"), comm())


def test_every_phase_is_counted(tmp_path):
    cfg = load(tmp_path, "workflow.checkpoint=true", "model.model_size_bytes=200m",
               "workflow.evaluation=true", "dataset.num_files_eval=2",
               "dataset.format=hdf5", "io.interface=hdf5_coll", "io.layout=shared",
               "dataset.num_files_train=1", "dataset.num_samples_per_file=64",
               "dataset.enable_chunking=true")
    phases = memory_budget.rank_phases(cfg, 1, 0, generating=True)
    assert set(phases) == {"generating the dataset", "training"}
    whats = {n.what for n in phases["training"]}
    assert {"op log", "batch buffer", "checkpoint buffers",
            "epoch plan", "evaluation batch buffer", "HDF5 chunk caches",
            "collective buffer"} <= whats, whats
    assert "read-ahead buffers" not in whats       # collective reads stay on the main thread
    ck = next(n for n in phases["training"] if n.what == "checkpoint buffers")
    assert ck.bytes >= 64 << 20          # a 64 MiB chunk of the 200 MB share
    log = next(n for n in phases["training"] if n.what == "op log")
    assert log.bytes == cfg.io.oplog_capacity * 38


def run_cli(tmp_path, n, *overrides, timeout=120):
    cmd = mpiexec_cmd(n) + [sys.executable, os.path.join(HERE, "mpi", "run_cli.py"), "run",
                            f"dataset.data_folder={tmp_path}/d", f"output.folder={tmp_path}/o",
                            *overrides]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ), stdin=subprocess.DEVNULL)
    return p, time.perf_counter() - t0, (before, resource.getrusage(
        resource.RUSAGE_CHILDREN).ru_maxrss)


@pytest.mark.parametrize("n", [1, 2])
def test_100000_read_threads_are_refused_before_any_io(tmp_path, n):
    p, wall, _ = run_cli(tmp_path, n, "reader.read_threads=100000")
    assert p.returncode == 2, p.stdout + p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("dlio_mpi")]
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("dlio_mpi: config error: not enough memory on host")
    assert "reader.read_threads=100000" in lines[0]
    assert f"{n} rank{'s' if n > 1 else ''} on this host" in lines[0]
    assert "Traceback" not in p.stderr
    assert not os.path.exists(f"{tmp_path}/d/train")    # no dataset generated
    assert wall < 30


def test_a_huge_batch_of_big_samples_is_refused(tmp_path):
    p, _, _ = run_cli(tmp_path, 2, "reader.batch_size=4096", "dataset.record_length=64m",
                      "dataset.num_samples_per_file=4096", "dataset.num_files_train=2",
                      "reader.read_threads=0")
    assert p.returncode == 2, p.stdout + p.stderr
    assert "reader.batch_size=4096" in p.stderr and "dataset.record_length=67108864" in \
        p.stderr, p.stderr
    assert not os.path.exists(f"{tmp_path}/d/train")


def test_peak_rss_of_a_small_run_stays_under_the_estimate(tmp_path):
    out = run_mpi(1, "memory_peak.py", f"dataset.data_folder={tmp_path}/d",
                  f"output.folder={tmp_path}/o", "reader.read_threads=4",
                  "reader.batch_size=8", "dataset.num_files_train=8",
                  "dataset.num_samples_per_file=16", "dataset.record_length=1m",
                  "io.oplog_capacity=65536").stdout
    got = json.loads(out.strip().splitlines()[-1])
    assert got["peak"] - got["before"] <= got["estimate"], got

"""reader_choice.reserve_descriptors: the process's descriptor table is grown before the steps
to hold the files a reader keeps open (the kernel would grow it inside a step's open, waiting
for an RCU grace period), without leaving a descriptor open or passing the open-file limit."""
import json
import os
import resource
import subprocess
import sys

from dlio_mpi.readers import choice as reader_choice


def table_size():
    """The size of this process's descriptor table (/proc/self/status FDSize)."""
    with open("/proc/self/status") as f:
        return next(int(ln.split()[1]) for ln in f if ln.startswith("FDSize:"))


def open_fds():
    return set(os.listdir("/proc/self/fd"))


def test_the_table_holds_n_more_descriptors_and_none_is_left_open():
    before = open_fds()
    n = table_size() + 1000          # beyond the table as it is
    top = reader_choice.reserve_descriptors(n)
    assert top >= n and table_size() > top
    assert open_fds() == before


def test_the_open_file_limit_bounds_it():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    low = max(len(open_fds()) + 8, 64)
    resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard))
    try:
        top = reader_choice.reserve_descriptors(100_000)
        assert top == -1 or top <= low - 1
        assert reader_choice.reserve_descriptors(0) == -1
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


READER = """
import json, os, sys
from mpi4py import MPI
from dlio_mpi import engines
from dlio_mpi.config import loader as config
from dlio_mpi.readers import choice as reader_choice
def size():
    with open("/proc/self/status") as f:
        return next(int(ln.split()[1]) for ln in f if ln.startswith("FDSize:"))
cfg = config.load(sys.argv[1:])
before = size()
reader = reader_choice.make_reader(cfg, MPI.COMM_WORLD, engines.OpLog(16))
print(json.dumps([before, size(), reader.inner.max_open, len(os.listdir("/proc/self/fd"))]))
reader.close()
"""


def test_a_reader_reserves_what_it_keeps_open(tmp_path):
    # a fresh process: this one's table may have grown already
    p = subprocess.run([sys.executable, "-c", READER, "dataset.format=tfrecord",
                        "dataset.num_files_train=3000", "dataset.num_samples_per_file=1",
                        "dataset.record_length=4096", "reader.read_threads=2",
                        f"dataset.data_folder={tmp_path / 'absent'}"],
                       capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert p.returncode == 0, p.stderr[-2000:]
    before, after, keep, fds = json.loads(p.stdout.strip().splitlines()[-1])
    assert keep < 3000                              # the cap, not the dataset's files
    assert before < keep + fds <= after


def test_no_free_descriptor_is_no_error():
    """At the open-file limit, nothing is reserved and nothing raises: the opens report a real
    shortage where a file is opened."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    held = []
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(open_fds()) + 16, hard))
    try:
        while True:
            try:
                held.append(os.open(os.devnull, os.O_RDONLY))
            except OSError:
                break
        assert reader_choice.reserve_descriptors(100) == -1
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

"""io.rank_priority (tests/mpi/check_rank_priority.py): the rank's thread runs the C step loop
of the epochs whose files are all open under SCHED_FIFO and only there (read-ahead threads and
the files' opens keep their policy, the thread gets its policy and time slice back, after an
error too), at 1 and 2 ranks, and its read threads catch up at a negative nice value there
while a batch is behind; launched without CAP_SYS_NICE, the run notes why and goes on under
the thread's own policy; with RLIMIT_RTPRIO but no right to a negative nice value, under
SCHED_FIFO without the boost, noted."""
import os
import shutil
import subprocess

import pytest

from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

ARGS = ["dataset.format=tfrecord", "io.interface=posix", "dataset.num_files_train=16",
        "dataset.num_samples_per_file=8", "dataset.record_length=4096", "reader.batch_size=2",
        "reader.read_threads=2", "reader.sample_shuffle=seed", "train.epochs=3",
        "train.computation_time=0.004", "reader.preprocess_time=0.005", "io.rank_priority=3"]


@pytest.mark.parametrize("n", [1, 2])
def test_the_step_loop_runs_under_fifo(tmp_path, n):
    if os.geteuid() != 0:
        pytest.skip("SCHED_FIFO needs CAP_SYS_NICE (root here)")
    out = run_mpi(n, "check_rank_priority.py", tmp_path / "data", "granted", *ARGS)
    assert out.stdout.count(": ok") == n, out.stdout


def test_refused_priority_is_noted_and_the_run_goes_on(tmp_path):
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root and setpriv to launch ranks without CAP_SYS_NICE")
    drop = [setpriv, "--inh-caps=-sys_nice", "--bounding-set=-sys_nice"]
    out = run_mpi(2, "check_rank_priority.py", tmp_path / "data", "refused", *ARGS,
                  rank_wrap=drop)
    assert out.stdout.count(": ok") == 2, out.stdout


def test_a_refused_boost_is_noted_and_the_loop_keeps_fifo(tmp_path):
    setpriv, prlimit = shutil.which("setpriv"), shutil.which("prlimit")
    if os.geteuid() != 0 or setpriv is None or prlimit is None:
        pytest.skip("needs root, prlimit and setpriv to launch ranks with RLIMIT_RTPRIO only")
    if subprocess.run([prlimit, "--rtprio=99:99", "true"]).returncode != 0:
        pytest.skip("raising RLIMIT_RTPRIO needs CAP_SYS_RESOURCE")
    wrap = [prlimit, "--rtprio=99:99", "--nice=0:0", setpriv, "--inh-caps=-sys_nice",
            "--bounding-set=-sys_nice"]
    out = run_mpi(1, "check_rank_priority.py", tmp_path / "data", "no_boost", *ARGS,
                  rank_wrap=wrap)
    assert out.stdout.count(": ok") == 1, out.stdout

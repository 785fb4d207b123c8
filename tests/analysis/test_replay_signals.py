"""A replay never outlives its command: SIGTERM or SIGINT to `analyze replay` while its job
runs ends the job (mpiexec and every rank) with a line saying so, and the command exits with
the shell's status for the signal. The log replayed is paced_reads.darshan (truth.json): one
process reading a file with 250 ms pauses, 16 s of run, so the job is surely running when the
signal comes."""
import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                    "darshan")
ROOT = os.path.dirname(os.path.dirname(HERE))


def _ranks(out_dir):
    """The pids of the emulator's processes started for this replay (their command line names
    its fitted.yaml), mpiexec's included."""
    found = subprocess.run(["pgrep", "-f", os.path.join(str(out_dir), "fitted.yaml")],
                           capture_output=True, text=True).stdout.split()
    return [int(p) for p in found]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_the_replay_and_its_ranks(tmp_path, signum):
    out = tmp_path / "replay"
    cmd = [sys.executable, "-m", "dlio_mpi_analysis", "replay", os.path.join(HERE, "paced_reads.darshan"),
           "--out", str(out)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 60
        while len(_ranks(out)) < 2:     # mpiexec and its rank
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the replay's job never started"
            time.sleep(0.1)
        time.sleep(1.0)                 # the rank past its start-up, inside the run
        assert _ranks(out)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    deadline = time.monotonic() + 5
    while _ranks(out) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _ranks(out) == [], err
    assert proc.returncode == 128 + signum, err
    name = signal.Signals(signum).name
    assert f"replay: stopped by {name}: ending its job" in err
    assert err.strip().splitlines()[-1] == f"analyze: stopped by {name}"
    assert "Traceback" not in err

"""The C-level status guard: on SIGTERM or SIGINT it writes the prepared status (unless the
skip file exists), then the handler installed before it still runs; disarmed, it writes
nothing and the previous handler is back. Each case in a process of its own."""
import json
import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import json, os, signal, sys
from dlio_mpi import engines
d, skip, disarm, watch = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1", int(sys.argv[4])
seen = []
signal.signal(signal.SIGTERM, lambda s, f: seen.append(s))
if skip:
    open(os.path.join(d, "note"), "w").close()
engines.status_guard_arm(os.path.join(d, "status.json.tmp"), os.path.join(d, "status.json"),
                         os.path.join(d, "note"), json.dumps({"status": "interrupted"}), watch)
if disarm:
    engines.status_guard_disarm()
os.kill(os.getpid(), signal.SIGTERM)
print(json.dumps({"python_handler_ran": seen == [signal.SIGTERM],
                  "handler_back": signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL}))
"""


def dead_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


@pytest.mark.parametrize("skip, disarm, watch, written",
                         [(False, False, 0, True), (True, False, 0, False),
                          (False, True, 0, False), (False, False, "alive", False),
                          (False, False, "dead", True)],
                         ids=["armed", "note-left", "disarmed", "watched-alive", "watched-dead"])
def test_guard_writes_the_status_and_passes_the_signal_on(tmp_path, skip, disarm, watch,
                                                          written):
    """A guard armed with a pid to watch (rank 0's, on a rank beside it) writes only when that
    process is gone."""
    pid = {0: 0, "alive": os.getpid(), "dead": dead_pid()}[watch]
    p = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), str(int(skip)),
                        str(int(disarm)), str(pid)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out == {"python_handler_ran": True, "handler_back": True}
    status = tmp_path / "status.json"
    assert status.exists() == written
    if written:
        assert json.loads(status.read_text()) == {"status": "interrupted"}
    assert not (tmp_path / "status.json.tmp").exists()


PEERS_SCRIPT = r"""
import json, os, signal, sys
from dlio_mpi import engines
d, dead = sys.argv[1], int(sys.argv[2])
signal.signal(signal.SIGTERM, lambda s, f: None)
engines.status_guard_peers([1, 2], [os.getppid(), dead])
engines.status_guard_arm(os.path.join(d, "status.json.tmp"), os.path.join(d, "status.json"),
                         os.path.join(d, "note"), json.dumps({"status": "interrupted"}))
os.kill(os.getpid(), signal.SIGTERM)
print(os.getpid())
"""


def test_guard_names_a_rank_on_its_host_whose_process_is_gone(tmp_path):
    """Rank 0's guard knows the other ranks on its host: the one gone when the launcher's
    signal comes died (before: the status said only that a signal stopped the run)."""
    dead = dead_pid()
    p = subprocess.run([sys.executable, "-c", PEERS_SCRIPT, str(tmp_path), str(dead)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    me = int(p.stdout.strip().splitlines()[-1])
    assert json.loads((tmp_path / "status.json").read_text()) == {
        "status": "interrupted",
        "reason": f"rank 2 (pid {dead}) died; the launcher ended the job", "pid": me}


LOCK_SCRIPT = r"""
import json, os, signal, sys
from dlio_mpi import engines
from dlio_mpi.checkpoint import lock
d, other, forget = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1"
engines.status_guard_arm(os.path.join(d, "status.json.tmp"), os.path.join(d, "status.json"),
                         os.path.join(d, "note"), json.dumps({"status": "interrupted"}))
lock.take(os.path.join(d, "ck"))
path = lock.held[0]
if other:            # another run's lock now (this one's was removed and taken since)
    os.unlink(path)
    with open(path, "w") as f:
        json.dump({"host": "elsewhere", "pid": 1}, f)
if forget:
    engines.status_guard_lock("", "")
# no Python handler: the signal ends the process where it stands, as the launcher's SIGKILL
# would end a rank that never got back to the interpreter
os.kill(os.getpid(), signal.SIGTERM)
"""


@pytest.mark.parametrize("other, forget, removed",
                         [(False, False, True), (True, False, False), (False, True, False)],
                         ids=["this-runs", "another-runs", "forgotten"])
def test_the_signal_gives_the_checkpoint_lock_back(tmp_path, other, forget, removed):
    """Before: a job cancelled while rank 0 was inside a collective call left the checkpoint
    folder's lock behind, and the next job on another host was refused. The guard removes it,
    but only while it still holds this run's record."""
    p = subprocess.run([sys.executable, "-c", LOCK_SCRIPT, str(tmp_path), str(int(other)),
                        str(int(forget))], capture_output=True, text=True, timeout=60)
    assert p.returncode == -15, p.stderr
    assert json.loads((tmp_path / "status.json").read_text()) == {"status": "interrupted"}
    assert (tmp_path / "ck" / ".dlio_mpi_checkpoints.lock").exists() != removed

"""The C-level status guard: on SIGTERM or SIGINT it writes the prepared status (unless the
skip file exists), then the handler installed before it still runs; disarmed, it writes
nothing and the previous handler is back. Each case in a process of its own."""
import json
import subprocess
import sys

import pytest

SCRIPT = r"""
import json, os, signal, sys
from dlio_mpi import engines
d, skip, disarm = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1"
seen = []
signal.signal(signal.SIGTERM, lambda s, f: seen.append(s))
if skip:
    open(os.path.join(d, "note"), "w").close()
engines.status_guard_arm(os.path.join(d, "status.json.tmp"), os.path.join(d, "status.json"),
                         os.path.join(d, "note"), json.dumps({"status": "interrupted"}))
if disarm:
    engines.status_guard_disarm()
os.kill(os.getpid(), signal.SIGTERM)
print(json.dumps({"python_handler_ran": seen == [signal.SIGTERM],
                  "handler_back": signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL}))
"""


@pytest.mark.parametrize("skip, disarm, written", [(False, False, True), (True, False, False),
                                                   (False, True, False)],
                         ids=["armed", "note-left", "disarmed"])
def test_guard_writes_the_status_and_passes_the_signal_on(tmp_path, skip, disarm, written):
    p = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), str(int(skip)),
                        str(int(disarm))], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out == {"python_handler_ran": True, "handler_back": True}
    status = tmp_path / "status.json"
    assert status.exists() == written
    if written:
        assert json.loads(status.read_text()) == {"status": "interrupted"}
    assert not (tmp_path / "status.json.tmp").exists()

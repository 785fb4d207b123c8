"""`analyze report` onto a full file system (a small tmpfs the test mounts): one line naming the
file that could not be written, exit status 1, and no truncated figure under its final name."""
import os
import subprocess
import sys
import warnings

import pytest

from oplog_fixtures import call, write_run

PNG_END = b"IEND\xaeB`\x82"


@pytest.fixture
def small_fs(tmp_path):
    """A 48 KiB tmpfs: room for the report's first figure, not its second (root only; skipped
    where mounting is not allowed)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48k", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {p.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_report_onto_a_full_file_system(tmp_path, small_fs):
    calls = [call("open", 0, 1000)] + [
        call("read", 2000 + i * 10**6, 5000, offset=i * 65536, nbytes=65536) for i in range(50)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = write_run(tmp_path / "run", {0: [calls], 1: [calls[:20]]}, phase_s=0.1)
    out = small_fs / "report"
    p = subprocess.run([sys.executable, "-m", "dlio_mpi", "analyze", "report", str(run), "-o",
                        str(out)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 1, p.stdout + p.stderr
    lines = [ln for ln in p.stderr.splitlines() if not ln.startswith("analyze: warning:")]
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert lines[0].startswith(f"analyze: {out}{os.sep}") and \
        lines[0].endswith(".png: No space left on device"), lines[0]
    names = os.listdir(out)
    assert not [n for n in names if ".part" in n], names
    assert names, "the first figure fits: it is there, whole"
    for name in names:
        data = (out / name).read_bytes()
        assert name.endswith(".png") and data.endswith(PNG_END), (name, len(data))

"""Damaged inputs to every analysis command that reads a log or a run: one line naming the
file, exit status 1, nothing written, and no huge allocation (the commands run under an
address-space limit, so a regression fails instead of swapping)."""

import os
import resource
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MEMORY_LIMIT = 3 << 30  # bytes of address space: ample for the analysis, far below a bad size


def _limited():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _analyze(*args):
    return subprocess.run([sys.executable, "-m", "dlio_mpi_analysis", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, timeout=180, preexec_fn=_limited)


def _flipped(src, dest, fraction=0.5, count=8):
    """A copy of src with count bytes inverted from fraction of its length on."""
    with open(src, "rb") as f:
        data = bytearray(f.read())
    start = int(len(data) * fraction)
    for i in range(start, start + count):
        data[i] ^= 0xFF
    dest.write_bytes(bytes(data))
    return dest


def _commands(path, good, tmp_path):
    """Each command on path, with the files it would write."""
    return {
        "characterize": (["characterize", path], []),
        "compare": (["compare", good, path], []),
        "fit": (["fit", path, "-o", tmp_path / "w.yaml"], [tmp_path / "w.yaml"]),
        "report": (["report", path, "-o", tmp_path / "rep"], [tmp_path / "rep"]),
        "replay": (["replay", path, "--out", tmp_path / "rp"], [tmp_path / "rp"]),
    }


# (log, where the bytes are flipped): darshan-util aborted on the first (an assertion in its
# name-record parser), PyDarshan raised UnicodeDecodeError on the second and ValueError on the
# third, and the fourth was read without a word, its corrupt module region skipped
FLIPS = [("release_logs__mpi-io-test-x86_64-3.3.0", 0.5),
         ("nonmpi_dxt_anonymized__", 0.5),
         ("e3sm_io_heatmaps_and_dxt__", 0.6),
         ("apmpi_apxc__", 0.5)]


@pytest.mark.parametrize("prefix,fraction", FLIPS)
def test_darshan_log_with_flipped_bytes_is_one_line(prefix, fraction, log, tmp_path):
    path = _flipped(log(prefix), tmp_path / "flipped.darshan", fraction)
    done = _analyze("characterize", path)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"analyze: {path}: corrupt: the ") \
        and " region (bytes " in lines[0] and ") does not decompress: " in lines[0]
    assert done.stdout == ""


def test_every_command_refuses_a_corrupt_log_in_one_line(log, tmp_path):
    good = log("release_logs__mpi-io-test-x86_64-3.5.0")
    path = _flipped(log("release_logs__mpi-io-test-x86_64-3.3.0"), tmp_path / "bad.darshan")
    for name, (args, outputs) in _commands(path, good, tmp_path).items():
        done = _analyze(*args)
        assert done.returncode == 1, (name, done.stderr)
        assert done.stderr.splitlines()[-1] == (
            f"analyze: {path}: corrupt: the name region (bytes 845 to 977) does not "
            "decompress: a compressed stream is cut short"), (name, done.stderr)
        assert len([l for l in done.stderr.splitlines() if l.startswith("analyze:")]) == 1
        assert not any(os.path.exists(p) for p in outputs), name


def test_flipped_region_map_is_one_line(log, tmp_path):
    """Bytes flipped in the header's region map: a region offset points past the file."""
    src = log("release_logs__mpi-io-test-x86_64-3.5.0")
    path = _flipped(src, tmp_path / "map.darshan", fraction=32 / os.path.getsize(src))
    done = _analyze("characterize", path)
    assert done.returncode == 1
    assert done.stderr.startswith(f"analyze: {path}: truncated or corrupt: a region of the "
                                  "log ends at byte ")
    assert len(done.stderr.splitlines()) == 1


@pytest.fixture()
def damaged_run(emulate, tmp_path):
    """A copy of a real 2-rank run's folder (op logs kept) and its good original."""
    good = emulate("dataset.num_files_train=4", "dataset.num_samples_per_file=4",
                   "dataset.record_length=4096", "reader.batch_size=2",
                   "train.epochs=1") / "latest"
    bad = tmp_path / "run"
    shutil.copytree(good, bad)
    return good, bad


def test_truncated_op_log_is_one_line_for_every_command(damaged_run, tmp_path):
    good, bad = damaged_run
    oplog = bad / "oplog_rank00001.npz"
    data = oplog.read_bytes()
    oplog.write_bytes(data[:len(data) // 2])
    for name, (args, outputs) in _commands(bad, good, tmp_path).items():
        done = _analyze(*args)
        assert done.returncode == 1, (name, done.stderr)
        assert done.stderr.splitlines()[-1] == (
            f"analyze: {oplog}: not a readable dlio_mpi op log (File is not a zip file)"), \
            (name, done.stderr)
        assert len([l for l in done.stderr.splitlines() if l.startswith("analyze:")]) == 1
        assert not any(os.path.exists(p) for p in outputs), name


@pytest.mark.parametrize("content,detail", [
    (b"[1, 2]", "a JSON object is expected"),
    (b"{\"ranks\": 2", "Expecting ',' delimiter: line 1 column 12 (char 11)"),
    (b"\xff\xfe\x00garbage", "'utf-8' codec can't decode byte 0xff in position 0: invalid "
                             "start byte")])
def test_damaged_run_summary_is_one_line(damaged_run, content, detail):
    _, bad = damaged_run
    (bad / "summary.json").write_bytes(content)
    done = _analyze("characterize", bad)
    assert done.returncode == 1, done.stderr
    assert done.stderr == (f"analyze: {bad / 'summary.json'}: not a readable run summary "
                           f"({detail})\n")

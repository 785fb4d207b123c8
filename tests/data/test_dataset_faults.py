"""A dataset that is not what it claims: a TFRecord with a bad CRC, an HDF5 file that is not
HDF5, a file of the wrong size. One line naming rank and file, a non-zero exit, no hang."""
import json
import re
import subprocess
import sys

import pytest

from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec


def make(tmp_path, fmt, *extra):
    args = [f"dataset.data_folder={tmp_path}/d", f"output.folder={tmp_path}/o",
            f"dataset.format={fmt}", "dataset.num_files_train=4",
            "dataset.num_samples_per_file=4", "dataset.record_length=16k", "train.epochs=1",
            "reader.sample_shuffle=off", *extra]
    run_mpi(2, "run_cli.py", "generate", *args, timeout=120)
    return args, sorted((tmp_path / "d" / "train").iterdir())


def errors(p):
    return [l for l in p.stdout.splitlines() if l.startswith("dlio_mpi: rank")]


def test_tfrecord_with_a_bad_crc_is_found_by_the_check(tmp_path):
    args, files = make(tmp_path, "tfrecord")
    victim = files[3]
    raw = bytearray(victim.read_bytes())
    raw[20000] ^= 0xFF                          # a payload byte of the second record
    victim.write_bytes(bytes(raw))
    p = run_mpi(2, "run_cli.py", "run", *args, "io.check_dataset=true", check=False, timeout=60)
    assert p.returncode != 0
    e = errors(p)
    assert e and e[0].startswith("dlio_mpi: rank 1: dataset check: ")   # file 3 is rank 1's
    assert victim.name in e[0] and "bad data CRC" in e[0]
    assert len(e) == 1, e           # agreed on by both ranks, said once, by the rank it names
    status = json.loads((tmp_path / "o" / "status.json").read_text())
    assert status["status"] == "failed" and status["reason"] == e[0][len("dlio_mpi: "):]


def test_an_hdf5_file_that_is_not_hdf5(tmp_path):
    args, files = make(tmp_path, "hdf5", "io.interface=hdf5")
    files[0].write_bytes(b"not an HDF5 file" * 4096)
    p = run_mpi(2, "run_cli.py", "run", *args, check=False, timeout=60)
    assert p.returncode != 0
    e = errors(p)
    # named by the reader's libhdf5 open (the index is not read during training)
    assert e and str(files[0]) in e[0] and "is not an HDF5 file" in e[0]
    assert len(e) == 1


@pytest.mark.parametrize("fmt", ["tfrecord", "raw"])
def test_a_file_of_the_wrong_size_is_found_by_the_check(tmp_path, fmt):
    args, files = make(tmp_path, fmt)
    with open(files[2], "ab") as f:
        f.write(b"\0" * 100)
    p = run_mpi(2, "run_cli.py", "run", *args, "io.check_dataset=true", check=False, timeout=60)
    assert p.returncode != 0
    e = errors(p)
    assert e and files[2].name in e[0] and "dataset check" in e[0]


@pytest.mark.parametrize("interface, layout, env", [
    ("mpiio_coll", "shared", {}), ("mpiio_coll", "shared", {"OMPI_MCA_io": "romio321"}),
    ("mpiio", "multi", {}), ("mpiio", "multi", {"OMPI_MCA_io": "romio321"})],
    ids=["coll-ompio", "coll-romio", "indep-ompio", "indep-romio"])
def test_a_truncated_file_under_mpiio(tmp_path, interface, layout, env):
    """A truncated file read through MPI-IO is found when it is opened (ROMIO's reads past
    the end of a file report every byte asked for as read): one line, no rank left waiting
    in a collective call, no results."""
    files = 1 if layout == "shared" else 4
    args = [f"dataset.data_folder={tmp_path}/d", f"output.folder={tmp_path}/o",
            f"dataset.num_files_train={files}", "dataset.num_samples_per_file=32",
            "dataset.record_length=16k", f"io.layout={layout}", f"io.interface={interface}",
            "dataset.format=tfrecord", "reader.sample_shuffle=off", "train.epochs=1"]
    run_mpi(2, "run_cli.py", "generate", *args, timeout=120)
    victim = sorted((tmp_path / "d" / "train").iterdir())[-1]
    size = victim.stat().st_size
    with open(victim, "r+b") as f:
        f.truncate(24 * 16384 + 100)       # the last samples are cut
    p = run_mpi(2, "run_cli.py", "run", *args, check=False, timeout=60, env=env)
    assert p.returncode != 0
    e = errors(p)
    assert e and e[0].startswith("dlio_mpi: rank ") and \
        f"unexpected end of file in {victim}: {24 * 16384 + 100} bytes, the dataset's " \
        f"samples need {size} (truncated?)" in e[0], p.stdout[-3000:]
    assert not (tmp_path / "o" / "latest" / "summary.json").exists()
    # rank 0, stopped by the launcher when the failing rank ended the job, marks it failed
    status = json.loads((tmp_path / "o" / "status.json").read_text())
    assert status["status"] == "failed" and "unexpected end of file in" in status["reason"]
    assert "interrupted" not in p.stdout


def test_a_file_without_read_permission(tmp_path):
    """Root reads anything: the job runs with the file-permission capabilities dropped."""
    import os
    import signal
    import subprocess
    import sys

    from mpirun import HERE, mpiexec_cmd
    from datautil import drop_dac_capabilities

    args, files = make(tmp_path, "raw")
    files[1].chmod(0o000)
    cmd = mpiexec_cmd(2) + [sys.executable, os.path.join(HERE, "mpi", "run_cli.py"), "run",
                            *args]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=dict(os.environ), stdin=subprocess.DEVNULL, start_new_session=True,
                         preexec_fn=drop_dac_capabilities if os.geteuid() == 0 else None)
    try:
        out, _ = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        pytest.fail("the job hung")
    assert p.returncode != 0
    e = [l for l in out.splitlines() if l.startswith("dlio_mpi: rank")]
    assert e and f"cannot open {files[1]}: Permission denied" in e[0], out


def test_a_missing_dataset_without_generation(tmp_path):
    p = run_mpi(2, "run_cli.py", "run", f"dataset.data_folder={tmp_path}/nothing",
                f"output.folder={tmp_path}/o", "workflow.generate_data=false", check=False,
                timeout=60)
    assert p.returncode == 2
    assert f"{tmp_path}/nothing holds no dataset manifest and workflow.generate_data is " \
        "false" in p.stdout
    assert not (tmp_path / "nothing").exists()


def busy_loops(n):
    """n processes spinning on the CPU, as on a busy machine (ended by the caller)."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


@pytest.mark.parametrize("victim", [0, 3], ids=["rank0-file", "rank1-file"])
def test_an_agreed_error_under_cpu_load_is_one_line_and_a_whole_status(tmp_path, victim):
    """A dataset check that fails on one rank, on a machine kept busy: every time, one line
    from the rank it names, no traceback, status.json failed with that line, no temporary
    status file and no lock left (the ranks end together, none stopped halfway through its
    status write)."""
    args, files = make(tmp_path, "raw")
    with open(files[victim], "ab") as f:
        f.write(b"\0" * 100)
    load = busy_loops(3)
    try:
        for attempt in range(5):
            p = run_mpi(2, "run_cli.py", "run", *args, "io.check_dataset=true", check=False,
                        timeout=120)
            assert p.returncode != 0
            e = [ln for ln in p.stdout.splitlines() if ln.startswith("dlio_mpi")]
            assert len(e) == 1, (attempt, p.stdout)
            assert e[0].startswith(f"dlio_mpi: rank {victim // 2}: dataset check: "), e
            assert "Traceback" not in p.stdout, p.stdout
            out = tmp_path / "o"
            status = json.loads((out / "status.json").read_text())
            assert status["status"] == "failed" and status["reason"] == e[0][len("dlio_mpi: "):]
            # the output folder: the status, the run's own folder and its latest link; no
            # temporary file, no result that looks valid
            left = sorted(f.name for f in out.iterdir())
            # one folder per attempt: each run keeps its own
            assert left[-2:] == ["latest", "status.json"] and len(left) == attempt + 3, \
                (attempt, left)
            run = sorted(f.name for f in (out / "latest").iterdir())
            assert not [n for n in run if n.endswith(".part") or n in (
                "summary.json", "per_rank.csv")], (attempt, run)
    finally:
        for q in load:
            q.kill()
            q.wait()


def test_tfrecord_crcs_are_not_checked_without_the_dataset_check(tmp_path):
    """As the README says: without io.check_dataset a bad CRC goes unnoticed (the readers read
    the layout's byte ranges), while a truncated file is still one line naming it."""
    args, files = make(tmp_path, "tfrecord")
    raw = bytearray(files[3].read_bytes())
    raw[20000] ^= 0xFF
    files[3].write_bytes(bytes(raw))
    p = run_mpi(2, "run_cli.py", "run", *args, check=False, timeout=60)
    assert p.returncode == 0 and not errors(p), p.stdout
    files[1].write_bytes(files[1].read_bytes()[:30000])
    p = run_mpi(2, "run_cli.py", "run", *args, check=False, timeout=60)
    assert p.returncode != 0
    e = errors(p)
    assert len(e) == 1 and files[1].name in e[0], p.stdout


@pytest.mark.parametrize("threads", [0, 2])
def test_a_truncated_file_of_a_stream(tmp_path, threads):
    """A stream's file cut short (reader.access=stream, read ahead by the C step loop or read
    by the rank's thread): one line naming the file, the offset where the short segment began,
    the bytes wanted and got."""
    args, files = make(tmp_path, "tfrecord", "reader.access=stream", "reader.transfer_size=16k",
                       "reader.eof_reads=1", f"reader.read_threads={threads}",
                       "train.computation_time=0.001")
    files[1].write_bytes(files[1].read_bytes()[:30000])
    p = run_mpi(2, "run_cli.py", "run", *args, check=False, timeout=60)
    assert p.returncode != 0
    e = [line for line in errors(p) if "after another rank failed" not in line]
    assert len(e) == 1 and files[1].name in e[0], p.stdout[-3000:]
    assert e[0].startswith("dlio_mpi: rank 1: ")        # file 1 is rank 1's (i mod 2)
    m = re.search(r"wanted (\d+) bytes from offset (\d+), got (\d+)", e[0])
    assert m, e[0]
    want, where, got = map(int, m.groups())
    assert where % 16384 == 0 and where <= 30000 < where + want and got == 30000 - where

"""Storage faults: a full file system (a 1 MiB tmpfs the test mounts) during generation and
during a checkpoint. One line naming rank and file, a non-zero exit, no
hang, and nothing half-written under a final name (a dataset's manifest says in progress)."""
import json
import os
import signal
import subprocess
import sys

import pytest

from mpirun import HERE, mpiexec_cmd, run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec


@pytest.fixture
def small_fs(tmp_path):
    """A 1 MiB tmpfs (root only; skipped where mounting is not allowed)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {p.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def run(n, args, timeout=120, env=None):
    cmd = mpiexec_cmd(n) + [sys.executable, os.path.join(HERE, "mpi", "run_cli.py"), *args]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, **(env or {})), stdin=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        pytest.fail(f"the job hung (killed after {timeout} s)")
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def final_files(root):
    """The files under root, but the checkpoint folder's record (it names the files a
    checkpoint was to write, for clean, whether the checkpoint completed or not)."""
    return [p for p in root.rglob("*") if p.is_file() and p.name != "dlio_mpi_checkpoints.txt"]


def check_no_partial(root, size=None):
    files = final_files(root)
    assert not [p for p in files if ".part" in p.name], files
    if size:
        assert all(p.stat().st_size == size for p in files if p.suffix == ".bin"), \
            [(p.name, p.stat().st_size) for p in files]


GEN = ["generate", "dataset.num_files_train=8", "dataset.num_samples_per_file=4",
       "dataset.record_length=64k"]


def test_generation_on_a_full_file_system(small_fs, tmp_path):
    p = run(2, GEN + [f"dataset.data_folder={small_fs}/d", f"output.folder={tmp_path}/o"])
    out = p.stdout + p.stderr
    assert p.returncode != 0
    lines = [l for l in out.splitlines() if l.startswith("dlio_mpi: rank")]
    assert lines and "No space left on device" in lines[0] and str(small_fs) in lines[0], out
    check_no_partial(small_fs / "d", 4 * 65536)
    assert not (small_fs / "d" / "manifest.json").exists()


@pytest.mark.parametrize("fmt, env", [("file_per_rank", {}), ("mpiio", {}), ("hdf5", {}),
                                      ("hdf5", {"OMPI_MCA_io": "romio321"})],
                         ids=["file_per_rank", "mpiio", "hdf5", "hdf5-romio"])
def test_checkpoint_on_a_full_file_system(small_fs, tmp_path, fmt, env):
    p = run(2, ["run", f"dataset.data_folder={tmp_path}/d", f"output.folder={tmp_path}/o",
                f"checkpoint.checkpoint_folder={small_fs}/c", "workflow.checkpoint=true",
                "model.model_size_bytes=4m", "checkpoint.writers=all", "train.epochs=1",
                f"checkpoint.format={fmt}"], env=env)
    out = p.stdout + p.stderr
    assert p.returncode != 0
    lines = [ln for ln in out.splitlines() if ln.startswith("dlio_mpi: ")]
    assert lines and all(ln.startswith("dlio_mpi: checkpoint 0 write failed: rank ")
                         for ln in lines), out
    assert str(small_fs / "c") in lines[0], out
    assert len(lines) == 1, out     # agreed on by both ranks: one line
    if fmt != "file_per_rank":      # a shared file's room is checked before it is written
        assert "bytes free, 4194304 needed" in lines[0], out
    if fmt == "file_per_rank":
        assert "No space left on device" in lines[0], out
    c = small_fs / "c"
    assert not (final_files(c) if c.exists() else []), final_files(c)
    assert not (tmp_path / "o" / "latest" / "summary.json").exists()
    status = json.loads((tmp_path / "o" / "status.json").read_text())
    assert status["status"] == "failed" and status["reason"] == lines[0][len("dlio_mpi: "):]


@pytest.fixture
def ramfs(tmp_path):
    """A ramfs mount: a file system without O_DIRECT (root only; skipped elsewhere)."""
    mnt = tmp_path / "ram"
    mnt.mkdir()
    p = subprocess.run(["mount", "-t", "ramfs", "ramfs", str(mnt)], capture_output=True,
                       text=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a ramfs here: {p.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_o_direct_on_a_file_system_that_refuses_it(ramfs, tmp_path):
    p = run(2, ["run", f"dataset.data_folder={ramfs}/d", f"output.folder={tmp_path}/o",
                "io.interface=posix_direct", "train.epochs=1"])
    out = p.stdout + p.stderr
    assert p.returncode != 0
    lines = [l for l in out.splitlines() if l.startswith("dlio_mpi: rank")]
    assert lines and f"the file system of {ramfs}/d does not support O_DIRECT" in lines[0], out
    assert not (tmp_path / "o" / "latest" / "summary.json").exists()


SHARED_H5 = ["generate", "dataset.num_files_train=1", "dataset.num_samples_per_file=64",
             "dataset.record_length=64k", "io.layout=shared", "dataset.format=hdf5",
             "io.interface=hdf5_coll"]
MPIIO = [({}, "ompio"), ({"OMPI_MCA_io": "romio321"}, "romio")]


@pytest.mark.parametrize("env", [e for e, _ in MPIIO], ids=[i for _, i in MPIIO])
def test_shared_hdf5_generation_on_a_full_file_system(small_fs, tmp_path, env):
    """The room is checked before the writes (the dataset's, before any file): one line,
    nothing left."""
    p = run(2, SHARED_H5 + [f"dataset.data_folder={small_fs}/d", f"output.folder={tmp_path}/o"],
            env=env)
    out = p.stdout + p.stderr
    assert p.returncode != 0
    lines = [ln for ln in out.splitlines() if ln.startswith("dlio_mpi: ")]
    assert len(lines) == 1, out
    assert lines[0].startswith(f"dlio_mpi: rank 0: generating {small_fs}/d: ") and \
        "No space left on device" in lines[0] and "4194304 needed" in lines[0], out
    assert final_files(small_fs / "d") == []


@pytest.mark.parametrize("env", [e for e, _ in MPIIO], ids=[i for _, i in MPIIO])
def test_shared_hdf5_generation_failing_midway_on_one_rank(tmp_path, env):
    """Rank 1 may not write past 1 MiB (RLIMIT_FSIZE) in the middle of the collective writes:
    the job ends with one line naming rank 1 and leaves no file (through ROMIO the failing
    rank ends the job itself), no hang."""
    from mpirun import run_mpi

    limit = ["sh", "-c", 'if [ "${OMPI_COMM_WORLD_RANK:-0}" = 1 ]; then trap "" XFSZ; '
             'ulimit -f 2048; fi; exec "$@"', "sh"]      # 2048 blocks of 512 bytes
    p = run_mpi(2, "run_cli.py", *SHARED_H5, f"dataset.data_folder={tmp_path}/d",
                f"output.folder={tmp_path}/o", check=False, timeout=60, env=env,
                rank_wrap=limit)
    assert p.returncode != 0
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("dlio_mpi: ")]
    assert len(lines) == 1, p.stdout[-3000:]
    assert lines[0].startswith(f"dlio_mpi: rank 1: writing {tmp_path}/d/train/"), lines
    assert "Traceback" not in p.stdout
    # only the manifest, which says the dataset is not complete (clean removes it), and,
    # where MPI_Abort ended rank 0 (ROMIO), its generation lock, which the next generate takes
    # over and clean removes
    assert [f for f in final_files(tmp_path / "d") if f.name != ".dlio_mpi_generating.lock"] \
        == [tmp_path / "d" / "manifest.json"]
    manifest = json.loads((tmp_path / "d" / "manifest.json").read_text())
    assert manifest["state"] == "in_progress"


@pytest.mark.parametrize("env", [e for e, _ in MPIIO], ids=[i for _, i in MPIIO])
def test_hdf5_file_system_filled_after_the_create_fails_the_writes_not_the_close(small_fs,
                                                                                 env):
    """F7: the file's metadata is written at the create, so the close after refused writes
    needs no room. Before: the close failed too, and both ranks segfaulted in HDF5's shutdown
    at MPI_Finalize (exit 139), every time the file system was full before rank 0's first
    write."""
    p = run_mpi(2, "check_hdf5_full_fs.py", small_fs, "after-create", check=False, env=env)
    assert p.returncode == 0, p.stdout
    assert "rank 0: write: rank 0: H5Dwrite of dataset checkpoint" in p.stdout, p.stdout
    assert "close:" not in p.stdout and "unclosed 0" in p.stdout, p.stdout


def test_hdf5_file_system_full_at_the_create_ends_without_a_segfault(small_fs):
    """Full before the create: the metadata write at the create fails (one line naming the
    file and the reason); HDF5 cannot close the file then, and the process ends (exit 1)
    before HDF5's shutdown would read the freed file."""
    p = run_mpi(2, "check_hdf5_full_fs.py", small_fs, "before-create", check=False)
    assert p.returncode == 1, p.stdout
    assert "Segmentation fault" not in p.stdout, p.stdout
    assert f"rank 0: create: rank 0: writing the metadata of dataset checkpoint in " \
           f"{small_fs}/ckpt.h5 failed: No space left on device" in p.stdout, p.stdout

"""Faults: a second run into a busy output folder, SIGTERM to the job, a rank killed with
SIGKILL. Each ends with a clear line and a non-zero exit, no hang, and no results that look
valid."""
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from mpirun import (HERE, communicate_job, mpiexec_cmd, run_mpi, session_processes,
                    signalled_job_env)
from datautil import run_summary

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec


def start(tmp_path, n, *extra):
    cmd = mpiexec_cmd(n) + [sys.executable, os.path.join(HERE, "mpi", "run_cli.py"), "run",
                            f"dataset.data_folder={tmp_path}/d", f"output.folder={tmp_path}/o",
                            *extra]
    # env given explicitly: a process that initialized MPI (as pytest does when it imports the
    # engines) carries Open MPI's own variables in its C environment, which would make the
    # child mpiexec believe it runs inside that job
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, env=signalled_job_env(),
                            stdin=subprocess.DEVNULL)


def wait_running(tmp_path, p, timeout=60):
    status = tmp_path / "o" / "status.json"
    t0 = time.time()
    while time.time() - t0 < timeout:
        if status.exists() and json.loads(status.read_text())["status"] == "running":
            time.sleep(1.0)            # well into the epochs
            return
        if p.poll() is not None:
            out = p.communicate()[0]
            pytest.fail(f"the run ended early:\n{out}")
        time.sleep(0.1)
    os.killpg(p.pid, signal.SIGKILL)
    pytest.fail("the run did not start")


def rank_pids(tmp_path, p):
    """The pids of the ranks of the job started by start() (not the launcher's)."""
    out = subprocess.run(["pgrep", "-f", f"run_cli.py run dataset.data_folder={tmp_path}/d"],
                         capture_output=True, text=True).stdout.split()
    return [int(x) for x in out if int(x) != p.pid]


def finish(p, timeout=60):
    """The job's output once it has ended (mpiexec killed if it hangs in its own finalize
    with every rank gone: the ranks' exits are what these tests check)."""
    try:
        out, _ = communicate_job(p, timeout)
    except subprocess.TimeoutExpired:
        where = session_processes(p.pid)
        os.killpg(p.pid, signal.SIGKILL)
        pytest.fail(f"the job hung after the fault (killed after {timeout} s):\n{where}")
    return out


LONG = ["train.epochs=100", "train.computation_time=0.05", "dataset.num_files_train=4"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_marks_the_run_interrupted(tmp_path, sig):
    p = start(tmp_path, 2, *LONG)
    wait_running(tmp_path, p)
    t0 = time.time()
    os.killpg(p.pid, sig)
    out = finish(p)
    assert time.time() - t0 < 30
    assert p.returncode != 0
    # mpiexec passes a SIGINT on to the ranks as SIGTERM
    assert "; the run is marked interrupted" in out and "stopped by SIG" in out
    assert len([ln for ln in out.splitlines() if "stopped by SIG" in ln]) == 1, out
    status = json.loads((tmp_path / "o" / "status.json").read_text())
    assert status["status"] == "interrupted"
    assert not (tmp_path / "o" / "latest" / "summary.json").exists()
    assert not (tmp_path / "o" / ".dlio_mpi.lock").exists()


def test_a_rank_killed_ends_the_job(tmp_path):
    """Rank 1 killed: the others wait in the step's collective call, where Python's signal
    handlers cannot run, until the launcher ends them; rank 0's C-level guard still marks the
    run interrupted."""
    p = start(tmp_path, 3, *LONG)
    wait_running(tmp_path, p)
    ranks = rank_pids(tmp_path, p)
    assert len(ranks) == 3, ranks
    t0 = time.time()
    rank0 = json.loads((tmp_path / "o" / ".dlio_mpi.lock").read_text())["pid"]
    victim = next(pid for pid in ranks if pid != rank0)
    os.kill(victim, signal.SIGKILL)
    out = finish(p)
    assert time.time() - t0 < 30
    assert p.returncode != 0
    status = json.loads((tmp_path / "o" / "status.json").read_text())
    assert status["status"] == "interrupted", status
    assert not (tmp_path / "o" / "latest" / "summary.json").exists()
    # the rank that died is named (before: "stopped by SIGTERM", as a user's cancel)
    died = re.search(r"^rank (\d+) \(pid (\d+)\) died; the launcher ended the job",
                     status["reason"])
    assert died and int(died.group(2)) == victim and died.group(1) in ("1", "2"), status
    stopped = [ln for ln in out.splitlines() if "stopped by SIG" in ln]
    assert all(f"after rank {died.group(1)} (pid {victim}) died; the run is marked "
               "interrupted" in ln for ln in stopped), out


def test_a_second_run_into_a_busy_output_folder_is_refused(tmp_path):
    """The refused run touches nothing of the live one: its status stays running, no failure
    note, and a later SIGTERM of the live run marks it interrupted, not failed."""
    p = start(tmp_path, 2, *LONG)
    wait_running(tmp_path, p)
    lock = (tmp_path / "o" / ".dlio_mpi.lock").read_text()
    try:
        q = run_mpi(2, "run_cli.py", "run", f"dataset.data_folder={tmp_path}/d2",
                    f"output.folder={tmp_path}/o", check=False, timeout=60)
        assert q.returncode != 0
        assert f"output folder {tmp_path}/o is in use by another run (pid" in q.stdout
        assert json.loads((tmp_path / "o" / "status.json").read_text())["status"] == "running"
        assert not (tmp_path / "o" / ".dlio_mpi.failed").exists()
        assert (tmp_path / "o" / ".dlio_mpi.lock").read_text() == lock
        live = os.readlink(tmp_path / "o" / "latest")       # the live run's folder only
        assert sorted(f.name for f in (tmp_path / "o").iterdir()) == [
            ".dlio_mpi.lock", live, "latest", "status.json"]
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        finish(p)
    assert json.loads((tmp_path / "o" / "status.json").read_text())["status"] == "interrupted"


def status_cmd(folder):
    return subprocess.run([sys.executable, "-m", "dlio_mpi", "status", str(folder)],
                          capture_output=True, text=True, timeout=60)


def test_rank_0_killed_marks_the_run_interrupted(tmp_path):
    """kill -9 of rank 0: the launcher ends the job; a rank beside it (blocked in the step's
    collective call) marks the run interrupted, naming rank 0's death."""
    p = start(tmp_path, 3, *LONG)
    wait_running(tmp_path, p)
    assert status_cmd(tmp_path / "o").stdout.startswith(f"{tmp_path}/o: running, rank 0 is pid")
    rank0 = json.loads((tmp_path / "o" / ".dlio_mpi.lock").read_text())["pid"]
    os.kill(rank0, signal.SIGKILL)
    finish(p)
    assert p.returncode != 0
    status = json.loads((tmp_path / "o" / "status.json").read_text())
    assert status["status"] == "interrupted", status
    assert status["reason"].startswith(f"rank 0 (pid {rank0}) died; the launcher ended the job")
    assert not (tmp_path / "o" / "latest" / "summary.json").exists()
    s = status_cmd(tmp_path / "o")
    assert s.returncode == 1 and s.stdout.startswith(f"{tmp_path}/o: interrupted (rank 0 (pid")


def test_status_names_a_run_that_died_marked_running(tmp_path):
    """A folder marked running whose lock names a dead pid on this host is said to be dead."""
    out = tmp_path / "o"
    out.mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()
    (out / ".dlio_mpi.lock").write_text(json.dumps({"host": os.uname().nodename,
                                                     "pid": dead.pid}))
    (out / "status.json").write_text(json.dumps({"status": "running"}))
    s = status_cmd(out)
    assert s.returncode == 1
    assert s.stdout.strip() == (f"{out}: running; but its rank 0 (pid {dead.pid} on "
                                f"{os.uname().nodename}) is gone: the run died without marking "
                                "it (the next run takes the folder over)")
    (out / ".dlio_mpi.lock").write_text(json.dumps({"host": os.uname().nodename,
                                                     "pid": os.getpid()}))
    s = status_cmd(out)
    assert s.returncode == 0 and s.stdout.strip() == (
        f"{out}: running, rank 0 is pid {os.getpid()} on {os.uname().nodename}")
    assert status_cmd(tmp_path / "none").stdout.strip() == f"{tmp_path}/none: no run (no status.json)"


def test_a_stale_lock_is_taken_over(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()
    (out / ".dlio_mpi.lock").write_text(json.dumps({"host": os.uname().nodename,
                                                     "pid": dead.pid}))
    (out / "summary.json").write_text("{}")        # an earlier version's results
    run_mpi(1, "run_cli.py", "run", f"dataset.data_folder={tmp_path}/d", f"output.folder={out}",
            "train.epochs=1", timeout=60)
    assert json.loads((out / "status.json").read_text())["status"] == "complete"
    assert run_summary(out)["num_accelerators"] == 1
    assert not (out / "summary.json").exists()


def test_unwritable_output_folder(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    p = run_mpi(2, "run_cli.py", "run", f"dataset.data_folder={tmp_path}/d",
                f"output.folder={blocker}/o", check=False, timeout=60)
    assert p.returncode != 0
    assert f"output directory {blocker}/o cannot be written: Not a directory" in p.stdout


def test_a_rank_killed_during_a_file_per_rank_checkpoint_leaves_no_whole_looking_shard(
        tmp_path):
    """Rank 1 stopped while its shard is written, rank 0's shard finished meanwhile, then rank
    1 killed: no file of that checkpoint has its final name (only .part files may be left)."""
    ck = tmp_path / "c"
    p = start(tmp_path, 2, "workflow.train=false", "workflow.checkpoint=true",
              "checkpoint.num_checkpoints_write=3", "checkpoint.num_checkpoints_read=0",
              "model.model_size_bytes=256m", "checkpoint.writers=all",
              "checkpoint.format=file_per_rank", f"checkpoint.checkpoint_folder={ck}")
    t0 = time.time()
    rank0 = rank1 = None
    while time.time() - t0 < 60 and rank1 is None:
        shard1 = ck / "ckpt-000001-r000001.bin.part"
        if shard1.exists() and (tmp_path / "o" / ".dlio_mpi.lock").exists():
            rank0 = json.loads((tmp_path / "o" / ".dlio_mpi.lock").read_text())["pid"]
            rank1 = [x for x in rank_pids(tmp_path, p) if x != rank0][0]
            os.kill(rank1, signal.SIGSTOP)
        time.sleep(0.002)
    assert rank1, "checkpoint 1 was never written"
    shard0 = ck / "ckpt-000001-r000000.bin"
    t1 = time.time()        # rank 0 finishes its shard meanwhile (whole, as .part)
    while time.time() - t1 < 20 and (ck / "ckpt-000001-r000000.bin.part").exists() and \
            os.path.getsize(ck / "ckpt-000001-r000000.bin.part") < 128 << 20:
        time.sleep(0.01)
    time.sleep(1.0)
    os.kill(rank1, signal.SIGKILL)
    finish(p)
    assert p.returncode != 0
    assert not shard0.exists() and not (ck / "ckpt-000001-r000001.bin").exists(), \
        sorted(f.name for f in ck.iterdir())
    # the checkpoint before it is whole, under its final names
    assert sorted(f.name for f in ck.iterdir() if f.name.startswith("ckpt-000000")) == [
        "ckpt-000000-r000000.bin", "ckpt-000000-r000001.bin"]
    assert json.loads((tmp_path / "o" / "status.json").read_text())["status"] != "complete"


def test_clean_removes_the_part_files_of_a_checkpoint_a_killed_rank_left(tmp_path):
    """The checkpoint folder's record names a checkpoint's files before they are written: after
    a rank is killed during the writes, clean removes the .part files left, and the folder."""
    ck = tmp_path / "c"
    args = ["workflow.train=false", "workflow.checkpoint=true",
            "checkpoint.num_checkpoints_write=50", "checkpoint.num_checkpoints_read=0",
            "model.model_size_bytes=64m", "checkpoint.writers=all",
            "checkpoint.format=file_per_rank", f"checkpoint.checkpoint_folder={ck}"]
    p = start(tmp_path, 2, *args)
    t0 = time.time()
    while time.time() - t0 < 60 and not list(ck.glob("*.part")):
        time.sleep(0.002)
    os.kill(rank_pids(tmp_path, p)[-1], signal.SIGKILL)
    finish(p)
    assert list(ck.glob("*.part")), sorted(f.name for f in ck.iterdir())
    q = subprocess.run([sys.executable, "-m", "dlio_mpi", "clean", f"dataset.data_folder="
                        f"{tmp_path}/d", *args], capture_output=True, text=True, timeout=60)
    assert q.returncode == 0, q.stderr
    assert not ck.exists(), sorted(f.name for f in ck.iterdir())


def test_a_lock_naming_a_reused_pid_is_taken_over(tmp_path):
    """A lock left by a crashed run whose pid now belongs to another process (pid 1 here,
    alive, started at another time) is stale: status says the run died and a new run takes
    the folder. Before, a pid that lived was taken for the run ("in use by pid 1")."""
    from dlio_mpi.run import outputs
    out = tmp_path / "o"
    out.mkdir()
    me = outputs._me()
    assert outputs.lock_state(me) == "alive"
    stale = dict(me, pid=1, started=(outputs._started(1) or 0) + 12345)
    assert outputs.lock_state(stale) == "dead"
    assert outputs.lock_state(dict(me, boot="another boot")) == "dead"
    (out / ".dlio_mpi.lock").write_text(json.dumps(stale))
    (out / "status.json").write_text(json.dumps({"status": "running"}))
    s = status_cmd(out)
    assert s.returncode == 1 and "its rank 0 (pid 1 on" in s.stdout and "is gone" in s.stdout
    run_mpi(1, "run_cli.py", "run", f"dataset.data_folder={tmp_path}/d", f"output.folder={out}",
            "train.epochs=1", timeout=60)
    assert json.loads((out / "status.json").read_text())["status"] == "complete"


@pytest.mark.parametrize("body", ["[1]", "1", "\"running\"", "null"])
def test_status_of_a_status_file_that_is_no_object_is_one_line(tmp_path, body):
    out = tmp_path / "o"
    out.mkdir()
    (out / "status.json").write_text(body)
    (out / ".dlio_mpi.lock").write_text(body)
    s = status_cmd(out)
    assert s.returncode == 1
    assert s.stdout.strip() == f"{out}: status.json cannot be read (not a JSON object)"
    assert "Traceback" not in s.stdout + s.stderr


@pytest.mark.parametrize("fmt", ["file_per_rank", "mpiio"])
def test_a_signal_during_a_checkpoint_marks_the_run_interrupted(tmp_path, fmt):
    """A job cancelled while it writes a checkpoint is interrupted, not a storage failure.
    Before: "failed: checkpoint 2 write failed: rank 0: SIGTERM"."""
    ck = tmp_path / "c"
    p = start(tmp_path, 2, "workflow.train=false", "workflow.checkpoint=true",
              "checkpoint.num_checkpoints_write=200", "checkpoint.num_checkpoints_read=0",
              "model.model_size_bytes=64m", f"checkpoint.format={fmt}",
              f"checkpoint.checkpoint_folder={ck}")
    t0 = time.time()
    while time.time() - t0 < 60 and not list(ck.glob("*.part")):
        if p.poll() is not None:
            pytest.fail(f"the run ended early:\n{p.communicate()[0]}")
        time.sleep(0.01)
    os.killpg(p.pid, signal.SIGTERM)
    out = finish(p)
    assert p.returncode != 0
    status = json.loads((tmp_path / "o" / "status.json").read_text())
    assert status["status"] == "interrupted", (status, out)
    # the launcher may end a rank inside its write before it says anything: never a failure
    assert "write failed" not in out + status["reason"], out


def start_generate(tmp_path, n, *extra):
    """generate on n ranks under mpiexec, or on one process without a launcher (n=0)."""
    cmd = (mpiexec_cmd(n) if n else []) + [
        sys.executable, os.path.join(HERE, "mpi", "run_cli.py"), "generate",
        f"dataset.data_folder={tmp_path}/d", f"output.folder={tmp_path}/o", *extra]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, env=signalled_job_env(),
                            stdin=subprocess.DEVNULL)


def wait_generating(tmp_path, p, timeout=60):
    """Until the first files of the dataset are written (its manifest says in progress)."""
    train = tmp_path / "d" / "train"
    t0 = time.time()
    while time.time() - t0 < timeout:
        if train.is_dir() and len(os.listdir(train)) > 20:
            return
        if p.poll() is not None:
            pytest.fail(f"the generation ended early:\n{p.communicate()[0]}")
        time.sleep(0.05)
    os.killpg(p.pid, signal.SIGKILL)
    pytest.fail("the generation did not start")


@pytest.mark.parametrize("ranks", [2, 0], ids=["mpiexec-2", "alone"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_generate_is_said(tmp_path, sig, ranks):
    """Before: no line at all, exit 1. One line; the rank exits 128 + the signal's number
    (mpiexec, itself signalled, exits 1); the files written stay and the manifest says in
    progress, so a run refuses the dataset and clean removes it."""
    p = start_generate(tmp_path, ranks, "dataset.num_files_train=100000",
                       "dataset.num_samples_per_file=1", "dataset.record_length=4k")
    wait_generating(tmp_path, p)
    os.killpg(p.pid, sig)
    out = finish(p)
    lines = [ln for ln in out.splitlines() if ln.startswith("dlio_mpi: ")]
    assert len(lines) == 1, out
    # mpiexec passes a SIGINT on to the ranks as SIGTERM
    got = sig if not ranks else signal.SIGTERM
    assert lines[0].startswith(f"dlio_mpi: rank 0: stopped by {got.name}; "), out
    assert f"the generation of {tmp_path}/d did not finish" in lines[0], out
    assert "Traceback" not in out, out
    assert p.returncode == (128 + sig if not ranks else 1), (p.returncode, out)
    manifest = json.loads((tmp_path / "d" / "manifest.json").read_text())
    assert manifest["state"] == "in_progress", manifest


def test_a_second_run_into_a_busy_checkpoint_folder_is_refused(tmp_path):
    """Before: two runs sharing a checkpoint folder replaced each other's checkpoints without
    a word. The second is refused before any I/O, naming the folder and the live run."""
    ck = tmp_path / "ck"
    with_ckpt = ["workflow.checkpoint=true", "model.model_size_bytes=64k",
                 f"checkpoint.checkpoint_folder={ck}"]
    p = start(tmp_path, 2, *LONG, *with_ckpt)
    wait_running(tmp_path, p)
    try:
        lock = json.loads((ck / ".dlio_mpi_checkpoints.lock").read_text())
        q = run_mpi(2, "run_cli.py", "run", f"dataset.data_folder={tmp_path}/d",
                    f"output.folder={tmp_path}/o2", *with_ckpt, "train.epochs=1",
                    check=False, timeout=60)
        assert q.returncode != 0
        lines = [ln for ln in q.stdout.splitlines() if ln.startswith("dlio_mpi: ")]
        assert lines == [f"dlio_mpi: rank 0: checkpoint folder {ck} is in use by another run "
                         f"(pid {lock['pid']} on {lock['host']}); if that run is gone, remove "
                         f"{ck}/.dlio_mpi_checkpoints.lock"], q.stdout
        assert json.loads((tmp_path / "o2" / "status.json").read_text())["status"] == "failed"
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        finish(p)
    assert not (ck / ".dlio_mpi_checkpoints.lock").exists()      # given back when stopped


def test_a_second_generate_into_a_folder_being_generated_is_refused(tmp_path):
    """Before: one of two generates at once failed with "manifest.json.part: No such file or
    directory". The second is refused at once, naming the folder and the first one's pid."""
    big = ["dataset.num_files_train=100000", "dataset.num_samples_per_file=1",
           "dataset.record_length=4k"]
    p = start_generate(tmp_path, 2, *big)
    wait_generating(tmp_path, p)
    try:
        lock = json.loads((tmp_path / "d" / ".dlio_mpi_generating.lock").read_text())
        q = run_mpi(2, "run_cli.py", "generate", f"dataset.data_folder={tmp_path}/d",
                    f"output.folder={tmp_path}/o2", *big, check=False, timeout=60)
        assert q.returncode != 0
        lines = [ln for ln in q.stdout.splitlines() if ln.startswith("dlio_mpi: ")]
        assert lines == [f"dlio_mpi: rank 0: {tmp_path}/d is being generated by another "
                         f"process (pid {lock['pid']} on {lock['host']}): wait for it to "
                         f"finish; if it is gone, remove {tmp_path}/d/.dlio_mpi_generating.lock"
                         ], q.stdout
        assert p.poll() is None         # the first one goes on
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        finish(p)
    assert not (tmp_path / "d" / ".dlio_mpi_generating.lock").exists()

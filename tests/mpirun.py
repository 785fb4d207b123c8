"""Run a script under mpiexec from a test: a hang is killed by a timeout, an MPI failure or a
non-zero exit on any rank fails the test with the ranks' output."""
import os
import signal
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def signalled_job_env():
    """The environment for a job a test signals. Open MPI's mpiexec kills the ranks 1 s after
    passing a signal on (odls_base_sigkill_timeout); on a loaded 2-core machine a rank can
    need longer to print its one line, which is what these tests check."""
    return dict(os.environ, OMPI_MCA_odls_base_sigkill_timeout="10")


def mpiexec_cmd(n):
    from dlio_mpi_analysis.replays.launch import LaunchError, mpiexec_command
    try:
        return mpiexec_command(n)
    except LaunchError:
        pytest.fail("mpiexec not found: run scripts/setup.sh")


def bind_to_core():
    """Launcher arguments that bind every rank to a core, more ranks than cores allowed."""
    from dlio_mpi_analysis.replays.launch import mpiexec_command
    return mpiexec_command(1, bind="core")[len(mpiexec_command(1)):]


def bind_to_none():
    """Launcher arguments that bind no rank: a rank's threads run on all the cores at once."""
    from dlio_mpi_analysis.replays.launch import mpiexec_command
    return mpiexec_command(1, bind="none")[len(mpiexec_command(1)):]


def session_processes(sid):
    """Each process of session sid with its state and the kernel function it waits in."""
    ps = subprocess.run(["ps", "-s", str(sid), "-L", "-o", "pid,lwp,stat,pcpu,wchan:24,args"],
                        capture_output=True, text=True)
    return "\n".join(line[:160] for line in ps.stdout.splitlines())


def _ranks_ended(sid):
    """True when every process of the launcher's session but the launcher itself (pid sid)
    has exited: gone, or a zombie the launcher has not reaped."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == sid:
            continue
        try:
            if os.getsid(int(entry)) != sid:
                continue
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            return False
    return True


# how long the launcher may take to exit once all its ranks have
LAUNCHER_GRACE_S = 15


def communicate_job(p, timeout):
    """(output, launcher_hung) of the job p launched (mpiexec in a session of its own), or
    TimeoutExpired after timeout seconds. Open MPI 4.1's mpiexec, signalled while its ranks
    exit, can deadlock in its own PMIx server's finalize with every rank gone (openpmix issue
    1244: its main thread joins a progress thread that waits on a lock): the ranks' behaviour
    is then all there is to check, so mpiexec is killed after LAUNCHER_GRACE_S seconds and
    launcher_hung is True."""
    end = time.monotonic() + timeout
    ended_at = None
    chunks = []
    while True:
        try:
            out, _ = p.communicate(timeout=0.5)
            chunks.append(out or "")
            return "".join(chunks), False
        except subprocess.TimeoutExpired as e:
            partial = e.output.decode() if isinstance(e.output, bytes) else (e.output or "")
        now = time.monotonic()
        if _ranks_ended(p.pid):
            ended_at = ended_at or now
            if now - ended_at > LAUNCHER_GRACE_S:
                os.kill(p.pid, signal.SIGKILL)
                out, _ = p.communicate()
                return (out or partial), True
        else:
            ended_at = None
        if now > end:
            raise subprocess.TimeoutExpired(p.args, timeout, output=partial)


def run_mpi(n, script, *args, timeout=120, env=None, check=True, wrap=(), rank_wrap=(),
            launcher_args=()):
    """Run tests/mpi/<script> on n ranks (the launcher under the command wrap, each rank under
    the command rank_wrap, if given); returns the CompletedProcess."""
    cmd = (list(wrap) + mpiexec_cmd(n) + list(launcher_args) + list(rank_wrap)
           + [sys.executable, os.path.join(HERE, "mpi", script), *map(str, args)])
    full_env = dict(os.environ)
    full_env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    full_env.update(env or {})
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=full_env, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        where = session_processes(p.pid)
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        pytest.fail(f"{script} on {n} ranks hung (killed after {timeout} s); its processes:\n"
                    f"{where}\noutput:\n{out[-4000:]}")
    if check and p.returncode != 0:
        pytest.fail(f"{script} on {n} ranks exited {p.returncode}:\n{out[-6000:]}")
    return subprocess.CompletedProcess(cmd, p.returncode, out, "")

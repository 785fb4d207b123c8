"""Run a script under mpiexec from a test: a hang is killed by a timeout, an MPI failure or a
non-zero exit on any rank fails the test with the ranks' output."""
import os
import signal
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


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

"""Running the emulator under mpiexec from the analysis (the paper study, replays): the launcher
command, a run with a timeout whose process group is killed on expiry, and one error naming
what failed with the end of its output."""

import os
import shlex
import shutil
import signal
import subprocess
import sys


class LaunchError(RuntimeError):
    """A launched run failed or timed out; the message names it and ends with its output."""


def mpiexec_command(ranks, launcher=None, bind=None):
    """The launcher command for ``ranks`` processes: ``launcher`` (a string, split like a
    shell would) or mpiexec from PATH, with Open MPI's --oversubscribe (and
    --allow-run-as-root as root). ``bind``: "core" binds every rank to a core (more ranks
    than cores allowed), "none" binds none, None keeps the library's default (which may
    change with the rank count). The one launcher line of the analysis, the benchmarks
    (scripts/launch.py) and the tests (tests/mpirun.py)."""
    if launcher:
        return shlex.split(launcher) + ["-n", str(ranks)]
    exe = shutil.which("mpiexec")
    if exe is None:
        raise LaunchError("mpiexec not found on PATH (give --mpiexec)")
    cmd = [exe, "-n", str(ranks)]
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    if "Open MPI" in version or "OpenRTE" in version:
        cmd.append("--oversubscribe")
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        if bind == "core":
            cmd += ["--bind-to", "core:overload-allowed"]
        elif bind == "none":
            cmd += ["--bind-to", "none"]
    elif bind is not None:
        cmd += ["-bind-to", bind]           # MPICH's Hydra
    return cmd


def run_emulator(what, ranks, args, *, launcher=None, python=None, timeout=300):
    """``mpiexec -n ranks python -m dlio_mpi ARGS``; returns its output, or raises LaunchError
    naming ``what``."""
    cmd = mpiexec_command(ranks, launcher) + [python or sys.executable, "-m", "dlio_mpi",
                                              *args]
    env = dict(os.environ)
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        raise LaunchError(f"{what}: no result after {timeout} s:\n{output[-3000:]}") from None
    if proc.returncode != 0:
        raise LaunchError(f"{what}: {' '.join(cmd)} exited {proc.returncode}:\n"
                          f"{output[-3000:]}")
    return output

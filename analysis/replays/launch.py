"""Running the emulator under mpiexec from the analysis (the paper study, replays): the launcher
command, a run with a timeout that never outlives the call (on expiry, an exception, SIGTERM or
SIGINT, its processes are ended, with a line saying so), and one error naming what failed with
the end of its output."""

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time


GRACE_S = 5.0      # from SIGTERM to SIGKILL when a job is ended


class LaunchError(RuntimeError):
    """A launched run failed or timed out; the message names it and ends with its output."""


def mpiexec_command(ranks, launcher=None, bind=None):
    """The launcher command for ``ranks`` processes: ``launcher`` (a string, split like a
    shell would) or mpiexec from PATH, with Open MPI's --oversubscribe (and
    --allow-run-as-root as root). ``bind``: "core" binds every rank to a core (more ranks
    than cores allowed), "none" binds none, None keeps the library's default (which may
    change with the rank count). The one launcher line of the analysis, the benchmarks
    (scripts/benchmarks/launch.py) and the tests (tests/mpirun.py)."""
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


# what an MPI process's environment holds once MPI is initialized (Open MPI's singleton, or a
# rank of a job): passed on, a new mpiexec would take itself for a part of that job and fail
_IN_JOB = ("PMIX_", "PMI_", "OMPI_COMM_WORLD_", "OMPI_APP_CTX_", "OMPI_MCA_orte_",
           "OMPI_MCA_ess", "OMPI_MCA_pmix", "ORTE_", "OMPI_FILE_LOCATION", "OMPI_UNIVERSE_SIZE",
           "HYDI_", "MPI_LOCALRANKID", "MPI_LOCALNRANKS")


def _process_environment():
    """The process's environment as the C library holds it: MPI_Init sets variables there
    that os.environ (read at start-up) does not see."""
    import ctypes
    try:
        environ = ctypes.POINTER(ctypes.c_char_p).in_dll(ctypes.CDLL(None), "environ")
    except (OSError, ValueError):
        return dict(os.environ)
    out, i = {}, 0
    while environ[i]:
        k, _, v = environ[i].decode(errors="surrogateescape").partition("=")
        out[k] = v
        i += 1
    return out


def launch_environment(environ):
    """The environment a new job is launched with: this process's, without what marks it a part
    of an MPI job already (a caller that initialized MPI: a test, a notebook that imported the
    engines, a rank); the user's own settings (OMPI_MCA_io, ...) are kept."""
    return {k: v for k, v in environ.items() if not k.startswith(_IN_JOB)}


def run_emulator(what, ranks, args, *, launcher=None, python=None, timeout=300, watch=None,
                 every=10.0):
    """``mpiexec -n ranks python -m dlio_mpi ARGS``; returns its output, or raises LaunchError
    naming ``what``. ``watch``, when given, is called every ``every`` seconds while the job
    runs (a progress line, say). However this call ends (the job done, its timeout, an
    exception, SIGTERM or SIGINT to this process), the job ends with it: see
    :func:`end_job`; a signal then raises :class:`Interrupted`."""
    cmd = mpiexec_command(ranks, launcher) + [python or sys.executable, "-m", "dlio_mpi",
                                              *args]
    env = launch_environment(_process_environment())
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    # a session of its own: a terminal's ^C reaches this process only, which ends the job
    # itself (and can say so)
    with _signals_raised():
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, env=env, start_new_session=True)
        try:
            output = _wait(proc, what, timeout, watch, every)
        except BaseException as error:
            why = str(error) if isinstance(error, Interrupted) else \
                f"stopped by {type(error).__name__}"
            end_job(proc, what, why)
            proc.stdout.close()
            raise
        if _session_members(proc.pid):
            end_job(proc, what, "mpiexec is done but processes of its job are left")
    if proc.returncode != 0:
        raise LaunchError(f"{what}: {' '.join(cmd)} exited {proc.returncode}:\n"
                          f"{output[-3000:]}")
    return output


class Interrupted(LaunchError):
    """SIGTERM or SIGINT reached the process running a job; the job was ended."""

    def __init__(self, signum):
        self.signum = signum
        super().__init__(f"stopped by {signal.Signals(signum).name}")


def _wait(proc, what, timeout, watch, every):
    deadline = time.monotonic() + timeout
    chunks = []
    while True:
        left = deadline - time.monotonic()
        try:
            out, _ = proc.communicate(timeout=max(0.0, min(every if watch else left, left)))
            chunks.append(out or "")
            return "".join(chunks)
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline:
                end_job(proc, what, why=f"no result after {timeout} s")
                out, _ = proc.communicate()
                raise LaunchError(f"{what}: no result after {timeout} s:\n"
                                  f"{(out or '')[-3000:]}") from None
            if watch:
                watch()


@contextlib.contextmanager
def _signals_raised():
    """SIGTERM and SIGINT raise Interrupted while a job runs (in the main thread; elsewhere
    Python cannot take signals), so that the code ending the job runs; the previous handlers
    come back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    raised = []

    def raise_interrupted(signum, frame):
        if not raised:          # a second signal must not cut short the ending of the job
            raised.append(signum)
            raise Interrupted(signum)

    previous = {s: signal.signal(s, raise_interrupted) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _session_members(sid):
    """The processes of session ``sid`` (the launcher's own session): mpiexec and the ranks
    it started, which Open MPI puts in process groups of their own."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getsid(int(entry)) == sid:
                    members.append(int(entry))
            except OSError:         # gone meanwhile, or not ours to see
                pass
    return members


def end_job(proc, what, why, grace=GRACE_S):
    """End the job ``proc`` launched and every process of its session: SIGTERM (mpiexec
    passes it to the ranks, which mark their run interrupted), then SIGKILL to whatever is
    left after ``grace`` seconds. One line on stderr says so."""
    print(f"{what}: {why}: ending its job (mpiexec pid {proc.pid} and its ranks: SIGTERM, "
          f"SIGKILL after {grace:g} s)", file=sys.stderr, flush=True)
    _signal_all(proc.pid, signal.SIGTERM)
    end = time.monotonic() + grace
    while time.monotonic() < end:
        proc.poll()
        if not _session_members(proc.pid):
            break
        time.sleep(0.05)
    else:
        _signal_all(proc.pid, signal.SIGKILL)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass


def _signal_all(sid, signum):
    for pid in _session_members(sid):
        try:
            os.kill(pid, signum)
        except OSError:
            pass

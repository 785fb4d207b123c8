"""The mpiexec command line the benchmark scripts use."""
import os
import subprocess


def mpiexec(n, bind=None):
    """mpiexec -n N, with Open MPI's flags for more ranks than cores and for root; bind "core"
    binds every rank to a core (more ranks than cores allowed), "none" binds none, None keeps
    the library's default (which may change with N)."""
    cmd = ["mpiexec", "-n", str(n)]
    out = subprocess.run(["mpiexec", "--version"], capture_output=True, text=True).stdout
    if "Open MPI" in out or "OpenRTE" in out:
        cmd += ["--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
        if bind == "core":
            cmd += ["--bind-to", "core:overload-allowed"]
        elif bind == "none":
            cmd += ["--bind-to", "none"]
    elif bind is not None:
        cmd += ["-bind-to", bind]          # MPICH's Hydra
    return cmd

"""The mpiexec command line the benchmark scripts use."""
import os
import subprocess


def mpiexec(n):
    """mpiexec -n N, with Open MPI's flags for more ranks than cores and for root."""
    cmd = ["mpiexec", "-n", str(n)]
    out = subprocess.run(["mpiexec", "--version"], capture_output=True, text=True).stdout
    if "Open MPI" in out or "OpenRTE" in out:
        cmd += ["--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    return cmd

"""A whole run (dataset generated first) with this rank's resident size before it, its peak
resident size after it (VmHWM) and the memory estimate of the run (memory_budget), as JSON."""
import json
import sys

from mpi4py import MPI

from dlio_mpi.config import loader as config
from dlio_mpi.config import memory_budget
from dlio_mpi.run import job as runner


def status(key):
    with open("/proc/self/status") as f:
        return next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith(key + ":"))


comm = MPI.COMM_WORLD
cfg = config.load(("workload=default",) + tuple(sys.argv[1:]))
before = status("VmRSS")
estimate, phase, _ = memory_budget.rank_need(cfg, comm.Get_size(), comm.Get_rank(), True)
runner.run(cfg, comm, echo=lambda *a: None)
peak = status("VmHWM")
rows = comm.gather({"before": before, "peak": peak, "estimate": estimate, "phase": phase})
if comm.Get_rank() == 0:
    print(json.dumps(max(rows, key=lambda r: r["peak"] - r["before"] - r["estimate"])))

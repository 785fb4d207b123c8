"""Scale benchmark: what a rank costs until its first batch as the rank count grows, at 1, 2, 4,
8, 16 and 32 ranks on one dataset (oversubscribed on a small machine, so wall time says little
past the core count; CPU time per rank is the figure that must not grow).

For each rank count: time to the first batch (from the launch of mpiexec), CPU seconds a rank
spends until its first batch (mean and max over ranks), peak RSS per rank, and metadata
operations per rank: the file-system metadata system calls (open, stat, access, directory
reads, ...) each rank makes in the whole run, counted by strace in a separate pass (Python's own
imports included), and the data-file opens of the op log. Prints a table, then one JSON object
on the last line.

    scripts/bench-scale [--ranks 1,2,4,8,16,32] [--rounds 2] [--dir DIR]
"""
import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from launch import mpiexec

META = ("open", "openat", "openat2", "stat", "lstat", "fstat", "newfstatat", "statx", "access",
        "faccessat", "faccessat2", "getdents64", "readlink", "readlinkat", "mkdir", "unlink",
        "rename", "statfs")


def run(n, args, wrap=None, env=None):
    prog = [sys.executable, "-m", "dlio_mpi", "run"] + args
    if wrap:
        prog = wrap + prog
    p = subprocess.run(mpiexec(n) + prog, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"bench-scale: run at {n} ranks failed:\n{p.stderr[-3000:]}")


def strace_counts(path):
    """System calls of one traced process (strace -c summary): {name: calls}."""
    out = {}
    for line in open(path):
        m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$", line)
        if m:
            out[m.group(2)] = int(m.group(1))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="1,2,4,8,16,32")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    counts = [int(x) for x in args.ranks.split(",")]
    tmp = tempfile.mkdtemp(prefix="dlio_mpi_bench_scale_", dir=args.dir)
    data = os.path.join(tmp, "data")
    common = ["workload=default", f"dataset.data_folder={data}", "dataset.num_files_train=64",
              "dataset.num_samples_per_file=4", "dataset.record_length=64k",
              "reader.batch_size=2", "train.epochs=1", "train.computation_time=0"]
    strace = shutil.which("strace")
    rows = []
    try:
        run(2, common + [f"output.folder={tmp}/gen"])          # the dataset, once
        for n in counts:
            out = os.path.join(tmp, f"out{n}")
            first, cpu_mean, cpu_max, rss = [], [], [], []
            for _ in range(args.rounds):
                # waiting ranks yield the core instead of spinning (oversubscribed)
                env = dict(os.environ, DLIO_MPI_LAUNCH_TIME=repr(time.time()),
                           OMPI_MCA_mpi_yield_when_idle="1")
                run(n, common + [f"output.folder={out}", "io.keep_oplog=true"], env=env)
                s = json.load(open(os.path.join(out, "summary.json")))["startup"]
                first.append(s["first_batch_s_max"])
                cpu_mean.append(s["first_batch_cpu_s_mean"])
                cpu_max.append(s["first_batch_cpu_s_max"])
                rss.append(s["peak_rss_mib_max"])
            opens = []
            for f in glob.glob(os.path.join(out, "oplog_rank*.npz")):
                import numpy as np
                with np.load(f) as z:
                    opens.append(int((z["e0_op"] == 2).sum()))
            meta = None
            if strace:
                sdir = os.path.join(tmp, f"strace{n}")
                os.makedirs(sdir)
                wrap = ["sh", "-c", f'exec {strace} -f -qq -c -o {sdir}/st.$$ "$@"', "sh"]
                run(n, common + [f"output.folder={out}s"], wrap=wrap)
                per = [sum(v for k, v in strace_counts(p).items() if k in META)
                       for p in glob.glob(os.path.join(sdir, "st.*"))]
                meta = statistics.mean(per) if per else None
            rows.append({"ranks": n, "first_batch_s": statistics.median(first),
                         "cpu_s_mean": statistics.median(cpu_mean),
                         "cpu_s_max": statistics.median(cpu_max),
                         "rss_mib": statistics.median(rss),
                         "data_opens_per_rank": statistics.mean(opens) if opens else 0,
                         "meta_syscalls_per_rank": meta})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'ranks':>6}{'first batch s':>15}{'CPU s/rank':>12}{'CPU s max':>11}"
          f"{'RSS MiB':>9}{'data opens':>12}{'meta syscalls':>15}")
    for r in rows:
        meta = f"{r['meta_syscalls_per_rank']:.0f}" if r["meta_syscalls_per_rank"] else "-"
        print(f"{r['ranks']:>6}{r['first_batch_s']:>15.3f}{r['cpu_s_mean']:>12.3f}"
              f"{r['cpu_s_max']:>11.3f}{r['rss_mib']:>9.1f}{r['data_opens_per_rank']:>12.1f}"
              f"{meta:>15}")
    lo, hi = rows[0], rows[-1]
    print(json.dumps({
        "startup_cpu_per_rank_growth_1_to_32": round(hi["cpu_s_mean"] / lo["cpu_s_mean"], 3),
        "meta_ops_per_rank_32": hi["meta_syscalls_per_rank"],
        "meta_ops_per_rank_1": lo["meta_syscalls_per_rank"],
        "data_opens_per_rank_32": hi["data_opens_per_rank"],
        "first_batch_s": {r["ranks"]: round(r["first_batch_s"], 3) for r in rows},
        "cpu_s_per_rank": {r["ranks"]: round(r["cpu_s_mean"], 3) for r in rows},
        "rss_mib_per_rank": {r["ranks"]: round(r["rss_mib"], 1) for r in rows},
        "rounds": args.rounds}))


if __name__ == "__main__":
    main()

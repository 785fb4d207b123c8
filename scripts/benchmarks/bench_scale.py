"""Scale benchmark: what a rank costs until its first batch as the rank count grows, at 1, 2, 4,
8, 16 and 32 ranks on one dataset (oversubscribed on a small machine, so wall time says little
past the core count; CPU time per rank is the figure that must not grow).

For each rank count: time to the first batch (from the launch of mpiexec, slowest rank), CPU
seconds a rank spends until its first batch (mean and max over ranks), peak RSS per rank, and
metadata operations per rank until its first batch: the metadata system calls (open, stat,
access, directory reads, ...) each rank makes before its first batch is in, counted by strace
in a separate pass and sorted by what they touch (the run's data and output files, Python's
imports, other libraries and /etc, open descriptors; and the node-local ones: the MPI library's
shared-memory and session files, /proc, /sys, /dev). The figure that must not grow is the calls
that can reach a file system; the node-local ones are shown beside it (Open MPI's MPI_Init
opens the shared-memory segment of every rank on the node, so they grow with ranks per node). Every
run binds its ranks the same way (--bind core, the default, or none): Open MPI binds to cores
at 1 and 2 ranks and not above, and an unbound rank loads the node's hardware topology itself
(a few hundred more calls into /sys), which would show as growth that is not the rank count's.
Prints a table, then one JSON object on the last line.

    scripts/bench-scale [--ranks 1,2,4,8,16,32] [--rounds 5] [--bind core|none] [--dir DIR]
"""
import argparse
import csv
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import metaops
from launch import mpiexec
from dlio_mpi.run import outputs
from dlio_mpi.run import summary_layout


def run(n, args, bind, wrap=None, env=None):
    prog = [sys.executable, "-m", "dlio_mpi", "run"] + args
    if wrap:
        prog = wrap + prog
    p = subprocess.run(mpiexec(n, bind) + prog, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"bench-scale: run at {n} ranks failed:\n{p.stderr[-3000:]}")


def per_rank(out):
    with open(os.path.join(outputs.results_folder(out), "per_rank.csv")) as f:
        return {int(r["rank"]): r for r in csv.DictReader(f)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="1,2,4,8,16,32")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--bind", choices=("core", "none"), default="core")
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    counts = [int(x) for x in args.ranks.split(",")]
    tmp = tempfile.mkdtemp(prefix="dlio_mpi_bench_scale_", dir=args.dir)
    data = os.path.join(tmp, "data")
    common = ["workload=default", f"dataset.data_folder={data}", "dataset.num_files_train=64",
              "dataset.num_samples_per_file=4", "dataset.record_length=64k",
              "reader.batch_size=2", "train.epochs=1", "train.computation_time=0"]
    strace = shutil.which("strace")
    if not strace:
        print("bench-scale: strace not found (scripts/setup.sh installs it): metadata "
              "operations are not counted", file=sys.stderr)
    rows = []
    try:
        run(2, common + [f"output.folder={tmp}/gen"], args.bind)          # the dataset, once
        timed = {n: {"first": [], "cpu_mean": [], "cpu_max": [], "rss": []} for n in counts}
        # rounds outside, rank counts inside: a change in the machine's load reaches every
        # rank count alike
        for _ in range(args.rounds):
            for n in counts:
                # waiting ranks yield the core instead of spinning (oversubscribed)
                env = dict(os.environ, DLIO_MPI_LAUNCH_TIME=repr(time.time()),
                           OMPI_MCA_mpi_yield_when_idle="1")
                out = os.path.join(tmp, f"out{n}")
                run(n, common + [f"output.folder={out}", "io.keep_oplog=true"], args.bind,
                    env=env)
                s = summary_layout.load(out)[1]["startup"]
                t = timed[n]
                t["first"].append(s["first_batch_s_max"])
                t["cpu_mean"].append(s["first_batch_cpu_s_mean"])
                t["cpu_max"].append(s["first_batch_cpu_s_max"])
                t["rss"].append(s["peak_rss_mib_max"])
        for n in counts:
            out = os.path.join(tmp, f"out{n}")
            first, cpu_mean, cpu_max, rss = (timed[n][k] for k in
                                             ("first", "cpu_mean", "cpu_max", "rss"))
            import numpy as np
            opens = []
            for f in glob.glob(os.path.join(out, "oplog_rank*.npz")):
                with np.load(f) as z:
                    opens.append(int((z["e0_op"] == 2).sum()))
            meta = meta_max = meta_all = kinds = None
            if strace:
                sdir, sout = os.path.join(tmp, f"strace{n}"), os.path.join(tmp, f"souts{n}")
                os.makedirs(sdir)
                run(n, common + [f"output.folder={sout}"], args.bind,
                    wrap=metaops.strace_wrap(strace, sdir))
                ranks = per_rank(sout)
                per = [metaops.classify(
                    metaops.read(os.path.join(sdir, f"rank.{r}"),
                                 until=float(ranks[r]["first_batch_unix_s"])),
                    project=[data, sout]) for r in sorted(ranks)]
                kinds = {k: statistics.mean(c[k] for c in per) for k in metaops.KINDS}
                meta = statistics.mean(metaops.on_file_systems(c) for c in per)
                meta_max = max(metaops.on_file_systems(c) for c in per)
                meta_all = sum(kinds.values())
            rows.append({"ranks": n, "first_batch_s": statistics.median(first),
                         "cpu_s_mean": statistics.median(cpu_mean),
                         "cpu_s_max": statistics.median(cpu_max),
                         "rss_mib": statistics.median(rss),
                         "data_opens_per_rank": statistics.mean(opens) if opens else 0,
                         "meta_ops_per_rank": meta, "meta_ops_per_rank_max": meta_max,
                         "meta_ops_all_per_rank": meta_all, "meta_ops_by_kind": kinds})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"ranks bound to: {args.bind}; metadata calls per rank until its first batch: on file "
          f"systems (mean, max over ranks), with the node-local ones, and by kind (mean)")
    kinds = list(metaops.KINDS)
    print(f"{'ranks':>5}{'1st batch s':>12}{'CPU s':>7}{'CPU max':>8}{'RSS MiB':>8}"
          f"{'opens':>6}{'fs meta':>8}{'max':>6}{'all':>6}"
          + "".join(f"{k[:11]:>12}" for k in kinds))
    for r in rows:
        line = (f"{r['ranks']:>5}{r['first_batch_s']:>12.3f}{r['cpu_s_mean']:>7.3f}"
                f"{r['cpu_s_max']:>8.3f}{r['rss_mib']:>8.1f}{r['data_opens_per_rank']:>6.1f}")
        if r["meta_ops_per_rank"] is None:
            print(line + f"{'-':>8}")
        else:
            print(line + f"{r['meta_ops_per_rank']:>8.0f}{r['meta_ops_per_rank_max']:>6}"
                  f"{r['meta_ops_all_per_rank']:>6.0f}"
                  + "".join(f"{r['meta_ops_by_kind'][k]:>12.1f}" for k in kinds))
    lo, hi = rows[0], rows[-1]

    def rnd(x, d=1):
        return None if x is None else round(x, d)
    print(json.dumps({
        "startup_cpu_per_rank_growth_1_to_32": round(hi["cpu_s_mean"] / lo["cpu_s_mean"], 3),
        "startup_cpu_per_rank_growth_by_round": [
            round(b / a, 3) for a, b in zip(timed[lo["ranks"]]["cpu_mean"],
                                            timed[hi["ranks"]]["cpu_mean"])],
        # metadata calls that can reach a file system (the node-local /dev/shm, MPI session
        # directory, /proc, /sys and /dev left out), then all of them
        "meta_ops_per_rank_32": rnd(hi["meta_ops_per_rank"]),
        "meta_ops_per_rank_1": rnd(lo["meta_ops_per_rank"]),
        "meta_ops_per_rank_growth_1_to_32": None if lo["meta_ops_per_rank"] is None else
        round(hi["meta_ops_per_rank"] / lo["meta_ops_per_rank"], 3),
        "meta_ops_per_rank_max_32": hi["meta_ops_per_rank_max"],
        "meta_ops_per_rank_max_1": lo["meta_ops_per_rank_max"],
        "meta_ops_per_rank": {r["ranks"]: rnd(r["meta_ops_per_rank"]) for r in rows},
        "meta_ops_with_node_local_per_rank": {r["ranks"]: rnd(r["meta_ops_all_per_rank"])
                                              for r in rows},
        "project_meta_ops_per_rank": {r["ranks"]: rnd(r["meta_ops_by_kind"]["project"])
                                      for r in rows if r["meta_ops_by_kind"]},
        "data_opens_per_rank_32": hi["data_opens_per_rank"],
        "first_batch_s": {r["ranks"]: round(r["first_batch_s"], 3) for r in rows},
        "cpu_s_per_rank": {r["ranks"]: round(r["cpu_s_mean"], 3) for r in rows},
        "rss_mib_per_rank": {r["ranks"]: round(r["rss_mib"], 1) for r in rows},
        "bind": args.bind, "rounds": args.rounds}))


if __name__ == "__main__":
    main()

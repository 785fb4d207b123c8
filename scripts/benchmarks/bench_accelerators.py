"""Accelerators benchmark (MLPerf Storage's figure of merit): for unet3d, resnet50 and cosmoflow,
the largest number of emulated accelerators (ranks of `dlio_mpi run` on this client) whose AU
stays at or above the workload's metric.au, against the number the machine could feed at best:
the aggregate read bandwidth of the same files divided by one accelerator's demand
(batch_size x record_length bytes every computation_time seconds). Prints a table, then one
JSON object on the last line.

Scale: a step's bytes and its compute time are divided by the same factor S (--scale, default
16), so that the demand in bytes/s per accelerator is the workload's and the dataset stays in
the page cache: unet3d's record length (7 records of 146.6 MB / 16 every 0.323 s / 16),
resnet50's batch (400 / 16 = 25 records of 114,660 bytes every 0.014 s); cosmoflow is run
unscaled (one record of 2.8 MB every 3.5 ms: smaller steps would be overhead, not I/O).
resnet50's dataset is the workload's files of 1,251 records, 1,024 / 16 = 64 of them (8.6 GiB),
or, where --max-ranks is larger, as many files as --max-ranks holding the same records (a
stream, as the workload reads its files, gives each rank files of its own): a rank reads a
whole file or more per epoch (50 steps with 64 files, 40 with 80), so that the start of an
epoch (the read-ahead filling, every rank at once) weighs little in its AU (with 16 steps per
epoch at 32 ranks, 12 at 40, it cost 10 points of AU). Elsewhere the number of files is set so that a rank has at least
`steps` steps per epoch at --max-ranks. Each
run has EPOCHS epochs; the first (page cache and buffers warming) is left out: a run's AU is
the mean AU of its later epochs. Reads go through the workload's interface and read threads
(--read-threads overrides them), ranks bound as mpiexec binds them by default (Open MPI: each
rank to one core at 1 and 2 ranks, to a socket beyond), or --bind core / none.

Search: N = 1, 2, 4, ... (doubling, up to --max-ranks) until N fails, then bisection between the
last N that passed and the first that failed. N passes when at least 2 of 3 runs (--rounds; a
majority, the runs stop once it is decided) have AU >= metric.au. Before each run the dataset is
read twice (2 processes, as the limit reads it; not with --direct or --no-warm), the second
read's bandwidth kept: this VM lets pages of a cached dataset go while memory is free (of
resnet50's 9.18 GB, 9.01 GB were left in the page cache after 3 GB were written elsewhere), and
a run that meets them reads them from the disk, its AU then no longer the page cache's
(resnet50 at 48 ranks: 82 % in a search of 15 min without, 93 % after a read).

Limit: scripts/benchmarks/read_bw.py under mpiexec: P processes each read all the dataset's files front to
back with 8 MiB preads into a reused buffer (from the page cache, warm; with --direct, O_DIRECT
and io.interface=posix_direct in the emulator runs); the aggregate bytes/s is measured for
P = 1, 2 (this machine's cores), N and --max-ranks, median over --rounds each, in the same
run as the search; limit = the best of them / demand per accelerator. ratio = accelerators /
limit. The CPU time of all ranks (user + system, from the launcher's children) over wall x
cores is given for the runs at N and at N + 1, to tell a CPU limit from a waiting one. The
limit in runs is the median of the bandwidths read just before the runs at N and N + 1 over the
demand, and its ratio N / it: the machine's page-cache bandwidth while N was decided, where the
limit's is measured after the search (on this VM it moved by a third within an hour).

    scripts/bench-accelerators [--workloads unet3d,resnet50,cosmoflow] [--max-ranks 8]
        [--rounds 3] [--scale 16] [--read-threads T] [--bind core|none] [--direct]
        [--dir DIR] [--quick]
"""
import argparse
import glob
import json
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from launch import mpiexec
from dlio_mpi.run import summary_layout

HERE = os.path.dirname(os.path.abspath(__file__))
EPOCHS = 3
BLOCK = 8 << 20
ARGS = None

# per workload: shipped figures, how the step is scaled, and the dataset: the workload's files
# (their number divided by the scale) or enough for `steps` steps per epoch at --max-ranks
WORKLOADS = {
    "unet3d": dict(batch=7, record=146600628, stdev=68341808, resize=2097152, compute=0.323,
                   au=0.90, spf=1, scale="record", steps=8),
    "resnet50": dict(batch=400, record=114660, stdev=0, resize=0, compute=0.224, au=0.90,
                     spf=1251, scale="batch", files=1024),
    "cosmoflow": dict(batch=1, record=2828486, stdev=71311, resize=0, compute=0.0035,
                      au=0.70, spf=1, scale=None, steps=64),
}


def scaled(name, s, max_ranks, quick):
    """The overrides of one workload at scale s, its demand in bytes/s and its scale."""
    w = WORKLOADS[name]
    if w["scale"] is None:
        s = 1
    batch, record, stdev, resize = w["batch"], w["record"], w["stdev"], w["resize"]
    if w["scale"] == "record":
        record, stdev, resize = record // s, stdev // s, resize // s
    elif w["scale"] == "batch":
        batch = max(1, batch // s)
    compute = w["compute"] / s * (batch * s / w["batch"] if w["scale"] == "batch" else 1)
    spf = w["spf"]
    if "files" in w and not quick:     # the workload's files, their number divided by s
        files = math.ceil(w["files"] / s)
        if files < max_ranks:   # a stream splits files among ranks: as many as ranks, the
            spf = math.ceil(spf * files / max_ranks)    # same samples in all
            files = max_ranks
    else:
        steps = 2 if quick else w["steps"]
        files = math.ceil(batch * max_ranks * steps / w["spf"])
    over = [f"workload={name}", f"dataset.num_files_train={files}",
            f"dataset.num_samples_per_file={spf}", f"dataset.record_length={record}",
            f"dataset.record_length_stdev={stdev}", f"dataset.record_length_resize={resize}",
            f"reader.batch_size={batch}", f"train.computation_time={compute!r}",
            f"train.epochs={2 if quick else EPOCHS}", "workflow.checkpoint=false",
            "workflow.evaluation=false"]
    if ARGS.read_threads is not None:
        over.append(f"reader.read_threads={ARGS.read_threads}")
    if ARGS.direct:
        over.append("io.interface=posix_direct")
    return over, batch * record / compute, s, files * spf * record


def launch(n, cmd):
    """Run cmd under mpiexec -n n; returns (stdout, wall s, CPU s of the launcher's children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(mpiexec(n, ARGS.bind) + cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"bench-accelerators: {' '.join(cmd[:4])} on {n} ranks failed:\n"
                 f"{p.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return p.stdout, wall, cpu


def emulate(n, over, out):
    """AU of one run on n ranks (mean over the epochs after the first), and its CPU share."""
    _, wall, cpu = launch(n, [sys.executable, "-m", "dlio_mpi", "run"] + over
                          + [f"output.folder={out}"])
    s = summary_layout.load(out)[1]
    epochs = s["epochs"][1:] or s["epochs"]
    return statistics.mean(e["au"] for e in epochs), cpu / (wall * os.cpu_count())


def passes(n, over, out, threshold, runs):
    """Whether n ranks keep the AU at or above threshold in a majority of up to `runs` runs."""
    need = runs // 2 + 1
    good = bad = 0
    for _ in range(runs):
        bw = WARM() if WARM is not None else None
        au, cpu = emulate(n, over, out)
        runs_log.append((n, au, cpu, bw))
        good, bad = good + (au >= threshold), bad + (au < threshold)
        print(f"#   {n} ranks: AU {100 * au:.1f} %, CPU {100 * cpu:.0f} % of the cores"
              + (f", {bw / 1e9:.2f} GB/s just before" if bw else ""), file=sys.stderr)
        if good >= need or bad >= need:
            break
    return good >= need


runs_log = []   # (ranks, AU, CPU share, bytes/s of the read just before or None) per run
WARM = None     # reads the dataset before each run (page cache runs), as the limit's P = 2:
                # returns the bytes/s of a second read, the first having brought back what
                # the page cache let go


def search(over, out, threshold, max_ranks, runs):
    """The largest N <= max_ranks that passes (0 if 1 rank fails), by doubling and bisection."""
    ok, bad, n = 0, None, 1
    while n <= max_ranks:
        if passes(n, over, out, threshold, runs):
            ok = n
            if n == max_ranks:
                break
            n = min(2 * n, max_ranks)
        else:
            bad = n
            break
    if bad is None:
        return ok, False
    while bad - ok > 1:
        mid = (ok + bad) // 2
        if passes(mid, over, out, threshold, runs):
            ok = mid
        else:
            bad = mid
    return ok, True


def bandwidth(p, files, dataset_bytes, rounds):
    """Median over rounds of the aggregate read bytes/s of p processes over the files."""
    reps = max(1, math.ceil((1 << 30) / max(dataset_bytes, 1)))   # ~1 GiB or more per process
    xs = []
    # the list in a file: thousands of paths exceed the command line's limit
    fd, listing = tempfile.mkstemp(prefix="read_bw_", suffix=".txt")
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(files) + "\n")
    try:
        for _ in range(rounds):
            out, _, _ = launch(p, [sys.executable, os.path.join(HERE, "read_bw.py"), str(reps),
                                   str(BLOCK), "1" if ARGS.direct else "0", "@" + listing])
            xs.append(float(out.split()[-1]))
    finally:
        os.unlink(listing)
    return statistics.median(xs), xs


def main():
    global ARGS, WARM
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default="unet3d,resnet50,cosmoflow")
    ap.add_argument("--max-ranks", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3,
                    help="runs per rank count (majority decides) and bandwidth measures")
    ap.add_argument("--scale", type=int, default=16, help="divide bytes and time of a step by")
    ap.add_argument("--read-threads", type=int, default=None,
                    help="reader.read_threads (default: the workload's)")
    ap.add_argument("--bind", choices=("core", "none"), default=None,
                    help="bind every process to a core, or none (default: mpiexec's)")
    ap.add_argument("--direct", action="store_true", help="O_DIRECT on both sides")
    ap.add_argument("--dir", default=None, help="directory for the datasets (default: TMPDIR)")
    ap.add_argument("--no-warm", action="store_true",
                    help="do not read the dataset before each run (page cache runs)")
    ap.add_argument("--quick", action="store_true",
                    help="tiny sizes (scale 1024), 2 ranks at most, 1 round: a smoke test")
    args = ARGS = ap.parse_args()
    if args.quick:
        args.scale, args.max_ranks, args.rounds = 1024, min(args.max_ranks, 2), 1
    names = [w for w in args.workloads.split(",") if w]
    for w in names:
        if w not in WORKLOADS:
            sys.exit(f"bench-accelerators: unknown workload {w} (one of {', '.join(WORKLOADS)})")
    ncpu = os.cpu_count()
    tmp = tempfile.mkdtemp(prefix="dlio_mpi_bench_acc_", dir=args.dir)
    result, rows = {}, []
    try:
        for w in names:
            data, out = os.path.join(tmp, w), os.path.join(tmp, f"{w}_out")
            over, demand, s, dataset_bytes = scaled(w, args.scale, args.max_ranks, args.quick)
            over = over + [f"dataset.data_folder={data}"]
            print(f"# {w}: scale 1/{s}, demand {demand / 1e6:.1f} MB/s per accelerator, "
                  f"dataset {dataset_bytes / 2**30:.2f} GiB", file=sys.stderr)
            launch(min(2, args.max_ranks), [sys.executable, "-m", "dlio_mpi", "generate"]
                   + over + [f"output.folder={out}"])
            files = sorted(f for f in glob.glob(os.path.join(data, "train", "**", "*"),
                                                recursive=True) if os.path.isfile(f))
            threshold = WORKLOADS[w]["au"]
            del runs_log[:]
            bandwidth(1, files, dataset_bytes, 1)              # warms the page cache
            if not (args.direct or args.no_warm):
                WARM = lambda: bandwidth(min(2, ncpu), files, dataset_bytes, 2)[1][-1]  # noqa
            n, failed = search(over, out, threshold, args.max_ranks, args.rounds)
            bws = {}
            for p in sorted({1, min(ncpu, args.max_ranks), max(n, 1), args.max_ranks}):
                bws[p] = bandwidth(p, files, dataset_bytes, args.rounds)
            best_p = max(bws, key=lambda p: bws[p][0])
            limit = bws[best_p][0] / demand
            at_n = [r for r in runs_log if r[0] == n]
            above = [r for r in runs_log if r[0] == n + 1]
            # the machine's page-cache bandwidth while N and N + 1 were decided
            during = [r[3] for r in at_n + above if r[3]]
            limit_during = statistics.median(during) / demand if during else None
            result.update({
                f"accelerators_{w}": n, f"limit_{w}": round(limit, 2),
                f"ratio_{w}": round(n / limit, 3) if limit else None,
                f"capped_{w}": not failed,
                f"demand_MBps_{w}": round(demand / 1e6, 1),
                f"bandwidth_GBps_{w}": {str(p): round(v[0] / 1e9, 2) for p, v in bws.items()},
                f"au_at_n_{w}": [round(100 * r[1], 1) for r in at_n],
                f"au_at_n_plus_1_{w}": [round(100 * r[1], 1) for r in above],
                f"cpu_at_n_{w}": round(statistics.mean(r[2] for r in at_n), 2)
                if at_n else None,
                f"cpu_at_n_plus_1_{w}": round(statistics.mean(r[2] for r in above), 2)
                if above else None,
                f"bandwidth_before_runs_GBps_{w}": [round(x / 1e9, 2) for x in during],
                f"limit_during_runs_{w}": round(limit_during, 2) if limit_during else None,
                f"ratio_during_runs_{w}": round(n / limit_during, 3) if limit_during else None,
            })
            rows.append((w, s, demand, n, failed, bws, best_p, limit, at_n, above,
                         limit_during))
            shutil.rmtree(data, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'workload':<10}{'scale':>6}{'MB/s/acc':>10}{'accel':>7}{'AU% at N':>14}"
          f"{'AU% at N+1':>14}{'GB/s best (P)':>15}{'GB/s at N':>11}{'limit':>8}{'ratio':>7}"
          f"{'limit in runs':>15}{'ratio':>7}")
    for w, s, demand, n, failed, bws, best_p, limit, at_n, above, during in rows:
        fmt = lambda rs: "/".join(f"{100 * r[1]:.0f}" for r in rs) or "-"   # noqa: E731
        print(f"{w:<10}{'1/' + str(s):>6}{demand / 1e6:>10.1f}"
              f"{str(n) + ('' if failed else '+'):>7}{fmt(at_n):>14}{fmt(above):>14}"
              f"{bws[best_p][0] / 1e9:>11.2f} ({best_p}){bws[max(n, 1)][0] / 1e9:>11.2f}"
              f"{limit:>8.2f}{n / limit if limit else 0:>7.3f}"
              + (f"{during:>15.2f}{n / during:>7.3f}" if during else f"{'-':>15}{'-':>7}"))
    result.update({"scale": {w: r[1] for w, r in zip(names, rows)}, "max_ranks": args.max_ranks,
                   "rounds": args.rounds, "direct": args.direct, "epochs": 2 if args.quick
                   else EPOCHS, "read_threads": args.read_threads, "bind": args.bind,
                   "cpus": ncpu, "warm_before_each_run": not (args.direct or args.no_warm)})
    print(json.dumps(result))


if __name__ == "__main__":
    main()

"""Read-ahead benchmark: the AU that reader.read_threads gives with compute per step, against
the same run without read threads, all in one run on one dataset (64 NPZ files of one 4 MiB
sample, batch 4 in file order, compute 4 ms a step, warm page cache), 1 rank bound to one
core: the read threads share the rank's core with its own thread. Each round runs every
thread count once, the order alternating between rounds; a run's AU is the mean over its
epochs after the first, and the figure for a thread count is the median over rounds of its
AU divided by the same round's AU without read threads. Read threads must never lower AU:
au_vs_no_threads_min (the smallest of those medians over the thread counts) at least 1.0.
Prints a table, then one JSON object on the last line. --load N runs N busy processes beside
(a node shared with other work: read threads must not starve), --odirect-4k makes the reads
block (1 MiB raw samples read with O_DIRECT in 4 KiB transfers), --stream reads TFRecord
files as TensorFlow's reader does (reader.access=stream: each rank's files front to back in
256 KiB reads and one at each file's end; with read threads, the C step loop).

    scripts/bench-read-threads [--rounds 5] [--threads 0,1,2,4] [--interface posix]
                               [--bind core|none] [--compute 0.004] [--dir DIR] [--load N]
                               [--odirect-4k | --stream]
"""
import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile

from launch import mpiexec
from dlio_mpi.run import summary_layout

FORMAT = {"hdf5": "hdf5", "hdf5_sec2": "hdf5"}     # the others read NPZ


def dlio(bind, args):
    p = subprocess.run(mpiexec(1, bind) + [sys.executable, "-m", "dlio_mpi"] + args,
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"bench-read-threads: dlio_mpi {args[0]} failed:\n"
                 f"{(p.stdout + p.stderr)[-3000:]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", default="0,1,2,4", help="thread counts (0 first: the baseline)")
    ap.add_argument("--interface", default="posix", help="io.interface (not a collective one)")
    ap.add_argument("--bind", default="core", choices=("core", "none"))
    ap.add_argument("--compute", type=float, default=0.004, help="compute per step (s)")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--files", type=int, default=64)
    ap.add_argument("--dir", default=None, help="directory for the dataset (default: TMPDIR)")
    ap.add_argument("--load", type=int, default=0, metavar="N",
                    help="N busy processes beside the runs (a node shared with other work)")
    ap.add_argument("--odirect-4k", action="store_true",
                    help="reads that block: O_DIRECT in 4 KiB transfers")
    ap.add_argument("--stream", action="store_true",
                    help="TFRecord files read as a stream (reader.access=stream)")
    args = ap.parse_args()
    if args.stream and args.odirect_4k:
        sys.exit("bench-read-threads: --stream and --odirect-4k are two different datasets")
    threads = [int(t) for t in args.threads.split(",")]
    if threads[0] != 0:
        threads = [0] + [t for t in threads if t != 0]
    tmp = tempfile.mkdtemp(prefix="dlio_mpi_bench_ra_", dir=args.dir)
    common = [f"dataset.data_folder={tmp}/data", f"dataset.num_files_train={args.files}",
              f"dataset.format={FORMAT.get(args.interface, 'npz')}",
              "dataset.num_samples_per_file=1", "dataset.record_length=4m",
              "reader.batch_size=4", "reader.sample_shuffle=off", "reader.transfer_size=0",
              f"train.epochs={args.epochs}", f"train.computation_time={args.compute}",
              f"io.interface={args.interface}"]
    if args.odirect_4k:
        common = [c for c in common if not c.startswith(("io.interface=", "reader.transfer"))]
        common += ["io.interface=posix_direct", "reader.transfer_size=4k",
                   "dataset.record_length=1m", "dataset.format=raw"]
    if args.stream:
        common = [c for c in common if not c.startswith(("dataset.format=", "reader.transfer"))]
        common += ["dataset.format=tfrecord", "reader.access=stream",
                   "reader.transfer_size=256k", "reader.eof_reads=1"]
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(args.load)]
    au = {t: [] for t in threads}
    ratio = {t: [] for t in threads}
    try:
        dlio(args.bind, ["generate"] + common)
        for r in range(args.rounds):
            got = {}
            for t in (threads if r % 2 == 0 else threads[::-1]):
                out = f"{tmp}/out{t}"
                dlio(args.bind, ["run"] + common + [f"output.folder={out}",
                                                    f"reader.read_threads={t}"])
                s = summary_layout.load(out)[1]
                if s["read_threads"] != t:
                    sys.exit(f"bench-read-threads: {t} read threads asked, the run used "
                             f"{s['read_threads']} ({s['not_emulated']})")
                got[t] = statistics.mean(e["au"] for e in s["epochs"][1:])
                shutil.rmtree(out, ignore_errors=True)
            for t in threads:
                au[t].append(100 * got[t])
                ratio[t].append(got[t] / got[0])
    finally:
        for h in hogs:
            h.kill()
            h.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'read_threads':<14}{'AU % median':>12}{'min':>8}{'max':>8}"
          f"{'vs 0 threads':>14}{'min':>8}{'max':>8}")
    for t in threads:
        print(f"{t:<14}{statistics.median(au[t]):>12.1f}{min(au[t]):>8.1f}{max(au[t]):>8.1f}"
              f"{statistics.median(ratio[t]):>14.3f}{min(ratio[t]):>8.3f}{max(ratio[t]):>8.3f}")
    with_threads = [t for t in threads if t > 0]
    print(json.dumps({
        **{f"au_percent_{t}_read_threads": round(statistics.median(au[t]), 1) for t in threads},
        **{f"au_vs_no_threads_{t}_read_threads": round(statistics.median(ratio[t]), 3)
           for t in with_threads},
        "au_vs_no_threads_min": round(min(statistics.median(ratio[t]) for t in with_threads), 3)
        if with_threads else None,
        "interface": args.interface, "bind": args.bind, "compute_s_per_step": args.compute,
        "rounds": args.rounds, "epochs": args.epochs, "load": args.load,
        "odirect_4k": args.odirect_4k, "stream": args.stream}))


if __name__ == "__main__":
    main()

"""Emulator benchmark, all in one run on one dataset (64 NPZ files of 4 MiB, batch 4, 2 ranks,
compute time 0, warm page cache): samples/s of `dlio_mpi run` against a plain Python loop that
opens and reads the same files with the same rank layout; the same with compute per step
(2 ms a batch of 4, a sleep in both), where one read thread should overlap the reads with it
(samples_per_s_vs_plain_loop_1_read_thread); time to first batch at 1 and 8 ranks
(from the launch of mpiexec, oversubscribed on this machine); peak RSS per rank. Prints a table,
then one JSON object on the last line.

Like with like: both sides make EPOCHS passes over the files in one process each and the first
pass of each is left out (it pays for the process's first touches of its code and buffers);
the ratio of a round is the mean samples/s of the emulator's warm epochs over the plain loop's
warm passes, and the figure is the median over rounds.

    scripts/bench-emulator [--rounds 5] [--epochs 8] [--dir DIR]
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from launch import mpiexec
from dlio_mpi.run import summary_layout

HERE = os.path.dirname(os.path.abspath(__file__))
MIB = 1 << 20
COMPUTE_S = 0.002       # compute per step in the overlap measure (reads of a step: ~1-2 ms)
ARGS = None


def dlio(n, args, env=None):
    p = subprocess.run(mpiexec(n) + [sys.executable, "-m", "dlio_mpi"] + args,
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"bench-emulator: dlio_mpi {' '.join(args[:1])} failed:\n{p.stderr[-3000:]}")
    return p


def plain_loop(files, compute=0.0):
    p = subprocess.run(mpiexec(2) + [sys.executable, os.path.join(HERE, "plain_loop.py"),
                                     str(ARGS.epochs)] + ([f"compute={compute}"] if compute
                                                          else []) + files,
                       capture_output=True, text=True, check=True)
    return statistics.mean(float(x) for x in p.stdout.split()[1:])


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=8, help="passes over the files per run")
    ap.add_argument("--dir", default=None, help="directory for the dataset (default: TMPDIR)")
    args = ARGS = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="dlio_mpi_bench_emu_", dir=args.dir)
    data, out = os.path.join(tmp, "data"), os.path.join(tmp, "out")
    common = ["workload=default", f"dataset.data_folder={data}", "dataset.format=npz",
              "dataset.num_files_train=64", "dataset.num_samples_per_file=1",
              "dataset.record_length=4m", "reader.batch_size=4", "train.computation_time=0",
              "reader.sample_shuffle=off", "reader.transfer_size=0"]
    try:
        dlio(2, ["generate"] + common + [f"output.folder={out}"])
        files = sorted(glob.glob(os.path.join(data, "train", "*.npz")))
        assert len(files) == 64, files
        for f in files:                       # warm the page cache
            with open(f, "rb") as fh:
                while fh.read(64 * MIB):
                    pass
        rows = {"emulator samples/s": [], "emulator, 1 read thread": [],
                "plain loop samples/s": [], "ratio": [], "ratio, 1 read thread": [],
                "compute: ratio, 1 thread": [], "compute: ratio, 0 threads": [],
                "first batch s, 1 rank": [], "first batch s, 8 ranks": [],
                "peak RSS MiB per rank": []}

        def emulate(threads, compute=0.0):
            dlio(2, ["run"] + common + [f"output.folder={out}", f"train.epochs={args.epochs}",
                                        f"reader.read_threads={threads}",
                                        f"train.computation_time={compute}"])
            s = summary_layout.load(out)[1]
            # the first epoch opens the files and touches the buffers: the warm epochs count
            return statistics.mean(e["samples_per_s"] for e in s["epochs"][1:]), s

        for _ in range(args.rounds):
            # like with like: the plain loop reads in its main thread, as the emulator does
            # with read_threads=0; one read thread is shown too (it cannot help without
            # compute to overlap, and costs a hand-off per sample)
            emu, s = emulate(0)
            emu1, _ = emulate(1)
            plain = plain_loop(files)
            # with compute per step (COMPUTE_S per batch of 4): read-ahead overlaps the reads
            # with it, the plain loop (and the emulator without read threads) cannot
            plain_c = plain_loop(files, COMPUTE_S)
            rows["compute: ratio, 1 thread"].append(emulate(1, COMPUTE_S)[0] / plain_c)
            rows["compute: ratio, 0 threads"].append(emulate(0, COMPUTE_S)[0] / plain_c)
            rows["emulator samples/s"].append(emu)
            rows["emulator, 1 read thread"].append(emu1)
            rows["plain loop samples/s"].append(plain)
            rows["ratio"].append(emu / plain)
            rows["ratio, 1 read thread"].append(emu1 / plain)
            rows["peak RSS MiB per rank"].append(s["startup"]["peak_rss_mib_max"])
            for n in (1, 8):
                env = dict(os.environ, DLIO_MPI_LAUNCH_TIME=repr(time.time()))
                dlio(n, ["run"] + common + [f"output.folder={out}_{n}", "train.epochs=1"],
                     env=env)
                s1 = summary_layout.load(f"{out}_{n}")[1]
                rows[f"first batch s, {n} rank{'s' if n > 1 else ''}"].append(
                    s1["startup"]["first_batch_s_max"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    # read buffers of a rank (the RSS is measured with read_threads=0): the part of the batch
    # buffer of dlio_mpi.readers.reader.Reader that one file's ranges fill (one NPZ member here)
    buffers = (4 * MIB + 4096) / MIB
    print(f"{'measure':<28}{'median':>14}{'min':>12}{'max':>12}")
    for k, v in rows.items():
        print(f"{k:<28}{statistics.median(v):>14.3f}{min(v):>12.3f}{max(v):>12.3f}")
    rss = statistics.median(rows["peak RSS MiB per rank"])
    print(json.dumps({
        "samples_per_s_vs_plain_loop": round(statistics.median(rows["ratio"]), 3),
        "samples_per_s_vs_plain_loop_1_read_thread":
            round(statistics.median(rows["compute: ratio, 1 thread"]), 3),
        "samples_per_s_vs_plain_loop_0_read_threads_with_compute":
            round(statistics.median(rows["compute: ratio, 0 threads"]), 3),
        "samples_per_s_vs_plain_loop_1_read_thread_no_compute":
            round(statistics.median(rows["ratio, 1 read thread"]), 3),
        "compute_s_per_step": COMPUTE_S,
        "startup_s_np1": round(statistics.median(rows["first batch s, 1 rank"]), 3),
        "startup_s_np8": round(statistics.median(rows["first batch s, 8 ranks"]), 3),
        "rss_mib_per_rank": round(rss, 1),
        "read_buffers_mib_per_rank": round(buffers, 1),
        "rss_mib_beyond_buffers": round(rss - buffers, 1),
        "emulator_samples_per_s": round(statistics.median(rows["emulator samples/s"]), 1),
        "plain_loop_samples_per_s": round(statistics.median(rows["plain loop samples/s"]), 1),
        "rounds": args.rounds, "epochs": args.epochs}))


if __name__ == "__main__":
    main()

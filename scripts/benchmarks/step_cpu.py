"""The CPU time a rank's main thread spends per training step (h): one rank runs a workload of
scripts/bench-accelerators (scaled as there, for --max-ranks ranks), and the thread's CPU time
(time.thread_time) between the ends of consecutive epochs, divided by the epoch's steps, is
given per epoch after the first (with the part spent in the kernel), with their median; then one JSON object on the last line.
Each run repeats --rounds times.

    scripts/benchmarks/step_cpu.py [--workload resnet50] [--max-ranks 32] [--epochs 4] [--rounds 3]
                        [--dir DIR] [key=value ...]

Extra key=value overrides are passed to the run (after the workload's). resnet50 runs on
bench-accelerators' dataset, the workload's 64 files of 1,251 records (3,202 steps, 45 s an
epoch at 1 rank); the README's figures of h were measured on 200 files of 64 records
(dataset.num_files_train=200 dataset.num_samples_per_file=64: 512 steps an epoch)."""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def rank_main(argv):
    """Inside the run (under mpiexec -n 1): time the main thread at each epoch's last step."""
    from dlio_mpi import cli
    from dlio_mpi.run import training_loop as pipeline

    marks = []
    orig = pipeline.run_epochs

    def timed(cfg, comm, log, progress=None):
        def mark(epoch, step, steps):
            if step == steps:
                ru = resource.getrusage(resource.RUSAGE_THREAD)
                marks.append((steps, time.thread_time(), ru.ru_stime))
            if progress:
                progress(epoch, step, steps)
        return orig(cfg, comm, log, mark)

    pipeline.run_epochs = timed
    sys.argv = ["dlio_mpi"] + argv
    try:
        cli.main()
    except SystemExit as e:
        if e.code:
            raise
    per = [((t1 - t0) / n, (s1 - s0) / n) for (_, t0, s0), (n, t1, s1) in zip(marks, marks[1:])]
    print("STEP_CPU " + json.dumps(per), flush=True)


def main():
    sys.path.insert(0, HERE)
    import bench_accelerators as ba
    from launch import mpiexec

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", default="resnet50", choices=sorted(ba.WORKLOADS))
    ap.add_argument("--max-ranks", type=int, default=32)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir")
    args, extra = ap.parse_known_args()
    ba.ARGS = argparse.Namespace(read_threads=None, direct=False)
    over, _, _, _ = ba.scaled(args.workload, 16, args.max_ranks, False)
    over = [o for o in over if not o.startswith("train.epochs=")]
    work = tempfile.mkdtemp(prefix="step_cpu_", dir=args.dir)
    try:
        over += [f"train.epochs={args.epochs}", f"dataset.data_folder={work}/data"] + extra
        per = []
        for r in range(args.rounds):
            out = os.path.join(work, f"out{r}")
            p = subprocess.run(mpiexec(1) + [sys.executable, __file__, "--rank", "run"] + over
                               + [f"output.folder={out}"], capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit(f"step_cpu: the run failed:\n{p.stderr[-3000:]}")
            line = [ln for ln in p.stdout.splitlines() if ln.startswith("STEP_CPU ")][-1]
            run = json.loads(line.split(" ", 1)[1])
            print(f"# round {r}: " + " ".join(f"{1e6 * x:.0f} ({1e6 * y:.0f} sys)"
                                              for x, y in run) + " us/step", file=sys.stderr)
            per += run
        med = statistics.median(x for x, _ in per)
        sys_med = statistics.median(y for _, y in per)
        print(f"{args.workload}: main-thread CPU per step, median of {len(per)} epochs: "
              f"{1e6 * med:.1f} us ({1e6 * sys_med:.1f} us in the kernel)")
        print(json.dumps({"workload": args.workload, "step_cpu_us": 1e6 * med,
                          "step_sys_us": 1e6 * sys_med,
                          "epochs_us": [1e6 * x for x, _ in per]}))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--rank":
        rank_main(sys.argv[2:])
    else:
        main()

"""The read-ahead engine alone, in a training loop's shape, on one CPU: each step waits for
its batch (4 reads of one file's first MIB MiB, from the page cache), queues the batch that
many steps ahead, and sleeps COMPUTE seconds. Prints, per thread count, the step time and its
parts: waiting for the batch, queueing one (time the rank's thread loses when a woken thread
takes its CPU), and the sleep's overrun; then one JSON object on the last line.

    python scripts/benchmarks/readahead_step.py [--threads 1,2,4] [--steps 400] [--compute 0.004]
                                     [--mib 4] [--per-read] [--dir DIR]

--per-read queues a batch as 4 requests of one read each instead of one request of 4 segments.
"""
import argparse
import json
import os
import shutil
import statistics
import tempfile
import time

import numpy as np

from dlio_mpi import engines


def run(threads, args, paths):
    size = args.mib << 20
    handles = [engines.PosixFile(p) for p in paths]
    ahead = 3
    ra = engines.ReadAhead(threads=threads, depth=ahead * (4 if args.per_read else 1),
                           slot_bytes=size, keep=False)
    queued, k = [], 0

    def queue():
        nonlocal k
        hs = [handles[(k + i) % len(handles)] for i in range(4)]
        k += 4
        if args.per_read:
            queued.append([ra.submit(h, [0], [size]) for h in hs])
        else:
            queued.append([ra.submit_batch(hs, [1] * 4, [0] * 4, [size] * 4)])

    for _ in range(ahead):
        queue()
    wait, submit, over = [], [], []
    t0 = time.perf_counter()
    for _ in range(args.steps):
        a = time.perf_counter()
        for t in queued.pop(0):
            ra.wait(t)
            ra.release(t)
        b = time.perf_counter()
        queue()
        c = time.perf_counter()
        time.sleep(args.compute)
        d = time.perf_counter()
        wait.append(b - a)
        submit.append(c - b)
        over.append(d - c - args.compute)
    step = (time.perf_counter() - t0) / args.steps
    for t in sum(queued, []):
        ra.wait(t)
        ra.release(t)
    ra.close()
    for h in handles:
        h.close()
    ms = 1000.0
    return {"step_ms": round(step * ms, 3), "wait_ms": round(statistics.mean(wait) * ms, 3),
            "queue_ms": round(statistics.mean(submit) * ms, 3),
            "queue_ms_p90": round(float(np.percentile(submit, 90)) * ms, 3),
            "oversleep_ms_median": round(statistics.median(over) * ms, 3)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", default="1,2,4")
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--compute", type=float, default=0.004)
    ap.add_argument("--mib", type=int, default=4)
    ap.add_argument("--per-read", action="store_true")
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})   # threads inherit it
    tmp = tempfile.mkdtemp(prefix="dlio_mpi_ra_step_", dir=args.dir)
    try:
        paths = []
        for i in range(8):
            p = os.path.join(tmp, f"f{i}")
            np.random.default_rng(i).integers(0, 256, args.mib << 20, dtype=np.uint8).tofile(p)
            paths.append(p)
        res = {t: run(t, args, paths) for t in (int(x) for x in args.threads.split(","))}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'threads':<9}{'step ms':>9}{'wait ms':>9}{'queue ms':>10}{'p90':>8}"
          f"{'oversleep':>11}")
    for t, r in res.items():
        print(f"{t:<9}{r['step_ms']:>9.3f}{r['wait_ms']:>9.3f}{r['queue_ms']:>10.3f}"
              f"{r['queue_ms_p90']:>8.3f}{r['oversleep_ms_median']:>11.3f}")
    print(json.dumps({"threads": {str(t): r for t, r in res.items()},
                      "compute_s": args.compute, "per_read": args.per_read,
                      "steps": args.steps}))


if __name__ == "__main__":
    main()

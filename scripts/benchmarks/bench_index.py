"""Index benchmark: the per-file cost of reading an NPZ file's index (where each member's .npy
bytes lie), which a rank pays once per file it reads and again each epoch when its share holds
more files than the index cache. The fast path (three preads and the canonical .npy header)
against the general one (zipfile and numpy's header parser) on the same files, in the same run,
warm cache; 1 and 16 samples per file. Prints a table, then one JSON object on the last line.

    scripts/bench-index [--files 500] [--rounds 5] [--dir DIR]
"""
import argparse
import json
import os
import shutil
import statistics
import tempfile
import time

from dlio_mpi import formats
from dlio_mpi.formats import FormatSpec, npz


def per_file_us(fn, paths, spec):
    t = time.perf_counter()
    for p in paths:
        fn(p, spec)
    return (time.perf_counter() - t) / len(paths) * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="dlio_mpi_bench_index_", dir=args.dir)
    rows = []
    try:
        for spf in (1, 16):
            spec = FormatSpec(format="npz", samples_per_file=spf, record_length=4096,
                              record_length_stdev=512, seed=3)
            paths = []
            for i in range(args.files):
                p = os.path.join(tmp, f"f{spf}_{i}.npz")
                formats.write_file(p, i, spec)
                paths.append(p)
            assert all(npz._fast_index(p, spec) == npz._general_index(p, spec)
                       for p in paths[:20])
            fast, general = [], []
            for _ in range(args.rounds):                 # alternated: like with like
                general.append(per_file_us(npz._general_index, paths, spec))
                fast.append(per_file_us(formats.index_file, paths, spec))
            rows.append({"samples_per_file": spf, "fast_us": statistics.median(fast),
                         "general_us": statistics.median(general),
                         "speedup": statistics.median(g / f for g, f in zip(general, fast))})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'samples/file':>13}{'general us/file':>17}{'fast us/file':>14}{'speedup':>9}")
    for r in rows:
        print(f"{r['samples_per_file']:>13}{r['general_us']:>17.1f}{r['fast_us']:>14.1f}"
              f"{r['speedup']:>9.2f}")
    print(json.dumps({
        "npz_index_speedup_1_sample": round(rows[0]["speedup"], 2),
        "npz_index_speedup_16_samples": round(rows[1]["speedup"], 2),
        "npz_index_us_per_file": {r["samples_per_file"]: round(r["fast_us"], 1) for r in rows},
        "general_us_per_file": {r["samples_per_file"]: round(r["general_us"], 1) for r in rows},
        "files": args.files, "rounds": args.rounds}))


if __name__ == "__main__":
    main()

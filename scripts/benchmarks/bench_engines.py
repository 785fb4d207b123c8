"""Engine benchmark: native engines vs the Python reference engines vs fio, on one file, in one
run, with the same access patterns. Prints a table, then one JSON object on the last line.

Ratios are medians of per-round ratios (each round runs the contenders back to back), so that a
noisy, shared machine moves both sides of a ratio together.

    scripts/bench-engines [--size-mib 1024] [--rounds 5] [--dir DIR]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from dlio_mpi import engines
from dlio_mpi.engines.reference import PosixRef

MIB = 1 << 20


def make_file(path, size):
    block = np.random.default_rng(0).integers(0, 256, 64 * MIB, dtype=np.uint8).tobytes()
    with open(path, "wb") as f:
        left = size
        while left > 0:
            n = min(left, len(block))
            f.write(block[:n])
            left -= n
        f.flush()
        os.fsync(f.fileno())


def warm(path):
    with open(path, "rb") as f:
        while f.read(64 * MIB):
            pass


def drop_cache(path):
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)


def fio(path, rw, bs, size, direct, runtime=None, extra=(), engine="psync"):
    """Bandwidth (bytes/s) and IOPS of one fio job (psync unless told), the page cache kept as
    it is."""
    cmd = ["fio", "--name=bench", f"--filename={path}", f"--rw={rw}", f"--bs={bs}",
           f"--ioengine={engine}", f"--size={size}", f"--direct={1 if direct else 0}",
           "--invalidate=0", "--thread", "--output-format=json", *extra]
    if runtime:
        cmd += [f"--runtime={runtime}", "--time_based"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    job = json.loads(out[out.index("{"):])["jobs"][0]["read"]
    return job["bw_bytes"], job["iops"]


def native_seq(path, size, bs, direct):
    buf = engines.aligned_empty(bs, 4096)
    with engines.PosixFile(path, direct=direct) as f:
        t0 = time.perf_counter()
        for off in range(0, size, bs):
            f.readv([off], [bs], out=buf)
        dt = time.perf_counter() - t0
    return size / dt


def random_offsets(size, bs, n, seed):
    return np.random.default_rng(seed).integers(0, size // bs, n, dtype=np.int64) * bs


BATCH = 256     # ranges per call: a batch of samples read into one reused, touched buffer


def _rand(f, offs, bs):
    lens = np.full(BATCH, bs, dtype=np.int64)
    buf = engines.aligned_empty(BATCH * bs, 4096)
    buf[:] = 0
    batches = [offs[i:i + BATCH] for i in range(0, offs.size - BATCH + 1, BATCH)]
    t0 = time.perf_counter()
    for b in batches:
        f.readv(b, lens, out=buf)
    return len(batches) * BATCH / (time.perf_counter() - t0)


def native_rand(path, offs, bs, log=None):
    with engines.PosixFile(path, oplog=log) as f:
        rate = _rand(f, offs, bs)
    if log is not None:
        log.reset()
    return rate


def uring_rand(path, offs, bs, depth):
    """4 KiB reads at offs through the io_uring engine, depth in flight: reads per second."""
    out = engines.aligned_empty(bs, 4096)
    lens = np.full(len(offs), bs, dtype=np.int64)
    with engines.UringFile(path, depth=depth) as f:
        t0 = time.perf_counter()
        f.readv(offs, lens, xfer=bs, out=out, discard=True)
        dt = time.perf_counter() - t0
    return len(offs) / dt


def python_rand(path, offs, bs):
    with PosixRef(path) as f:
        return _rand(f, offs, bs)


def dd(path, bs):
    """Bytes/s of coreutils dd reading the file to /dev/null."""
    t0 = time.perf_counter()
    subprocess.run(["dd", f"if={path}", "of=/dev/null", f"bs={bs}"], check=True,
                   capture_output=True)
    return os.path.getsize(path) / (time.perf_counter() - t0)


def med(xs):
    return statistics.median(xs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mib", type=int, default=1024, help="file size (default 1024)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--direct-mib", type=int, default=256,
                    help="MiB read per O_DIRECT measurement (default 256)")
    ap.add_argument("--rand-ops", type=int, default=200_000, help="4 KiB reads per round")
    ap.add_argument("--dir", default=None, help="directory for the file (default: TMPDIR)")
    ap.add_argument("--uring-depth", type=int, default=32,
                    help="io_uring transfers in flight, both sides (default 32)")
    args = ap.parse_args()
    if not shutil.which("fio"):
        sys.exit("bench-engines: fio not found (scripts/setup.sh installs it)")
    size = args.size_mib * MIB
    tmp = tempfile.mkdtemp(prefix="dlio_mpi_bench_", dir=args.dir)
    path = os.path.join(tmp, "bench.bin")
    try:
        print(f"# file {path}, {args.size_mib} MiB, {args.rounds} rounds", file=sys.stderr)
        make_file(path, size)
        rows = {}

        # 1 MiB sequential reads from the page cache
        warm(path)
        r = {"native": [], "fio": [], "dd": []}
        for i in range(args.rounds):
            # the order alternates between rounds: neither side always runs first
            if i % 2:
                r["native"].append(native_seq(path, size, MIB, False))
            r["fio"].append(fio(path, "read", "1m", size, False)[0])
            if not i % 2:
                r["native"].append(native_seq(path, size, MIB, False))
            r["dd"].append(dd(path, "1M"))
        rows["seq 1 MiB cached"] = r

        # 1 MiB sequential O_DIRECT reads
        r = {"native": [], "fio": []}
        try:
            engines.dio_probe(tmp)
            odirect = True
        except engines.EngineError as e:
            print(f"# O_DIRECT skipped: {e}", file=sys.stderr)
            odirect = False
        if odirect:
            # the disk's speed drifts: more, shorter rounds over the first direct_mib MiB
            dsize = min(size, args.direct_mib * MIB)
            for i in range(2 * args.rounds + 1):
                if i % 2:
                    r["native"].append(native_seq(path, dsize, MIB, True))
                r["fio"].append(fio(path, "read", "1m", dsize, True)[0])
                if not i % 2:
                    r["native"].append(native_seq(path, dsize, MIB, True))
            rows["seq 1 MiB O_DIRECT"] = r

        # 4 KiB random reads from the page cache: calls per second
        warm(path)
        r = {"native": [], "python": [], "native+oplog": [], "fio": []}
        log = engines.OpLog(args.rand_ops + 16)
        for i in range(args.rounds):
            offs = random_offsets(size, 4096, args.rand_ops, i)
            # A B C B A order: drift within a round hits both sides of a ratio alike
            n1 = native_rand(path, offs, 4096)
            l1 = native_rand(path, offs, 4096, log)
            r["python"].append(python_rand(path, offs, 4096))
            l2 = native_rand(path, offs, 4096, log)
            n2 = native_rand(path, offs, 4096)
            r["native"].append((n1 + n2) / 2)
            r["native+oplog"].append((l1 + l2) / 2)
            r["fio"].append(fio(path, "randread", "4k", size, False, runtime=1,
                                extra=["--norandommap"])[1])
        rows["rand 4 KiB cached (ops/s)"] = r

        # 4 KiB random reads through io_uring, io.queue_depth in flight, against fio's
        # io_uring engine at the same depth and block size
        uring = engines.URING_AVAILABLE
        if uring:
            r = {"io_uring": [], "fio io_uring": []}
            d = args.uring_depth
            for i in range(args.rounds):
                offs = random_offsets(size, 4096, args.rand_ops, 100 + i)
                if i % 2:
                    r["io_uring"].append(uring_rand(path, offs, 4096, d))
                r["fio io_uring"].append(fio(path, "randread", "4k", size, False, runtime=1,
                                             extra=["--norandommap", f"--iodepth={d}"],
                                             engine="io_uring")[1])
                if not i % 2:
                    r["io_uring"].append(uring_rand(path, offs, 4096, d))
            rows[f"rand 4 KiB io_uring qd{d} (ops/s)"] = r
        else:
            print("# io_uring skipped: built without liburing", file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def ratio(row, a, b):
        """Median over rounds of a/b, each round's pair measured back to back."""
        return round(med([x / y for x, y in zip(rows[row][a], rows[row][b])]), 3)

    print(f"{'pattern':<36}{'contender':<14}{'median':>16}  unit")
    for name, r in rows.items():
        unit = "ops/s" if "ops/s" in name else "GiB/s"
        for who, xs in r.items():
            if not xs:
                continue
            v = med(xs) if unit == "ops/s" else med(xs) / (1 << 30)
            print(f"{name:<36}{who:<14}{v:>16,.3f}  {unit}")
    rand = "rand 4 KiB cached (ops/s)"
    # the op log's cost: the same reads with and without it, paired within each round
    nat, lg = rows[rand]["native"], rows[rand]["native+oplog"]
    overhead = med([n / l - 1 for n, l in zip(nat, lg)])
    result = {
        "seq_1m_cached_vs_fio": ratio("seq 1 MiB cached", "native", "fio"),
        "seq_1m_cached_vs_dd": ratio("seq 1 MiB cached", "native", "dd"),
        "odirect_1m_vs_fio": ratio("seq 1 MiB O_DIRECT", "native", "fio") if odirect else None,
        "rand_4k_native_vs_python": ratio(rand, "native", "python"),
        "rand_4k_native_vs_fio": ratio(rand, "native", "fio"),
        "rand_4k_uring_vs_fio_uring": ratio(f"rand 4 KiB io_uring qd{args.uring_depth} (ops/s)",
                                            "io_uring", "fio io_uring") if uring else None,
        "uring_depth": args.uring_depth,
        "oplog_overhead": round(overhead, 4),
        "seq_1m_cached_gib_s": round(med(rows["seq 1 MiB cached"]["native"]) / (1 << 30), 3),
        "odirect_1m_gib_s": round(med(rows["seq 1 MiB O_DIRECT"]["native"]) / (1 << 30), 3)
        if odirect else None,
        "rand_4k_native_us_per_op": round(1e6 / med(nat), 3),
        "rand_4k_python_us_per_op": round(1e6 / med(rows[rand]["python"]), 3),
        "rounds": args.rounds,
        "size_mib": args.size_mib,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()

"""Checkpoint benchmark: checkpoint writes with fsync by `dlio_mpi run` (checkpoint-only mode,
every rank a writer) against established tools writing the same bytes with fsync, in the same
run, then the reads back. Prints a table, then one JSON object on the last line.

  file_per_rank  the emulator at N ranks (a file per rank, 64 MiB engine calls cut into 1 MiB
                 pwrites) against fio with N jobs (processes), each writing its share to its own
                 file in 1 MiB psync writes, fsynced at the end (--end_fsync=1), no
                 preallocation (--fallocate=none, as the emulator does not preallocate).
  mpiio          checkpoint.format=mpiio (one shared file, rank shares in rank order, 64 MiB
                 per rank per MPI_File_write_at_all, MPI_File_sync) against IOR -a MPIIO -c
                 (collective, one shared file, each rank one contiguous block of its share,
                 64 MiB transfers, -e: MPI_File_sync after the writes).
  hdf5           checkpoint.format=hdf5 against IOR -a HDF5 -c (its -e is H5Fflush, an
                 MPI_File_sync through the MPI-IO driver), or against IOR -a MPIIO when the IOR
                 binary has no HDF5 (the output says so).

Like with like: bandwidth is bytes / (time from the start of the writes to the end of the
fsync), each side as it reports it: the emulator's summary.json (a checkpoint's bytes over its
duration, the slowest rank from the agreed start to its file published, content generation left
out), fio's JSON (the jobs' bytes over the longest job runtime, which includes the end fsync),
IOR's summary lines (aggregate bytes over open + writes + fsync + close). Transfer and chunk
sizes are read from dlio_mpi (checkpoint.transfer_size's default, Checkpointer's chunk). The
emulator's write also publishes the checkpoint (renames from .part, a directory fsync), which
the tools, writing in place, do not: its share of the duration is printed apart
(emulator_publish_ms_*, emulator_publish_share_*).

Every write starts with the side's old files removed and the page cache synced; between the
write and the read the files are evicted from the page cache (posix_fadvise DONTNEED, checked
with fincore, drop_caches as root when pages stay; see Cache), so reads come from the disk. The
emulator's read is a second run with checkpoint.num_checkpoints_write=0 (it reads the checkpoint
the first run wrote). When pages stay cached the output says that reads come from the cache.

Settle: after the old files are removed and synced, and after the eviction before a read, both
sides start only after --settle seconds (3 by default). Memory: on a virtual machine whose
balloon reports free pages to the host (free page reporting, 2 s after memory is freed; printed
as free_page_reporting), page-cache pages taken from memory reported back must be faulted in by
the host again (IOR wrote 1 GiB at 1.6 GB/s started at once after the previous files were
removed, at 0.32 GB/s started 3 s later). So after the settle, before either side is launched,
the benchmark writes --back-memory times the checkpoint's bytes of fresh memory and frees it
(back_memory_s): both sides then write (and read) into memory the host backs. Start: fio and
IOR start their I/O about TOOL_START_S (0.3 s) after launch, the emulator later (its summary's
`started` less its launch, measured at every run: 0.4-0.5 s warm, 2-3 s cold); a tool is
launched later by the emulator's start-up (median so far) less TOOL_START_S (emulator_startup_s,
tool_delay_s). A round runs every format once, the emulator and the tool back to back, the
order alternating between rounds; a ratio is the emulator's over the tool's in the same round,
the figures are medians over rounds with the spread (min-max) of the ratios. IOR is found on
PATH or with --ior; without it the IOR ratios are null.

    scripts/bench-checkpoint [--rounds 5] [--size 1g] [--ranks 2] [--dir DIR] [--ior PATH]
                             [--formats file_per_rank,mpiio,hdf5] [--settle 3] [--back-memory 2]
"""
import argparse
import ast
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
from memstate import Cache, back_memory, free_page_reporting

import dlio_mpi
from dlio_mpi.config.loader import parse_size
from dlio_mpi.config.schema import SCHEMA
from dlio_mpi.run import summary_layout


def _chunk_default():
    """Checkpointer's default chunk, read from dlio_mpi/checkpoint/writer.py's source:
    importing that module initializes MPI, and an initialized parent confuses the mpiexec it
    starts."""
    path = os.path.join(os.path.dirname(dlio_mpi.__file__), "checkpoint", "writer.py")
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            a = node.args
            for arg, default in zip(a.kwonlyargs, a.kw_defaults):
                if arg.arg == "chunk":
                    return int(eval(ast.unparse(default), {"__builtins__": {}}))  # 64 << 20
    raise RuntimeError(f"no chunk default in {path}")


MIB = 1 << 20
XFER = SCHEMA["checkpoint"]["transfer_size"].default          # bytes per pwrite/pread
CHUNK = _chunk_default()                                      # bytes per engine call
FORMATS = ("file_per_rank", "mpiio", "hdf5")


def fail(msg):
    sys.exit(f"bench-checkpoint: {msg}")


def tool_delay():
    """Seconds to wait before launching a tool, so that it starts its I/O when the emulator
    would (Settle): the emulator's start-up so far (median) less the tool's own."""
    return max(0.0, statistics.median(STARTUP) - TOOL_START_S) if STARTUP else 0.0


def run(cmd, what):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"{what} failed ({p.returncode}):\n{(p.stdout + p.stderr)[-3000:]}")
    return p.stdout


def files_in(d):
    return sorted(p for p in glob.glob(os.path.join(d, "*")) if os.path.isfile(p))


def clear(d):
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)


# -- the emulator ------------------------------------------------------------------------------
PUBLISH = {}     # format: [seconds of each emulator write spent publishing it]
STARTUP = []     # seconds from each emulator launch to its run's start (summary's started)
TOOL_START_S = 0.3


def emulator(fmt, n, size, ck_dir, out, writing):
    """Bandwidth (bytes/s) of the emulator's one checkpoint write (or its read back, in a
    second run that writes none), from its summary.json; a write's publish_s (renames from
    .part, directory fsync: what a tool writing in place does not do) goes to PUBLISH."""
    args = ["run", "workflow.train=false", "workflow.checkpoint=true", f"checkpoint.format={fmt}",
            "checkpoint.fsync=true", "checkpoint.writers=all", f"model.model_size_bytes={size}",
            f"checkpoint.num_checkpoints_write={1 if writing else 0}",
            f"checkpoint.num_checkpoints_read={0 if writing else 1}",
            f"checkpoint.checkpoint_folder={ck_dir}", f"output.folder={out}"]
    launched = time.time()
    run(mpiexec(n) + [sys.executable, "-m", "dlio_mpi"] + args, f"dlio_mpi run ({fmt})")
    s = summary_layout.load(out)[1]
    STARTUP.append(s["started"] - launched)
    op = "write" if writing else "read"
    (c,) = [c for c in s["checkpoints"] if c["op"] == op]
    if c["bytes"] != size:
        fail(f"the emulator's {fmt} {op} moved {c['bytes']} bytes, not {size}")
    if writing and c["fsyncs"] < 1:
        fail(f"the emulator's {fmt} write issued no fsync")
    if writing:
        PUBLISH.setdefault(fmt, []).append((c["publish_s"], c["duration_s"]))
    return c["bandwidth_bytes_per_s"]


# -- fio ---------------------------------------------------------------------------------------
def fio(n, share, d, writing):
    """Bandwidth (bytes/s) of n fio jobs, each its own file of share bytes in XFER-byte psync
    calls (writes fsynced at the end): all jobs' bytes over the longest job's runtime."""
    cmd = ["fio", "--name=ckpt", f"--directory={d}", f"--rw={'write' if writing else 'read'}",
           f"--bs={XFER}", f"--size={share}", f"--numjobs={n}", "--ioengine=psync",
           "--fallocate=none", "--invalidate=0", "--output-format=json"]
    if writing:
        cmd.append("--end_fsync=1")
    out = run(cmd, "fio")
    jobs = json.loads(out[out.index("{"):])["jobs"]
    key = "write" if writing else "read"
    moved = sum(j[key]["io_bytes"] for j in jobs)
    if moved != n * share:
        fail(f"fio moved {moved} bytes, not {n * share}")
    return moved / (max(j[key]["runtime"] for j in jobs) / 1e3)      # runtime: ms


# -- IOR ---------------------------------------------------------------------------------------
def ior_apis(ior):
    h = subprocess.run([ior, "-h"], capture_output=True, text=True)
    line = next((x for x in (h.stdout + h.stderr).splitlines() if "API for I/O" in x), "")
    return set(line[line.find("[") + 1:line.find("]")].split("|")) if "[" in line else set()


def ior_transfer(share):
    """The emulator's bytes per rank per collective call, made to divide the share (IOR's
    block must be a multiple of its transfer)."""
    t = min(CHUNK, share)
    while share % t:
        t -= MIB if t > MIB else 1
    return t


def ior(path, api, n, share, writing):
    """Bandwidth (bytes/s) from IOR's summary line: one shared file, collective, each rank one
    block of share bytes; -e fsyncs after the writes."""
    cmd = mpiexec(n) + [path, "-a", api, "-c", "-k", "-b", str(share),
                        "-t", str(ior_transfer(share)), "-o", path_of_ior(api)]
    cmd += ["-w", "-e"] if writing else ["-r", "-E"]
    out = run(cmd, f"IOR -a {api}")
    lines = out.splitlines()
    op = "write" if writing else "read"
    try:
        start = next(i for i, x in enumerate(lines) if x.startswith("Summary of all tests"))
        f = next(x.split() for x in lines[start:] if x.split()[:1] == [op])
        head = lines[start + 1].split()
        mib_s = float(f[head.index("Max(MiB)")])
        aggs = float(f[head.index("aggs(MiB)")])
    except (StopIteration, ValueError, IndexError):
        fail(f"no {op} summary line in IOR's output:\n{out[-2000:]}")
    if round(aggs * MIB) != n * share:
        fail(f"IOR moved {aggs} MiB, not {n * share} bytes")
    return mib_s * MIB


IOR_DIR = None


def path_of_ior(api):
    return os.path.join(IOR_DIR, f"ckpt-{api.lower()}.bin")


# -- main --------------------------------------------------------------------------------------
def summary(v):
    return (statistics.median(v), min(v), max(v)) if v else (None, None, None)


def r3(x):
    return None if x is None else round(x, 3)


def main():
    global IOR_DIR
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--size", default="1g",
                    help="bytes of one checkpoint, all ranks together (default 1g)")
    ap.add_argument("--ranks", type=int, default=2, help="ranks, fio jobs (default 2)")
    ap.add_argument("--dir", default=None, help="directory for the files (default: TMPDIR)")
    ap.add_argument("--ior", default=None, help="IOR binary (default: ior on PATH)")
    ap.add_argument("--settle", type=float, default=3.0,
                    help="seconds to wait after removing or evicting files, before each side "
                         "starts (default 3; see the module doc, Settle)")
    ap.add_argument("--formats", default=",".join(FORMATS),
                    help=f"comma-separated formats to run (default {','.join(FORMATS)})")
    ap.add_argument("--back-memory", type=float, default=2.0,
                    help="before each side starts, write then free this many times the "
                         "checkpoint's bytes of memory (default 2; 0: not; see Settle)")
    args = ap.parse_args()
    formats = tuple(f for f in args.formats.split(",") if f)
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        fail(f"--formats {args.formats}: use some of {', '.join(FORMATS)}")
    if args.settle < 0:
        fail(f"--settle {args.settle}: must be at least 0")
    if args.back_memory < 0:
        fail(f"--back-memory {args.back_memory}: must be at least 0")
    n, size = args.ranks, parse_size(args.size)
    if size % (n * MIB) or size <= 0:
        fail(f"--size {args.size} must be a positive multiple of {n} MiB ({n} ranks)")
    free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    if args.back_memory * size > free / 2:
        fail(f"--back-memory {args.back_memory} x --size {args.size}: "
             f"{int(args.back_memory * size)} bytes, more than half the free memory ({free})")
    share = size // n
    if not shutil.which("fio"):
        fail("fio not found (scripts/setup.sh installs it)")
    ior_bin = args.ior or shutil.which("ior")
    if ior_bin and not os.access(ior_bin, os.X_OK):
        fail(f"--ior {ior_bin} is not an executable")
    apis = ior_apis(ior_bin) if ior_bin else set()
    hdf5_api = "HDF5" if "HDF5" in apis else "MPIIO"
    tool = {"file_per_rank": "fio", "mpiio": "IOR MPIIO" if ior_bin else None,
            "hdf5": f"IOR {hdf5_api}" if ior_bin else None}
    cache = Cache()
    tmp = tempfile.mkdtemp(prefix="dlio_mpi_bench_ckpt_", dir=args.dir)
    IOR_DIR = os.path.join(tmp, "ior")
    res = {(f, side, op): [] for f in formats for side in ("emu", "tool")
           for op in ("write", "read")}
    residue = []    # bytes of the read files still cached after a drop (fincore)
    backing = []    # seconds each back_memory took
    print(f"# {n} ranks, checkpoint {size} bytes ({share} per rank), {args.rounds} rounds, "
          f"transfer {XFER}, chunk {CHUNK}, dir {tmp}",
          file=sys.stderr)
    if not ior_bin:
        print("IOR not found (not on PATH, no --ior): mpiio and hdf5 ratios are null")
    elif hdf5_api != "HDF5":
        print(f"{ior_bin} has no HDF5 API: hdf5 is compared against IOR MPIIO")
    try:
        for i in range(args.rounds):
            for fmt in formats:
                if tool[fmt] is None:
                    sides = ("emu",)
                else:   # the order alternates between rounds
                    sides = ("emu", "tool") if i % 2 == 0 else ("tool", "emu")
                for side in sides:
                    d = IOR_DIR if side == "tool" and fmt != "file_per_rank" else \
                        os.path.join(tmp, f"{side}_{fmt}")
                    clear(d)
                    os.sync()       # no dirty pages of earlier writes left to flush
                    for op in ("write", "read"):
                        if op == "read":
                            left = cache.drop(files_in(d))
                            if left is not None:
                                residue.append(left)
                        time.sleep(args.settle)     # the same start for both sides (Settle)
                        if args.back_memory:
                            backing.append(back_memory(int(args.back_memory * size)))
                        writing = op == "write"
                        if side == "emu":
                            bw = emulator(fmt, n, size, d, os.path.join(tmp, "out"), writing)
                        else:
                            time.sleep(tool_delay())    # starts its I/O when the emulator would
                            bw = fio(n, share, d, writing) if fmt == "file_per_rank" else \
                                ior(ior_bin, "MPIIO" if fmt == "mpiio" else hdf5_api, n, share,
                                    writing)
                        res[fmt, side, op].append(bw)
                    shutil.rmtree(d, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    from_cache = bool(residue) and max(residue) > 0.1 * size
    ratios, figures = {}, {}
    print(f"{'format':<15}{'op':<7}{'baseline':<12}{'emulator GB/s':>15}{'tool GB/s':>11}"
          f"{'ratio':>8}{'min':>8}{'max':>8}")
    for fmt in formats:
        name = "fio" if fmt == "file_per_rank" else "ior"
        for op in ("write", "read"):
            emu, base = res[fmt, "emu", op], res[fmt, "tool", op]
            rs = [a / b for a, b in zip(emu, base)]
            med, lo, hi = summary(rs)
            key = f"{'' if op == 'write' else 'read_'}ratio_{fmt}_vs_{name}"
            ratios[key] = r3(med)
            ratios[key + "_range"] = [r3(lo), r3(hi)] if rs else None
            e, b = summary(emu)[0], summary(base)[0]
            figures[f"emulator_{op}_gb_per_s_{fmt}"] = r3(e / 1e9)
            figures[f"{name}_{op}_gb_per_s_{fmt}"] = r3(b / 1e9 if b else None)

            def cell(x, w, p=3):
                return f"{x:>{w}.{p}f}" if x is not None else f"{'-':>{w}}"
            print(f"{fmt:<15}{op:<7}{tool[fmt] or 'none':<12}{cell(e / 1e9, 15)}"
                  f"{cell(b and b / 1e9, 11)}{cell(med, 8)}{cell(lo, 8)}{cell(hi, 8)}")
    publish = {}
    for fmt, v in PUBLISH.items():
        ms = statistics.median(p for p, _ in v) * 1e3
        frac = statistics.median(p / d for p, d in v)
        publish[f"emulator_publish_ms_{fmt}"] = r3(ms)
        publish[f"emulator_publish_share_{fmt}"] = r3(frac)
        print(f"{fmt}: publishing the write (renames from .part, directory fsync) took "
              f"{ms:.1f} ms, {100 * frac:.1f}% of its duration (medians)")
    if from_cache:
        print(f"reads come from the page cache (up to {max(residue)} of {size} bytes stayed "
              "cached after eviction)")
    print(json.dumps({
        **ratios, **figures, **publish,
        "hdf5_baseline": None if not ior_bin else f"ior_{hdf5_api.lower()}",
        "ior": ior_bin, "page_cache": "reads from the cache" if from_cache else
        f"evicted before reads ({cache.method})" if residue else
        f"evicted before reads ({cache.method}, not checked: no fincore)",
        "settle_s": args.settle, "back_memory_bytes": int(args.back_memory * size),
        "back_memory_s": round(statistics.median(backing), 6) if backing else None,
        "emulator_startup_s": round(statistics.median(STARTUP), 2) if STARTUP else None,
        "tool_delay_s": round(tool_delay(), 2), "free_page_reporting": free_page_reporting(),
        "ranks": n, "size_bytes": size, "transfer_bytes": XFER, "chunk_bytes": CHUNK,
        "ior_transfer_bytes": ior_transfer(share), "rounds": args.rounds}))


if __name__ == "__main__":
    main()

"""Acceptance benchmark: the client CPU that MLPerf Storage's training procedure costs when
dlio_mpi runs it (`python -m dlio_mpi acceptance run`) and when the DLIO benchmark runs it, on
the same files with the same steps, in the same run of this script. Prints a table, then one
JSON object on the last line.

The procedure, scaled: one workload (unet3d: its records, their spread and resize divided by
--scale, its compute time per step too, so that an accelerator's demand in bytes/s is the
workload's), --files files, --ranks ranks (one per emulated accelerator), batch, read threads
as the workload has them, --epochs epochs, a warm-up and --runs runs with the seed one higher
each time. Each side makes its dataset once with its own generator, not measured: the same
number of NPZ files of the same sizes, each in its tool's layout (dlio_mpi a member per
sample, the DLIO benchmark's one member x holding the samples, which its reader loads whole).
dlio_mpi runs the procedure as one job (`acceptance run --allow-undersized-dataset
--allow-fewer-runs`); the DLIO benchmark a job per run, as mlpstorage launches it (workload
unet3d_a100, the same figures given as overrides, no checkpoints or evaluation).
--rounds rounds, the sides' order alternating between rounds, whole processes one after
another. Both sides get the same launcher (`--bind`: none by default, so that the DLIO
benchmark's data-loader processes are not held to their rank's core) and OMP_NUM_THREADS=1.

Measured per launch, from os.wait4 of the mpiexec process (its rusage holds every process of
its tree it waited for: the ranks and the DLIO benchmark's data-loader workers): client CPU
(user + system), peak RSS (the largest single process), wall; AU and the steps from each
side's own summaries. CPU per accelerator-step = the CPU of the whole procedure (warm-up
included) / (ranks x steps per epoch x epochs x runs, warm-up included); ratio = dlio_mpi's /
the DLIO benchmark's (target: at most 0.1).

--search: the accelerators each sustains at the workload's AU threshold on this host, over the
same datasets: dlio_mpi with `acceptance search` (launched, the same launcher), the DLIO benchmark
with the same doubling and bisection (dlio_mpi.acceptance.bisection) over its runs' mean AU,
--repeats runs a count, a majority deciding, repeat k with seed + k - 1.

The DLIO benchmark is found with --dlio PATH (its dlio_benchmark script, in a venv of its own)
or $DLIO_BENCHMARK; without either its side is skipped with a note and `dlio` is null.

    scripts/bench-acceptance [--dlio PATH] [--runs 2] [--rounds 1] [--ranks 2] [--files 224]
        [--scale 16] [--epochs 3] [--search [--max 8] [--repeats 3]] [--bind none|core]
        [--dir DIR] [--quick]
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from launch import mpiexec
from dlio_mpi.acceptance import bisection, rules

WORKLOAD = "unet3d"
DLIO_WORKLOAD = "unet3d_a100"       # the DLIO benchmark's unet3d; its figures overridden below
# unet3d as dlio_mpi ships it (MLPerf Storage's H100 figures): the record's mean, spread and
# resize in bytes, batch, read threads, compute seconds per step
RECORD, STDEV, RESIZE, BATCH, READ_THREADS, COMPUTE = 146600628, 68341808, 2097152, 7, 4, 0.323
SEED = 1
TARGET = 0.1
MIB = 1 << 20
ARGS = None


def settings(scale, files, epochs):
    """(name, value) of the scaled procedure, by dlio_mpi's names; the DLIO benchmark's names
    differ for the record length only (dlio_names)."""
    return [("dataset.num_files_train", files), ("dataset.num_samples_per_file", 1),
            ("dataset.record_length", RECORD // scale),
            ("dataset.record_length_stdev", STDEV // scale),
            ("dataset.record_length_resize", RESIZE // scale),
            ("reader.batch_size", BATCH), ("reader.read_threads", READ_THREADS),
            ("train.computation_time", round(COMPUTE / scale, 6)), ("train.epochs", epochs),
            ("workflow.checkpoint", "false"), ("workflow.evaluation", "false")]


def dlio_names(name):
    return name.replace("record_length", "record_length_bytes")


def environment():
    env = dict(os.environ, OMP_NUM_THREADS="1", DFTRACER_ENABLE="0", DLIO_PROFILER_ENABLE="0",
               TF_CPP_MIN_LOG_LEVEL="2", PYTHONWARNINGS="ignore")
    return env


def launch(n, cmd, log, ok=(0,)):
    """cmd under mpiexec -n n, its output in log; {cpu_s, peak_rss_mib, wall_s} from wait4 of
    the mpiexec process (its whole tree). Exits with the log's tail on another status."""
    with open(log, "w") as out:
        t0 = time.perf_counter()
        p = subprocess.Popen(mpiexec(n, ARGS.bind) + cmd, stdout=out, stderr=subprocess.STDOUT,
                             env=environment())
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode not in ok:
        with open(log) as f:
            tail = f.read()[-3000:]
        sys.exit(f"bench-acceptance: {' '.join(cmd[:5])} on {n} ranks failed "
                 f"(exit {p.returncode}):\n{tail}")
    return {"cpu_s": usage.ru_utime + usage.ru_stime, "peak_rss_mib": usage.ru_maxrss / 1024,
            "wall_s": wall, "exit": p.returncode}


def dlio_mpi(sub, n, args, log, ok=(0,)):
    return launch(n, [sys.executable, "-m", "dlio_mpi", "acceptance", sub] + args, log, ok)


def generate(results, procedure, accelerators):
    over = [f"{k}={v}" for k, v in procedure]
    dlio_mpi("datagen", min(2, accelerators), [WORKLOAD, "--results", results,
                                               "--accelerators", str(accelerators),
                                               "--allow-undersized-dataset"] + over,
             os.path.join(os.path.dirname(results), "datagen.log"))
    data = os.path.join(results, "data", WORKLOAD)
    files = glob.glob(os.path.join(data, "train", "**", "*.npz"), recursive=True)
    want = dict(procedure)["dataset.num_files_train"]
    if len(files) != want:
        sys.exit(f"bench-acceptance: {data}/train holds {len(files)} files, not {want}")
    return data


def run_dlio_mpi(results, tmp, round_):
    """The procedure as dlio_mpi runs it: one job, the warm-up and the runs."""
    # exit status 3: the mean AU under the threshold, still a finished procedure
    m = dlio_mpi("run", ARGS.ranks, [WORKLOAD, "--results", results, "--runs", str(ARGS.runs),
                                     "--allow-fewer-runs", "--allow-undersized-dataset",
                                     "--seed", str(SEED)],
                 os.path.join(tmp, f"dlio_mpi_run_{round_}.log"), ok=(0, 3))
    with open(os.path.join(results, "training", WORKLOAD, "run", "latest", "result.json")) as f:
        doc = json.load(f)
    runs = [doc["warmup"]] + doc["runs"]
    steps = sum(r["accelerators"] * r["steps_per_epoch"] * ARGS.epochs for r in runs)
    return dict(m, accelerator_steps=steps, launches=1,
                au_percentage=[r["au_percentage"] for r in doc["runs"]])


def dlio_command(data, out, seed, procedure, generate=False):
    over = [f"++workload.{dlio_names(k)}={v}" for k, v in procedure] + [
        f"++workload.dataset.data_folder={data}", "++workload.dataset.num_files_eval=0",
        "++workload.dataset.num_subfolders_train=0",
        f"++workload.workflow.generate_data={generate}", f"++workload.workflow.train={not generate}",
        "++workload.workflow.profiling=False",
        f"++workload.train.seed={seed}", f"++workload.output.folder={out}",
        f"hydra.run.dir={out}/hydra"]
    return [ARGS.dlio, f"workload={DLIO_WORKLOAD}"] + over


def dlio_generate(data, tmp, ranks, procedure):
    """The DLIO benchmark's own dataset, as its generator writes the workload's NPZ files
    (member x holding the samples), of the same count and sizes as dlio_mpi's; not measured."""
    out = os.path.join(tmp, "dlio_datagen")
    os.makedirs(out)
    launch(min(2, ranks), dlio_command(data, out, SEED, procedure, generate=True), out + ".log")
    files = glob.glob(os.path.join(data, "train", "**", "*.npz"), recursive=True)
    want = dict(procedure)["dataset.num_files_train"]
    if len(files) != want:
        sys.exit(f"bench-acceptance: the DLIO benchmark wrote {len(files)} files in "
                 f"{data}/train, not {want}")


def dlio_run(n, data, out, seed, procedure):
    """One run of the DLIO benchmark on n ranks: its figures and its summary."""
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    m = launch(n, dlio_command(data, out, seed, procedure), out + ".log")
    try:
        with open(os.path.join(out, "summary.json")) as f:
            summary = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"bench-acceptance: the DLIO benchmark's run in {out} left no summary ({e}); "
                 f"its output: {out}.log")
    return m, summary


def dlio_steps(summary, n, procedure):
    """Accelerator-steps of a DLIO benchmark run, by its own rule: every rank
    floor(samples / batch / ranks) steps an epoch."""
    p = dict(procedure)
    per_epoch = p["dataset.num_files_train"] * p["dataset.num_samples_per_file"] \
        // p["reader.batch_size"] // n
    return n * per_epoch * summary.get("epochs", p["train.epochs"])


def run_dlio(data, tmp, round_, procedure):
    """The procedure as the DLIO benchmark runs it: the warm-up and each run a job."""
    total = {"cpu_s": 0.0, "peak_rss_mib": 0.0, "wall_s": 0.0, "accelerator_steps": 0,
             "launches": 0, "au_percentage": []}
    for i in range(ARGS.runs + 1):
        out = os.path.join(tmp, f"dlio_{round_}", "warmup" if i == 0 else f"run_{i}")
        m, summary = dlio_run(ARGS.ranks, data, out, SEED + i, procedure)
        total["cpu_s"] += m["cpu_s"]
        total["wall_s"] += m["wall_s"]
        total["peak_rss_mib"] = max(total["peak_rss_mib"], m["peak_rss_mib"])
        total["accelerator_steps"] += dlio_steps(summary, ARGS.ranks, procedure)
        total["launches"] += 1
        if i:
            total["au_percentage"].append(summary["metric"]["train_au_mean_percentage"])
    return total


def add(into, m):
    if not into:
        into.update(m, au_percentage=list(m["au_percentage"]))
        return
    for k in ("cpu_s", "wall_s", "accelerator_steps", "launches"):
        into[k] += m[k]
    into["peak_rss_mib"] = max(into["peak_rss_mib"], m["peak_rss_mib"])
    into["au_percentage"] += m["au_percentage"]


def figures(m):
    if not m:
        return None
    au = m["au_percentage"]
    return {"cpu_s": round(m["cpu_s"], 3), "wall_s": round(m["wall_s"], 3),
            "peak_rss_mib": round(m["peak_rss_mib"], 1),
            "accelerator_steps": m["accelerator_steps"], "launches": m["launches"],
            "cpu_ms_per_accelerator_step": round(1000 * m["cpu_s"] / m["accelerator_steps"], 3),
            "au_percentage_mean": round(sum(au) / len(au), 2) if au else None,
            "au_percentage_runs": [round(a, 2) for a in au]}


def search_dlio_mpi(results, tmp):
    launcher = " ".join(mpiexec(1, ARGS.bind)[:1] + mpiexec(1, ARGS.bind)[3:])
    m = launch(1, [sys.executable, "-m", "dlio_mpi", "acceptance", "search", WORKLOAD,
                   "--results", results, "--max", str(ARGS.max), "--repeats",
                   str(ARGS.repeats), "--allow-undersized-dataset", "--seed", str(SEED),
                   "--launcher", launcher],
               os.path.join(tmp, "dlio_mpi_search.log"), ok=(0, 3))
    with open(os.path.join(results, "training", WORKLOAD, "search", "latest",
                           "search.json")) as f:
        doc = json.load(f)
    tried = [{"accelerators": c["accelerators_per_host"],
              "au_percentage": [round(a, 2) for a in c["au_percentage"]], "pass": c["pass"]}
             for c in doc["points"]]
    return {"accelerators": doc["accelerators_per_host"], "at_max": doc["at_max"],
            "tried": tried, "wall_s": round(m["wall_s"], 1)}


def search_dlio(data, tmp, procedure):
    threshold = rules.threshold(WORKLOAD)
    tried = []
    t0 = time.perf_counter()

    def measure(count, repeat):
        out = os.path.join(tmp, "dlio_search", f"accelerators_{count}", f"repeat_{repeat}")
        _, summary = dlio_run(count, data, out, SEED + repeat - 1, procedure)
        au = summary["metric"]["train_au_mean_percentage"]
        print(f"#   DLIO benchmark, {count} accelerators, repeat {repeat}: AU {au:.2f} %",
              file=sys.stderr)
        return au

    def passes(count):
        ok, values = bisection.decide(measure, count, ARGS.repeats, threshold)
        tried.append({"accelerators": count, "au_percentage": [round(v, 2) for v in values],
                      "pass": ok})
        return ok

    n = bisection.largest_passing(1, ARGS.max, passes)
    return {"accelerators": n, "at_max": n == ARGS.max, "tried": tried,
            "wall_s": round(time.perf_counter() - t0, 1)}


def find_dlio():
    path = ARGS.dlio or os.environ.get("DLIO_BENCHMARK")
    if not path:
        return None, ("the DLIO benchmark not given (--dlio PATH or $DLIO_BENCHMARK): its side "
                      "is skipped")
    found = shutil.which(path)
    if found is None:
        return None, f"the DLIO benchmark {path} not found or not executable: its side is skipped"
    return found, None


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dlio", default=None,
                    help="the DLIO benchmark's dlio_benchmark script (default: $DLIO_BENCHMARK)")
    ap.add_argument("--runs", type=int, default=2, help="measured runs after the warm-up")
    ap.add_argument("--rounds", type=int, default=1,
                    help="procedures per side, the order alternating")
    ap.add_argument("--ranks", type=int, default=2, help="emulated accelerators")
    ap.add_argument("--files", type=int, default=224, help="training files")
    ap.add_argument("--scale", type=int, default=16,
                    help="divide a step's bytes and compute time by")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--search", action="store_true",
                    help="then the accelerators each sustains at the AU threshold")
    ap.add_argument("--max", type=int, default=8, help="most accelerators a search tries")
    ap.add_argument("--repeats", type=int, default=3, help="runs of a count in a search")
    ap.add_argument("--bind", choices=("core", "none"), default="none",
                    help="how mpiexec binds the ranks of both sides")
    ap.add_argument("--dir", default=None, help="directory for the dataset (default: TMPDIR)")
    ap.add_argument("--quick", action="store_true",
                    help="tiny sizes (scale 1024, 28 files, 1 epoch, 1 run, search up to 2 "
                    "accelerators, 1 repeat): a smoke test")
    args = ARGS = ap.parse_args()
    if args.quick:
        args.scale, args.files, args.epochs, args.runs = 1024, 28, 1, 1
        args.max, args.repeats = min(args.max, 2), 1
    for name in ("runs", "rounds", "ranks", "files", "scale", "epochs", "max", "repeats"):
        if getattr(args, name) < 1:
            sys.exit(f"bench-acceptance: --{name} {getattr(args, name)}: at least 1")
    if args.files < BATCH * max(args.ranks, args.max if args.search else 1):
        sys.exit(f"bench-acceptance: --files {args.files}: fewer than a batch of {BATCH} for "
                 "each rank")
    args.dlio, note = find_dlio()
    if note:
        print(f"# {note}", file=sys.stderr)
    procedure = settings(args.scale, args.files, args.epochs)
    tmp = tempfile.mkdtemp(prefix="dlio_mpi_bench_acceptance_", dir=args.dir)
    sides = {"dlio_mpi": {}, "dlio": {}}
    search = None
    try:
        results = os.path.join(tmp, "results")
        generate(results, procedure, max(args.ranks, args.max if args.search else 1))
        data = os.path.join(tmp, "dlio_data")
        if args.dlio:
            dlio_generate(data, tmp, args.ranks, procedure)
        for r in range(args.rounds):
            order = ["dlio_mpi", "dlio"] if r % 2 == 0 else ["dlio", "dlio_mpi"]
            for side in order:
                if side == "dlio_mpi":
                    add(sides[side], run_dlio_mpi(results, tmp, r))
                elif args.dlio:
                    add(sides[side], run_dlio(data, tmp, r, procedure))
        if args.search:
            search = {"dlio_mpi": search_dlio_mpi(results, tmp),
                      "dlio": search_dlio(data, tmp, procedure) if args.dlio else None,
                      "max": args.max, "repeats": args.repeats,
                      "au_threshold_percentage": rules.threshold(WORKLOAD)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ours, theirs = figures(sides["dlio_mpi"]), figures(sides["dlio"])
    ratio = (round(ours["cpu_ms_per_accelerator_step"] / theirs["cpu_ms_per_accelerator_step"],
                   3) if theirs else None)
    print(f"{'side':<16}{'CPU s':>8}{'ms CPU/acc-step':>17}{'acc-steps':>11}{'peak RSS MiB':>14}"
          f"{'wall s':>8}{'AU % (runs)':>24}")
    for label, f in (("dlio_mpi", ours), ("DLIO benchmark", theirs)):
        if f is None:
            print(f"{label:<16}{'skipped':>8}")
            continue
        print(f"{label:<16}{f['cpu_s']:>8.2f}{f['cpu_ms_per_accelerator_step']:>17.2f}"
              f"{f['accelerator_steps']:>11}{f['peak_rss_mib']:>14.1f}{f['wall_s']:>8.1f}"
              f"{' '.join(f'{a:.1f}' for a in f['au_percentage_runs']):>24}")
    if ratio is not None:
        print(f"CPU per accelerator-step, dlio_mpi / DLIO benchmark: {ratio:.3f} (target "
              f"<= {TARGET})")
    if search:
        for label, key in (("dlio_mpi", "dlio_mpi"), ("DLIO benchmark", "dlio")):
            s = search[key]
            if s is None:
                print(f"accelerators at AU >= {search['au_threshold_percentage']:g} %, "
                      f"{label}: skipped")
                continue
            print(f"accelerators at AU >= {search['au_threshold_percentage']:g} %, {label}: "
                  f"{s['accelerators']}{' (the most tried)' if s['at_max'] else ''}; tried "
                  + ", ".join(f"{c['accelerators']} ({'/'.join(f'{a:.1f}' for a in c['au_percentage'])})"
                              for c in s["tried"]))
    p = dict(procedure)
    print(json.dumps({
        "workload": WORKLOAD, "scale": args.scale, "ranks": args.ranks, "files": args.files,
        "record_length": p["dataset.record_length"], "batch_size": BATCH,
        "read_threads": READ_THREADS, "computation_time": p["train.computation_time"],
        "epochs": args.epochs, "runs": args.runs, "rounds": args.rounds, "bind": args.bind,
        "dlio_mpi": ours, "dlio": theirs, "cpu_per_accelerator_step_ratio": ratio,
        "target": TARGET, "note": note, "search": search}))


if __name__ == "__main__":
    main()

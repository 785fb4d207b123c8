"""Analysis benchmark: the time to characterize a Darshan log and write its report with figures
(`python -m dlio_mpi_analysis.cli report LOG -o DIR`, DXT traces read) against the time PyDarshan's own
report takes (`python -m darshan summary LOG --output FILE`), on the largest logs of the
collection, each as one fresh process, one after the other. Prints a table, then one JSON
object on the last line.

The ratio is the sum over the logs of our median time over the sum of theirs; medians are over
--rounds runs, and each round runs the two back to back (alternating which goes first), so that
a noisy, shared machine moves both sides together.

    scripts/bench-analysis [--logs 4] [--rounds 3] [--logs-dir DIR]

With --diagnose: the wall time of a fresh `python -m dlio_mpi analyze diagnose PATH --json`
process on every log (and job folder of logs) of the --logs-dir directories (--logs 0: all of
them; N: the N largest), min, median and max over --rounds runs per path, beside the time of
the analysis alone (diagnose_path in one process that imported everything once) and, where
Drishti is at hand (--drishti, $DRISHTI or PATH; skipped with a note otherwise), Drishti's
wall time on the same log and the time it reports for its own analysis ("... in N seconds").
Each round runs the two back to back, alternating which goes first. Job folders have no
Drishti figure (Drishti reads one log).

    scripts/bench-analysis --diagnose [--logs 0] [--rounds 3] [--logs-dir DIR ...]
                           [--drishti PROGRAM]
"""
import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_LOGS = os.path.join(os.path.dirname(REPO), "shared", "darshan-logs")
GOAL = 0.5
DIAGNOSE_GOAL_S = 1.0       # analyze diagnose, per log


def log_paths(dirs, with_folders=False):
    """The *.darshan logs of ``dirs`` and, ``with_folders``, their sub-directories holding
    *.darshan logs (one job's per-process logs, which diagnose reads as one job)."""
    found = []
    for folder in dirs:
        found += glob.glob(os.path.join(folder, "*.darshan"))
        if with_folders:
            found += [d for d in glob.glob(os.path.join(folder, "*")) if os.path.isdir(d)
                      and glob.glob(os.path.join(d, "*.darshan"))]
    return found


def path_size(path):
    if os.path.isdir(path):
        return sum(os.path.getsize(p) for p in glob.glob(os.path.join(path, "*.darshan")))
    return os.path.getsize(path)


def timed(cmd):
    """Wall seconds of one run of cmd, or None if it failed."""
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        print(f"  failed ({done.returncode}): {' '.join(cmd)}: {done.stderr.strip()[-300:]}",
              file=sys.stderr)
        return None
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--logs", type=int, default=4, help="how many of the largest logs")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--logs-dir", action="append", default=None,
                        help="a directory of logs (repeatable; default $DLIO_MPI_DARSHAN_LOGS, "
                             "else ../shared/darshan-logs)")
    parser.add_argument("--diagnose", action="store_true",
                        help="analyze diagnose against Drishti instead")
    parser.add_argument("--drishti", default=os.environ.get("DRISHTI") or shutil.which("drishti"),
                        help="Drishti's program (default: $DRISHTI, else drishti on PATH)")
    args = parser.parse_args()
    dirs = args.logs_dir or [os.environ.get("DLIO_MPI_DARSHAN_LOGS", DEFAULT_LOGS)]
    logs = sorted(log_paths(dirs, with_folders=args.diagnose), key=path_size,
                  reverse=True)[:args.logs or None]
    if not logs:
        sys.exit(f"bench-analysis: no *.darshan logs in {', '.join(dirs)}")
    if args.diagnose:
        return bench_diagnose(logs, args)
    py = sys.executable
    ours = {log: [] for log in logs}
    theirs = {log: [] for log in logs}
    with tempfile.TemporaryDirectory(prefix="bench-analysis-") as tmp:
        for r in range(args.rounds):
            for i, log in enumerate(logs):
                name = os.path.basename(log)
                contenders = [
                    (ours, [py, "-m", "dlio_mpi_analysis.cli", "report", log, "-o",
                            os.path.join(tmp, "ours", name)]),
                    (theirs, [py, "-m", "darshan", "summary", log, "--output",
                              os.path.join(tmp, "theirs", name + ".html")]),
                ]
                os.makedirs(os.path.join(tmp, "theirs"), exist_ok=True)
                if (r + i) % 2:
                    contenders.reverse()
                for times, cmd in contenders:
                    times[log].append(timed(cmd))
    rows, ours_total, theirs_total, per_log = [], 0.0, 0.0, {}
    for log in logs:
        a = [t for t in ours[log] if t is not None]
        b = [t for t in theirs[log] if t is not None]
        name = os.path.basename(log)
        if not a or not b:
            rows.append((name, os.path.getsize(log), None, None, None))
            continue
        ma, mb = statistics.median(a), statistics.median(b)
        ours_total += ma
        theirs_total += mb
        per_log[name] = ma / mb
        rows.append((name, os.path.getsize(log), ma, mb, ma / mb))
    print(f"{'log':<62} {'bytes':>9} {'ours s':>8} {'pydarshan s':>12} {'ratio':>6}")
    for name, size, ma, mb, ratio in rows:
        if ma is None:
            print(f"{name[:62]:<62} {size:>9} {'failed':>8}")
            continue
        print(f"{name[:62]:<62} {size:>9} {ma:>8.2f} {mb:>12.2f} {ratio:>6.2f}")
    ratio = ours_total / theirs_total if theirs_total else None
    print(f"characterize + report vs PyDarshan summary: {ratio:.2f} (goal <= {GOAL})"
          if ratio is not None else "no log measured on both sides")
    print(json.dumps({
        "logs": [os.path.basename(log) for log in logs],
        "rounds": args.rounds,
        "ours_median_s": {os.path.basename(k): statistics.median([t for t in v if t])
                          for k, v in ours.items() if any(v)},
        "pydarshan_summary_median_s": {os.path.basename(k): statistics.median(
            [t for t in v if t]) for k, v in theirs.items() if any(v)},
        "per_log_ratio": per_log,
        "characterize_vs_pydarshan_summary": ratio,
        "goal": GOAL,
    }))


def drishti_run(program, log, out_dir):
    """(wall seconds, the seconds Drishti reports for itself) of one Drishti run, or
    (None, None) if it failed."""
    t0 = time.perf_counter()
    done = subprocess.run([program, "--csv", "--export_dir", out_dir, log], cwd=REPO,
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        print(f"  drishti failed ({done.returncode}) on {log}", file=sys.stderr)
        return None, None
    own = re.search(r"in\s+([0-9.]+)\s+seconds", " ".join(done.stdout.split()))
    return elapsed, float(own.group(1)) if own else None


IN_PROCESS = """
import json, sys, time, warnings
warnings.simplefilter("ignore")
from dlio_mpi_analysis.diagnosis.diagnosis_report import diagnose_path
out = {}
for log in sys.argv[1:]:
    t0 = time.perf_counter()
    try:
        diagnose_path(log)
    except Exception:
        out[log] = None
        continue
    out[log] = time.perf_counter() - t0
print(json.dumps(out))
"""


def in_process_times(logs):
    """Log -> seconds of diagnose_path in one process that imported the analysis once (the
    figure beside Drishti's own time, which leaves out its start-up too)."""
    done = subprocess.run([sys.executable, "-c", IN_PROCESS, *logs], cwd=REPO,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def bench_diagnose(logs, args):
    py = sys.executable
    drishti = args.drishti if args.drishti and shutil.which(args.drishti) else None
    if not drishti:
        print("bench-analysis: Drishti not found (--drishti PROGRAM, $DRISHTI or drishti on "
              "PATH): its columns are left empty", file=sys.stderr)
    analysis_s = {log: [] for log in logs}
    ours = {log: [] for log in logs}
    theirs = {log: [] for log in logs}
    theirs_own = {log: [] for log in logs}
    with tempfile.TemporaryDirectory(prefix="bench-diagnose-") as tmp:
        for r in range(args.rounds):
            for i, log in enumerate(logs):
                steps = [lambda: ours[log].append(timed(
                             [py, "-m", "dlio_mpi", "analyze", "diagnose", log, "--json"]))]
                if drishti and os.path.isfile(log):
                    steps.append(lambda: [lst.append(v) for lst, v in zip(
                        (theirs[log], theirs_own[log]), drishti_run(drishti, log, tmp))])
                if (r + i) % 2:
                    steps.reverse()
                for step in steps:
                    step()
            for log, seconds in in_process_times(logs).items():
                analysis_s[log].append(seconds)
    return diagnose_table(logs, args.rounds, ours, analysis_s, theirs, theirs_own)


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _seconds(value, width):
    return f"{'-':>{width}}" if value is None else f"{value:>{width}.2f}"


def diagnose_table(logs, rounds, ours, analysis_s, theirs, theirs_own):
    """Print the per-path table, a summary line and the JSON object; return the JSON's dict."""
    print(f"{'path':<58} {'min s':>6} {'median':>6} {'max s':>6} {'analysis':>8} "
          f"{'drishti':>7} {'its own':>7}")
    table = {}
    for log in logs:
        done = [t for t in ours[log] if t is not None]
        row = {"min_s": min(done) if done else None, "median_s": _median(done),
               "max_s": max(done) if done else None, "analysis_s": _median(analysis_s[log]),
               "drishti_s": _median(theirs[log]), "drishti_own_s": _median(theirs_own[log])}
        name = os.path.basename(log.rstrip(os.sep)) + (os.sep if os.path.isdir(log) else "")
        table[name] = row
        print(f"{name[:58]:<58} {_seconds(row['min_s'], 6)} {_seconds(row['median_s'], 6)} "
              f"{_seconds(row['max_s'], 6)} {_seconds(row['analysis_s'], 8)} "
              f"{_seconds(row['drishti_s'], 7)} {_seconds(row['drishti_own_s'], 7)}")
    rows = [v for v in table.values() if v["median_s"] is not None]
    medians = [v["median_s"] for v in rows]
    both = [v for v in rows if v["drishti_s"] is not None]
    ratio = (sum(v["median_s"] for v in both) / sum(v["drishti_s"] for v in both)
             if both else None)
    own = [v for v in rows if v["drishti_own_s"]]
    own_ratio = (sum(v["analysis_s"] for v in own) / sum(v["drishti_own_s"] for v in own)
                 if own else None)
    result = {
        "paths": len(table), "rounds": rounds, "per_path": table,
        "median_of_medians_s": statistics.median(medians) if medians else None,
        "slowest_median_s": max(medians, default=None),
        "slowest_max_s": max((v["max_s"] for v in rows), default=None),
        "paths_over_goal": sorted(k for k, v in table.items()
                                  if v["max_s"] is None or v["max_s"] >= DIAGNOSE_GOAL_S),
        "diagnose_vs_drishti": ratio, "analysis_vs_drishti_own": own_ratio,
        "goal_s": DIAGNOSE_GOAL_S}
    if medians:
        print(f"analyze diagnose, fresh process, {len(rows)} paths: median "
              f"{result['median_of_medians_s']:.2f} s, slowest median "
              f"{result['slowest_median_s']:.2f} s, slowest run {result['slowest_max_s']:.2f} s,"
              f" {len(result['paths_over_goal'])} paths at or over {DIAGNOSE_GOAL_S} s"
              + (f"; vs Drishti (processes) {ratio:.2f}" if ratio is not None else "")
              + (f"; analysis alone vs Drishti's own time {own_ratio:.2f}"
                 if own_ratio is not None else ""))
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()

"""Analysis benchmark: the time to characterize a Darshan log and write its report with figures
(`python -m analysis.cli report LOG -o DIR`, DXT traces read) against the time PyDarshan's own
report takes (`python -m darshan summary LOG --output FILE`), on the largest logs of the
collection, each as one fresh process, one after the other. Prints a table, then one JSON
object on the last line.

The ratio is the sum over the logs of our median time over the sum of theirs; medians are over
--rounds runs, and each round runs the two back to back (alternating which goes first), so that
a noisy, shared machine moves both sides together.

    scripts/bench-analysis [--logs 4] [--rounds 3] [--logs-dir DIR]

With --diagnose: the time of `analyze diagnose LOG --json` against Drishti's on the same logs
(its program from --drishti, $DRISHTI or PATH), each as one fresh process, and the time Drishti
reports for its own analysis ("... in N seconds"); the ratio is ours over Drishti's, as above.

    scripts/bench-analysis --diagnose [--logs 4] [--rounds 3] [--drishti PROGRAM]
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
    parser.add_argument("--logs-dir", default=os.environ.get("DLIO_MPI_DARSHAN_LOGS",
                                                             DEFAULT_LOGS))
    parser.add_argument("--diagnose", action="store_true",
                        help="analyze diagnose against Drishti instead")
    parser.add_argument("--drishti", default=os.environ.get("DRISHTI") or shutil.which("drishti"),
                        help="Drishti's program (default: $DRISHTI, else drishti on PATH)")
    args = parser.parse_args()
    logs = sorted(glob.glob(os.path.join(args.logs_dir, "*.darshan")), key=os.path.getsize,
                  reverse=True)[:args.logs]
    if not logs:
        sys.exit(f"bench-analysis: no *.darshan logs in {args.logs_dir}")
    if args.diagnose:
        if not args.drishti:
            sys.exit("bench-analysis: --diagnose needs Drishti (--drishti PROGRAM or $DRISHTI)")
        return bench_diagnose(logs, args)
    py = sys.executable
    ours = {log: [] for log in logs}
    theirs = {log: [] for log in logs}
    with tempfile.TemporaryDirectory(prefix="bench-analysis-") as tmp:
        for r in range(args.rounds):
            for i, log in enumerate(logs):
                name = os.path.basename(log)
                contenders = [
                    (ours, [py, "-m", "analysis.cli", "report", log, "-o",
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
from analysis.diagnosis.diagnosis_report import diagnose_path
out = {}
for log in sys.argv[1:]:
    t0 = time.perf_counter()
    diagnose_path(log)
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
    analysis_s = {log: [] for log in logs}
    ours = {log: [] for log in logs}
    theirs = {log: [] for log in logs}
    theirs_own = {log: [] for log in logs}
    with tempfile.TemporaryDirectory(prefix="bench-diagnose-") as tmp:
        for r in range(args.rounds):
            for i, log in enumerate(logs):
                steps = [lambda: ours[log].append(timed(
                             [py, "-m", "analysis.cli", "diagnose", log, "--json"])),
                         lambda: [lst.append(v) for lst, v in zip(
                             (theirs[log], theirs_own[log]), drishti_run(args.drishti, log, tmp))]]
                if (r + i) % 2:
                    steps.reverse()
                for step in steps:
                    step()
            for log, seconds in in_process_times(logs).items():
                analysis_s[log].append(seconds)

    def med(values):
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None

    print(f"{'log':<62} {'ours s':>8} {'analysis s':>10} {'drishti s':>10} {'its own s':>10}"
          f" {'ratio':>6}")
    total_ours = total_theirs = 0.0
    table = {}
    for log in logs:
        a, b, c = med(ours[log]), med(theirs[log]), med(theirs_own[log])
        d = med(analysis_s[log])
        name = os.path.basename(log)
        table[name] = {"ours_s": a, "ours_analysis_s": d, "drishti_s": b, "drishti_own_s": c}
        if a is None or b is None:
            print(f"{name[:62]:<62} {a if a is not None else float('nan'):>8.2f} "
                  f"{d:>10.2f} {'failed':>10}")
            continue
        total_ours += a
        total_theirs += b
        print(f"{name[:62]:<62} {a:>8.2f} {d:>10.2f} {b:>10.2f} "
              f"{c if c is not None else float('nan'):>10.2f} {a / b:>6.2f}")
    ratio = total_ours / total_theirs if total_theirs else None
    slowest = max((v["ours_s"] for v in table.values() if v["ours_s"] is not None), default=None)
    slowest_analysis = max((v["ours_analysis_s"] for v in table.values()), default=None)
    own = [(v["ours_analysis_s"], v["drishti_own_s"]) for v in table.values()
           if v["drishti_own_s"]]
    own_ratio = sum(a for a, _ in own) / sum(b for _, b in own) if own else None
    print(f"analyze diagnose vs Drishti (whole processes): {ratio:.2f}; analysis alone vs "
          f"Drishti's own time: {own_ratio:.2f}; slowest log {slowest:.2f} s as a process, "
          f"{slowest_analysis:.2f} s of analysis (goal < {DIAGNOSE_GOAL_S} s)"
          if ratio is not None and own_ratio is not None else "no log measured on both sides")
    print(json.dumps({"logs": list(table), "rounds": args.rounds, "per_log": table,
                      "diagnose_vs_drishti": ratio, "analysis_vs_drishti_own": own_ratio,
                      "slowest_diagnose_s": slowest, "slowest_analysis_s": slowest_analysis,
                      "goal_s": DIAGNOSE_GOAL_S}))


if __name__ == "__main__":
    main()

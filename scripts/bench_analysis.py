"""Analysis benchmark: the time to characterize a Darshan log and write its report with figures
(`python -m analysis.cli report LOG -o DIR`, DXT traces read) against the time PyDarshan's own
report takes (`python -m darshan summary LOG --output FILE`), on the largest logs of the
collection, each as one fresh process, one after the other. Prints a table, then one JSON
object on the last line.

The ratio is the sum over the logs of our median time over the sum of theirs; medians are over
--rounds runs, and each round runs the two back to back (alternating which goes first), so that
a noisy, shared machine moves both sides together.

    scripts/bench-analysis [--logs 4] [--rounds 3] [--logs-dir DIR]
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DEFAULT_LOGS = os.path.join(os.path.dirname(REPO), "shared", "darshan-logs")
GOAL = 0.5


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
    args = parser.parse_args()
    logs = sorted(glob.glob(os.path.join(args.logs_dir, "*.darshan")), key=os.path.getsize,
                  reverse=True)[:args.logs]
    if not logs:
        sys.exit(f"bench-analysis: no *.darshan logs in {args.logs_dir}")
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


if __name__ == "__main__":
    main()

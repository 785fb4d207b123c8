"""The output directory of a run: one run at a time (a lock), its file names, and its results.
Each run keeps its results in a folder of its own inside the output folder, named by when it
started (as the DLIO benchmark's runs are), and `latest` links to the newest: summary.json and
per_rank.csv appear there only when the run completes, so an interrupted run never leaves
results that look valid. The lock and status.json stay in the output folder. The run's status
file and its marking when a run stops are dlio_mpi.run.status's."""
import csv
import io
import json
import os
import socket
import time

from dlio_mpi.files import folder_lock
from dlio_mpi.files import safe_files

LOCK = ".dlio_mpi.lock"
STATUS = "status.json"
FAILED = ".dlio_mpi.failed"     # left by the first rank that failed, for rank 0's status
RESULTS = ("summary.json", "per_rank.csv", FAILED)
LATEST = "latest"
RUN_FOLDER_TIME = "%Y-%m-%d-%H-%M-%S"        # the DLIO benchmark's run folders' names


# the lock of the run this process belongs to (set on every rank once the run holds its
# output folder): what a stopping rank compares with the folder's lock before it touches
# anything there, so that a run refused the folder leaves the run that holds it alone
owned = None


class OutputInUse(RuntimeError):
    """Another live run holds the output directory."""


# the record of this process and the liveness of a lock's owner (dlio_mpi.files.folder_lock)
_me = folder_lock.this_process
_started = folder_lock.started
_alive = folder_lock.alive


def read_lock(directory):
    """The lock's record ({"host", "pid", "since"}), or None when there is none."""
    try:
        with open(os.path.join(directory, LOCK)) as f:
            rec = json.load(f)
        return rec if isinstance(rec, dict) else None
    except (OSError, ValueError):
        return None


def holds(directory):
    """Whether the folder's lock is still the one of the run this process belongs to."""
    return owned is not None and read_lock(directory) == owned


def lock_state(rec):
    """Of a lock's record: "alive" (its pid runs on this host), "dead" (on this host, and gone)
    or "elsewhere" (another host: this host cannot tell)."""
    if rec.get("host") != socket.gethostname() or not isinstance(rec.get("pid"), int):
        return "elsewhere"
    return "alive" if _alive(rec) else "dead"


def describe(directory):
    """One line on the state of the run in directory, from status.json and the lock: a run
    marked running whose rank 0 is gone is said to be dead."""
    try:
        with open(os.path.join(directory, STATUS)) as f:
            st = json.load(f)
    except FileNotFoundError:
        return f"{directory}: no run (no {STATUS})"
    except (OSError, ValueError) as e:
        return f"{directory}: {STATUS} cannot be read ({e})"
    if not isinstance(st, dict):
        return f"{directory}: {STATUS} cannot be read (not a JSON object)"
    status = st.get("status", "?")
    line = f"{directory}: {status}"
    if st.get("reason"):
        line += f" ({st['reason']})"
    rec = read_lock(directory)
    if status == "running":
        if rec is None:
            line += f"; but no run holds the folder (no {LOCK}): the run died"
        else:
            who = f"pid {rec.get('pid', '?')} on {rec.get('host', '?')}"
            state = lock_state(rec)
            line += {"alive": f", rank 0 is {who}",
                     "dead": f"; but its rank 0 ({who}) is gone: the run died without marking "
                             "it (the next run takes the folder over)",
                     "elsewhere": f", rank 0 is {who} (alive or not: ask that host)"}[state]
    return line


def acquire(directory):
    """Take the directory for this run (rank 0 only). A lock left by a run that died on this
    host is taken over; a live run's, or another host's, is an error naming it."""
    global owned
    path = os.path.join(directory, LOCK)
    try:
        owned = folder_lock.take(path, lambda who: (
            f"output folder {directory} is in use by another run ({who}); if that run is "
            f"gone, remove {path}"))
    except folder_lock.FolderInUse as e:
        raise OutputInUse(str(e)) from None
    return path


def release(directory):
    global owned
    owned = None
    try:
        os.unlink(os.path.join(directory, LOCK))
    except FileNotFoundError:
        pass


def clear_results(directory):
    """Remove the results of an earlier run, so that none outlives an unfinished one."""
    for name in RESULTS:
        try:
            os.unlink(os.path.join(directory, name))
        except FileNotFoundError:
            pass


def new_run_folder(directory, started):
    """The folder of a run that started at `started` (seconds since the epoch) inside output
    folder directory, made now, with `latest` linked to it; a second run within the same
    second gets a suffix. Returns its path."""
    name = time.strftime(RUN_FOLDER_TIME, time.localtime(started))
    for n in range(1, 1000):
        candidate = name if n == 1 else f"{name}-{n}"
        try:
            os.mkdir(os.path.join(directory, candidate))
        except FileExistsError:
            continue
        safe_files.replace_link(os.path.join(directory, LATEST), candidate)
        return os.path.join(directory, candidate)
    raise OSError(f"{directory}: no free run folder name for {name}")


def results_folder(directory):
    """Where the results of the newest run in output folder directory are: its `latest` run
    folder, or directory itself when it has none (a run folder given directly)."""
    latest = os.path.join(directory, LATEST)
    return latest if os.path.isdir(latest) else directory


def write_results(directory, summary, header, rows):
    """A completed run's results: per_rank.csv (header, then a row per rank) and summary.json,
    each written whole or not at all."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(header)
    w.writerows(rows)
    safe_files.write_whole(os.path.join(directory, "per_rank.csv"), buf.getvalue(), fsync=True)
    safe_files.write_whole(os.path.join(directory, "summary.json"), json.dumps(summary, indent=1),
                           fsync=True)

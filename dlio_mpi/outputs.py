"""The output directory of a run: one run at a time (a lock), and a status that says whether the
run completed. summary.json and per_rank.csv appear only when a run completes; a run that starts
removes the previous run's, so an interrupted run never leaves results that look valid."""
import csv
import io
import json
import os
import socket
import time

LOCK = ".dlio_mpi.lock"
STATUS = "status.json"
FAILED = ".dlio_mpi.failed"     # left by the first rank that failed, for rank 0's status
RESULTS = ("summary.json", "per_rank.csv", FAILED)


# the lock of the run this process belongs to (set on every rank once the run holds its
# output folder): what a stopping rank compares with the folder's lock before it touches
# anything there, so that a run refused the folder leaves the run that holds it alone
owned = None


class OutputInUse(RuntimeError):
    """Another live run holds the output directory."""


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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
    return "alive" if _alive(rec["pid"]) else "dead"


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
    me = {"host": socket.gethostname(), "pid": os.getpid(), "since": time.time()}
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                with open(path) as f:
                    other = json.load(f)
            except (OSError, ValueError):
                other = {}
            if other.get("host") == me["host"] and isinstance(other.get("pid"), int) \
                    and not _alive(other["pid"]):
                os.unlink(path)             # left by a run that died: take it over
                continue
            who = f"pid {other.get('pid', '?')} on {other.get('host', '?')}"
            raise OutputInUse(f"output folder {directory} is in use by another run ({who}); "
                              f"if that run is gone, remove {path}")
        with os.fdopen(fd, "w") as f:
            json.dump(me, f)
        owned = me
        return path
    raise OutputInUse(f"cannot take the lock {path}")


def release(directory):
    global owned
    owned = None
    try:
        os.unlink(os.path.join(directory, LOCK))
    except FileNotFoundError:
        pass


def set_status(directory, status, *, writer=None, **extra):
    """status.json: running, complete, interrupted or failed (written atomically; writer: a
    rank other than rank 0 that writes it, with a temporary name of its own)."""
    path = os.path.join(directory, STATUS)
    tmp = f"{path}.part" if writer is None else f"{path}.{writer}.part"
    with open(tmp, "w") as f:
        json.dump({"status": status, "time": time.time(), **extra}, f)
    os.replace(tmp, path)


def clear_results(directory):
    """Remove the results of an earlier run, so that none outlives an unfinished one."""
    for name in RESULTS:
        try:
            os.unlink(os.path.join(directory, name))
        except FileNotFoundError:
            pass


def note_failure(directory, rank, reason):
    """A rank other than rank 0 failed and is about to end the job: it leaves its reason, so
    that rank 0, if the launcher's SIGTERM reaches it in Python, marks the run failed, not
    interrupted. The first note stays (written whole, then linked to its name)."""
    path = os.path.join(directory, FAILED)
    tmp = f"{path}.{rank}.part"
    try:
        with open(tmp, "w") as f:
            json.dump({"rank": rank, "reason": reason}, f)
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
    except OSError:
        pass
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def noted_failure(directory):
    """The note of note_failure, or None."""
    try:
        with open(os.path.join(directory, FAILED)) as f:
            note = json.load(f)
        return note if isinstance(note, dict) and "reason" in note else None
    except (OSError, ValueError):
        return None


def guard_status(directory):
    """Rank 0, once the run is marked running: a SIGTERM or SIGINT that finds this process
    inside a blocking call (a collective MPI call, a long read), where Python's own handler may
    never run before the launcher's SIGKILL, still marks the run interrupted (in C, unless a
    failing rank left its note)."""
    from dlio_mpi import engines

    path = os.path.join(directory, STATUS)
    body = json.dumps({"status": "interrupted", "reason": "stopped by SIGTERM or SIGINT (the "
                       "job cancelled, or ended by the launcher after a rank died) while rank 0 "
                       "was inside a blocking call", "pid": os.getpid()})
    engines.status_guard_arm(f"{path}.signal.part", path, os.path.join(directory, FAILED), body)


def guard_status_beside(directory, rank):
    """A rank other than rank 0, on rank 0's host: a SIGTERM or SIGINT that reaches it when
    rank 0 is gone (killed: the launcher then ends the job) marks the run interrupted, which
    rank 0 can no longer do; while rank 0 lives the guard writes nothing."""
    from dlio_mpi import engines

    rec = owned
    if rec is None or lock_state(rec) != "alive":
        return
    path = os.path.join(directory, STATUS)
    body = json.dumps({"status": "interrupted", "reason": f"rank 0 (pid {rec['pid']}) died; "
                       "the launcher ended the job", "writer": rank})
    engines.status_guard_arm(f"{path}.signal.{rank}.part", path,
                             os.path.join(directory, FAILED), body, rec["pid"])


def unguard_status():
    """Before the run writes its own final status."""
    from dlio_mpi import engines

    engines.status_guard_disarm()


def mark_stopped(cfg, status, why, rank=None):
    """After a failure or a signal: on rank 0 (the lock's owner), the run is marked as not
    complete and the output folder released; a failing rank that does not own the lock leaves
    the run marked failed with its reason, and a note that keeps rank 0 (stopped by the
    launcher when this rank ends the job) from marking it interrupted. Nothing collective:
    other ranks may be gone. Returns the status written, or None on the other ranks."""
    out_dir = cfg.output.folder
    if not holds(out_dir):
        return None             # this run never held the folder (or no longer does): not ours
    mine = owned.get("pid") == os.getpid()
    if not mine:
        unguard_status()
        if status == "interrupted" and lock_state(owned) == "dead" \
                and not noted_failure(out_dir):
            # rank 0 was killed: the launcher ends the job, and this rank says so
            try:
                set_status(out_dir, "interrupted", writer=rank,
                                   reason=f"rank 0 (pid {owned['pid']}) died; the "
                                          f"launcher ended the job ({why})")
            except OSError:
                return None
            return "interrupted"
        if status == "failed" and rank is not None:
            # rank 0 may be inside an MPI call when the job ends, where no Python signal
            # handler runs: the failing rank marks the run itself (rank 0's lock stays, to be
            # taken over by the next run)
            note_failure(out_dir, rank, why)
            try:
                set_status(out_dir, "failed", writer=rank, reason=why)
            except OSError:
                pass
        return None
    unguard_status()
    if status == "interrupted":
        note = noted_failure(out_dir)
        if note:
            status, why = "failed", note["reason"]
    try:
        set_status(out_dir, status, reason=why)
    except OSError:
        pass
    release(out_dir)
    return status


def write_atomic(path, text):
    tmp = f"{path}.part"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_results(directory, summary, header, rows):
    """A completed run's results: per_rank.csv (header, then a row per rank) and summary.json,
    each written whole or not at all."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(header)
    w.writerows(rows)
    write_atomic(os.path.join(directory, "per_rank.csv"), buf.getvalue())
    write_atomic(os.path.join(directory, "summary.json"), json.dumps(summary, indent=1))

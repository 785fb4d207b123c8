"""The status of a run in its output directory (status.json: running, complete, interrupted or
failed), the note a failing rank leaves for rank 0, the C guard that marks a run interrupted when
a signal finds rank 0 inside a blocking call, and the marking of a run that stops."""
import json
import os
import time

from dlio_mpi.run import outputs
from dlio_mpi.files import safe_files
from dlio_mpi.checkpoint import lock as checkpoint_lock


def set_status(directory, status, *, writer=None, **extra):
    """status.json: running, complete, interrupted or failed (written atomically; writer: a
    rank other than rank 0 that writes it, with a temporary name of its own)."""
    path = os.path.join(directory, outputs.STATUS)
    tmp = f"{path}.part" if writer is None else f"{path}.{writer}.part"
    safe_files.write_whole(path, json.dumps({"status": status, "time": time.time(), **extra}),
                           temp=tmp)


def note_failure(directory, rank, reason):
    """A rank other than rank 0 failed and is about to end the job: it leaves its reason, so
    that rank 0, if the launcher's SIGTERM reaches it in Python, marks the run failed, not
    interrupted. The first note stays (written whole, then linked to its name)."""
    path = os.path.join(directory, outputs.FAILED)
    tmp = f"{path}.{rank}.part"
    try:
        with safe_files.create(tmp, "w") as f:
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
        with open(os.path.join(directory, outputs.FAILED)) as f:
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

    path = os.path.join(directory, outputs.STATUS)
    body = json.dumps({"status": "interrupted", "reason": "stopped by SIGTERM or SIGINT (the "
                       "job cancelled, or ended by the launcher after a rank died) while rank 0 "
                       "was inside a blocking call", "pid": os.getpid()})
    engines.status_guard_arm(f"{path}.signal.part", path,
                             os.path.join(directory, outputs.FAILED), body)


def guard_status_beside(directory, rank):
    """A rank other than rank 0, on rank 0's host: a SIGTERM or SIGINT that reaches it when
    rank 0 is gone (killed: the launcher then ends the job) marks the run interrupted, which
    rank 0 can no longer do; while rank 0 lives the guard writes nothing."""
    from dlio_mpi import engines

    rec = outputs.owned
    if rec is None or outputs.lock_state(rec) != "alive":
        return
    path = os.path.join(directory, outputs.STATUS)
    body = json.dumps({"status": "interrupted", "reason": f"rank 0 (pid {rec['pid']}) died; "
                       "the launcher ended the job", "writer": rank})
    engines.status_guard_arm(f"{path}.signal.{rank}.part", path,
                             os.path.join(directory, outputs.FAILED), body, rec["pid"])


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
    if not outputs.holds(out_dir):
        return None             # this run never held the folder (or no longer does): not ours
    mine = outputs.owned.get("pid") == os.getpid()
    if not mine:
        unguard_status()
        if status == "interrupted" and outputs.lock_state(outputs.owned) == "dead" \
                and not noted_failure(out_dir):
            # rank 0 was killed: the launcher ends the job, and this rank says so
            try:
                set_status(out_dir, "interrupted", writer=rank,
                           reason=f"rank 0 (pid {outputs.owned['pid']}) died; the "
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
    checkpoint_lock.release()
    outputs.release(out_dir)
    return status

"""One process at a time in a folder: a lock file created exclusively, holding its owner (host,
pid, when the process started and in which boot, so that a pid reused after a crash is not
taken for the owner). A lock whose owner died on this host is taken over; a live owner's, or
another host's, is refused with a line naming it. The output folder (dlio_mpi.run.outputs), the
checkpoint folder of a run and a dataset being generated each have one."""
import json
import os
import socket
import time

from dlio_mpi.files import safe_files


class FolderInUse(RuntimeError):
    """Another live process holds the folder (one line naming it)."""


def _boot_id():
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return None


def started(pid):
    """When process pid started (clock ticks after boot: /proc/PID/stat field 22), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        return int(stat[stat.rindex(")") + 2:].split()[19])    # fields from the 3rd on
    except (OSError, ValueError, IndexError):
        return None


def _state(pid):
    """Process pid's state letter (/proc/PID/stat field 3), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def this_process():
    """This process as a lock records it."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "since": time.time(),
            "started": started(os.getpid()), "boot": _boot_id()}


def alive(rec):
    """Whether the process a lock record names (on this host) still runs: its pid lives and,
    where the record says when it started, it is the same process (not a pid reused since)."""
    pid = rec["pid"]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    if _state(pid) in ("Z", "X"):
        return False            # ended, not reaped yet by its parent (a launcher's daemon)
    if rec.get("started") is None or rec.get("boot") is None:
        return True             # a record that does not say: the pid is all there is
    if rec["boot"] != _boot_id():
        return False            # the host has restarted since
    return started(pid) == rec["started"]


def read(path):
    """The record of the lock at path, or None when there is none."""
    try:
        with open(path) as f:
            rec = json.load(f)
        return rec if isinstance(rec, dict) else None
    except (OSError, ValueError):
        return None


def dead(path):
    """Whether the lock at path was left by a process that died on this host."""
    rec = read(path)
    return bool(rec) and rec.get("host") == socket.gethostname() \
        and isinstance(rec.get("pid"), int) and not alive(rec)


def take(path, in_use):
    """Create the lock at path for this process; returns its record. A lock left by a process
    that died on this host is taken over; otherwise FolderInUse(in_use(who)), who naming the
    owner ("pid N on HOST")."""
    me = this_process()
    for _ in range(2):
        try:
            fd = safe_files.create_fd(path, replace_stale=False)
        except FileExistsError:
            other = read(path) or {}
            if other.get("host") == me["host"] and isinstance(other.get("pid"), int) \
                    and not alive(other):
                os.unlink(path)             # left by a process that died: take it over
                continue
            raise FolderInUse(in_use(f"pid {other.get('pid', '?')} on "
                                     f"{other.get('host', '?')}"))
        with os.fdopen(fd, "w") as f:
            json.dump(me, f)
        return me
    raise FolderInUse(f"cannot take the lock {path}")


def release(path, rec):
    """Remove the lock at path if it is still the one of record rec."""
    if rec is not None and read(path) == rec:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass

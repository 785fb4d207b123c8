"""Which rank died when the launcher ends a job. Killed ranks leave no word of their own: the
launcher reaps the process, then sends SIGTERM to the others, which would mark the run as if it
had been cancelled. Rank 0 knows the pids of the ranks on its host (gathered once, at the
start, within the host only) and, when the signal comes, names the one whose process is gone;
the C status guard does the same when the signal finds rank 0 inside a blocking call. A rank on
another host cannot be checked from rank 0: its death is then reported as before, as a signal."""
import os

# rank 0's knowledge of the other ranks on its host: [(rank, pid)]
_peers = []


def gather(comm):
    """Collective: rank 0 learns the ranks and pids on its host (each host's ranks exchange
    theirs only among themselves) and hands them to its status guard."""
    from mpi4py import MPI

    from dlio_mpi import engines

    global _peers
    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        on_host = local.allgather((comm.Get_rank(), os.getpid()))
    finally:
        local.Free()
    if comm.Get_rank() == 0:
        _peers = [(rank, pid) for rank, pid in on_host if rank != 0]
        engines.status_guard_peers([r for r, _ in _peers], [p for _, p in _peers])


def _gone(pid):
    """True when process pid no longer runs (none, or a zombie not reaped yet)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return False


def dead_ranks():
    """[(rank, pid)] of the ranks on rank 0's host whose process is gone (rank 0 only)."""
    return [(rank, pid) for rank, pid in _peers if _gone(pid)]


def describe(dead):
    """'rank 1 (pid 123) died' for the dead ranks."""
    names = ", ".join(f"rank {rank} (pid {pid})" for rank, pid in dead[:4])
    more = f" and {len(dead) - 4} more" if len(dead) > 4 else ""
    return f"{names}{more} died"

"""Errors across ranks. A rank's error (a bad file, a full disk) is shared with an allgather,
so every rank stops at the same point and raises the same RankError, which names the first
failing rank. The job then ends without MPI_Abort: the named rank says it and marks the run,
the others wait for it (bounded), and every rank exits with status 1. A collective HDF5 call
that failed on one rank cannot be agreed on: that rank ends the job (end_hdf5_job)."""
import os
import sys
import time


class RankError(RuntimeError):
    """An error every rank of the communicator raised together. rank: the rank that names it
    (the first that failed); errors: every failing (rank, message)."""

    def __init__(self, line, rank, errors=()):
        super().__init__(line)
        self.rank = rank
        self.errors = list(errors) or [(rank, line)]


def agree(comm, error):
    """Collective: every rank learns the first rank's error (a message "rank N: ..." or None)
    and raises it as a RankError."""
    errors = [(r, e) for r, e in enumerate(comm.allgather(error)) if e]
    if errors:
        raise RankError(errors[0][1], errors[0][0], errors)


def wait_all(comm, timeout):
    """Collective with a bound: True once every rank of comm arrived here, False after timeout
    seconds (a rank that never comes: the caller ends the job)."""
    req = comm.Ibarrier()
    end = time.monotonic() + timeout
    while not req.Test():
        if time.monotonic() > end:
            return False
        time.sleep(0.005)
    return True


def named_rank(error):
    """The rank an error names as the one it happened on (a RankError's; an engine error's,
    whose message starts with it), or None."""
    rank = getattr(error, "rank", None)
    return rank if isinstance(rank, int) and rank >= 0 else None


def end_hdf5_job(comm, line, partial=None, before=None):
    """HDF5 (1.10) through ROMIO cannot finish a collective call that failed on one rank: that
    rank leaves it without the MPI_File_set_view the other ranks wait in. The rank whose call
    failed removes the partial file it was writing (if any), runs before(message) if given,
    says so in one line and ends the job, instead of hanging in its next collective call."""
    if partial is not None:
        try:
            os.unlink(partial)
        except OSError:
            pass
    message = (f"{' '.join(line.split())} (HDF5 through ROMIO cannot finish a collective call "
               "that failed on one rank: the job is ended)")
    if before is not None:
        try:
            before(message)
        except Exception:   # noqa: BLE001 - the job ends whatever happens here
            pass
    sys.stderr.write(f"dlio_mpi: {message}\n")
    sys.stderr.flush()
    comm.Abort(1)

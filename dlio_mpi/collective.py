"""Errors every rank agrees on. A rank's error (a bad file, a full disk) is shared with an
allgather, so every rank stops at the same point and raises the same RankError, which names the
first failing rank. The job then ends without MPI_Abort: the named rank says it and marks the
run, the others wait for it (bounded), and every rank exits with status 1."""
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

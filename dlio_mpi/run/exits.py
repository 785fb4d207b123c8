"""How a command run under mpiexec ends: exit statuses, SIGINT and SIGTERM as an exception,
and the one line of a failure, said by the rank it names, with no rank left waiting."""
import sys

import click

CONFIG_ERROR = 2        # exit status of a bad configuration
AU_FAIL = 3             # exit status of a run under its AU threshold with io.fail_below_au


class Interrupted(Exception):
    """SIGINT or SIGTERM reached this rank."""

    def __init__(self, signum):
        import signal
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


def _stop_on_signals():
    """SIGINT and SIGTERM (what launchers send to stop a job) end the run cleanly: outputs
    marked interrupted, non-zero exit."""
    import signal

    def handler(signum, frame):
        raise Interrupted(signum)

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)


def _error_line(rank, exc):
    """(line, rank that says it) for an exception: the line names the failing rank ("rank N:
    what"). An error that names its rank (agreed on by every rank, a RankError, or an engine's
    error) is said by the rank it names only: one line for the job."""
    from dlio_mpi.run import collective

    text = " ".join(str(exc).split()) or type(exc).__name__
    named = collective.named_rank(exc)
    if named is not None:
        return text, named
    return f"rank {rank}: {text}", rank


# how long the ranks of an agreed error wait for each other to have said and marked it
AGREED_WAIT_S = 60


def _fail(comm, exc):
    """One line naming the failing rank, then the whole job ends (no rank left waiting). An
    error every rank raised together (a RankError) ends without MPI_Abort: every rank exits
    once all have marked the run, so the rank that says it is never stopped halfway."""
    from dlio_mpi.run import collective

    line, by = _error_line(comm.Get_rank(), exc)
    if by == comm.Get_rank():
        click.echo(f"dlio_mpi: {line}", err=True)
        sys.stderr.flush()
    if isinstance(exc, collective.RankError) and collective.wait_all(comm, AGREED_WAIT_S):
        sys.exit(1)
    comm.Abort(1)

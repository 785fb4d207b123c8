"""The end of every MPI check script: run its main on every rank; an exception on one rank
prints its traceback and aborts the whole job (the other ranks may wait in a collective call
that would never end), while SystemExit (a scenario's own exit status) passes through."""
import sys
import traceback

from mpi4py import MPI


def run(main):
    try:
        main()
    except SystemExit:
        raise
    except BaseException:
        traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)

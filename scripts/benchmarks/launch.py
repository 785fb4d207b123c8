"""The mpiexec command line the benchmark scripts use (dlio_mpi_analysis.replays.launch's)."""
from dlio_mpi_analysis.replays.launch import mpiexec_command


def mpiexec(n, bind=None):
    """mpiexec -n N with Open MPI's flags for more ranks than cores and for root; bind "core",
    "none" or None (the library's default): see dlio_mpi_analysis.replays.launch.mpiexec_command."""
    return mpiexec_command(n, bind=bind)

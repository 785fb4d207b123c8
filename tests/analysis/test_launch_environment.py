"""A job launched by the analysis (replay, paper) from a process that initialized MPI itself (a
test, a notebook that imported the engines) does not inherit what marks that process a part of
an MPI job: its mpiexec would otherwise take itself for a part of that job and exit 1 silently."""
from dlio_mpi_analysis.replays.launch import _process_environment, launch_environment
import pytest

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec


def test_a_process_that_initialized_mpi_launches_a_job_of_its_own(monkeypatch):
    from dlio_mpi import engines       # noqa: F401 - initializes MPI in this process

    monkeypatch.setenv("OMPI_MCA_io", "romio321")          # the user's own setting
    env = _process_environment()
    assert any(k.startswith("PMIX_") for k in env)          # MPI_Init put them there
    launched = launch_environment(env)
    assert not [k for k in launched if k.startswith(("PMIX_", "OMPI_MCA_ess", "OMPI_MCA_orte_",
                                                     "OMPI_APP_CTX_"))]
    assert launched["OMPI_MCA_io"] == "romio321" and launched["PATH"] == env["PATH"]

"""MPI-IO and HDF5 engines under mpiexec at 1, 2 and 4 ranks, with Open MPI's default MPI-IO
component and with ROMIO (where collective buffering is checked to be really collective)."""
import pytest

from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec


@pytest.mark.parametrize("io", ["default", "romio321"])
@pytest.mark.parametrize("n", [1, 2, 4])
def test_engines_under_mpiexec(tmp_path, n, io):
    env = {} if io == "default" else {"OMPI_MCA_io": io}
    p = run_mpi(n, "check_engines.py", tmp_path, env=env, timeout=180)
    for r in range(n):
        assert f"rank {r}: ok" in p.stdout, p.stdout[-3000:]
        if io == "romio321" and n > 1:
            assert f"rank {r}: collective verified" in p.stdout

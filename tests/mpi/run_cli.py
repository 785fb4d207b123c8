"""python -m dlio_mpi, as a script for tests/mpirun.py."""
from dlio_mpi.cli import main

main()

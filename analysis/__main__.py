"""python -m dlio_mpi_analysis: the analysis command line (see analysis/cli.py)."""
from dlio_mpi_analysis.cli import analyze

analyze(prog_name="python -m dlio_mpi_analysis")

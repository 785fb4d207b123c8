"""python -m analysis: the analysis command line (see analysis/cli.py)."""
from analysis.cli import analyze

analyze(prog_name="python -m analysis")

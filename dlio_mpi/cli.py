"""Command line: python -m dlio_mpi COMMAND."""
import sys

import click

from dlio_mpi import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dlio_mpi")
def main():
    """Emulate the I/O of data-parallel deep-learning training on real storage, with MPI.

    Run under mpiexec: every rank behaves, towards the storage, like one training process."""


@main.command()
@click.argument("directory", default=".", type=click.Path(file_okay=False))
def info(directory):
    """Show the MPI library, its MPI-IO component, HDF5, and O_DIRECT support of DIRECTORY."""
    from dlio_mpi import sysinfo

    for key, value in sysinfo.describe(directory).items():
        click.echo(f"{key:>18}: {value}")


if __name__ == "__main__":
    sys.exit(main())

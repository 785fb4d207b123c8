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


@main.command(context_settings={"ignore_unknown_options": True})
@click.argument("overrides", nargs=-1)
def run(overrides):
    """Run the training emulation on every rank: OVERRIDES are key=value (e.g. num_files=64
    interface=mpiio_coll data_dir=/scratch/d). A missing dataset is generated first; the summary
    goes to output_dir/summary.json."""
    from dlio_mpi import config

    try:
        cfg = config.build(config.parse_overrides(overrides))
    except config.ConfigError as e:
        click.echo(f"dlio_mpi: config error: {e}", err=True)
        sys.exit(2)
    from mpi4py import MPI

    from dlio_mpi import runner

    comm = MPI.COMM_WORLD
    try:
        summary = runner.run(cfg, comm)
    except config.ConfigError as e:
        if comm.Get_rank() == 0:
            click.echo(f"dlio_mpi: config error: {e}", err=True)
        sys.exit(2)
    except Exception as e:  # one line, every rank agrees or the job is aborted
        click.echo(f"dlio_mpi: error: {e}", err=True)
        comm.Abort(1)
    if comm.Get_rank() == 0:
        click.echo(runner.format_summary(summary))
        click.echo(f"summary: {cfg.output_dir}/summary.json")


if __name__ == "__main__":
    sys.exit(main())

"""Command line: python -m dlio_mpi COMMAND (run it under mpiexec for more than one rank)."""
import os
import sys
import time

import click

from dlio_mpi import __version__
from dlio_mpi.run.exits import (AU_FAIL, CONFIG_ERROR, Interrupted,  # noqa: F401
                            _error_line, _fail, _stop_on_signals)


class _Commands(click.Group):
    """Commands, with `analyze` (analysis/, pandas and PyDarshan), `advise` and `acceptance`
    imported only when used, so that a run's start-up does not pay for them."""

    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | {"analyze", "advise", "acceptance"})

    def get_command(self, ctx, name):
        if name == "analyze":
            from dlio_mpi_analysis.cli import analyze
            return analyze
        if name == "advise":
            from dlio_mpi.advise.command import advise_cmd
            return advise_cmd
        if name == "acceptance":
            from dlio_mpi.acceptance.command import acceptance
            return acceptance
        return super().get_command(ctx, name)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dlio_mpi")
def main():
    """Emulate the I/O of data-parallel deep-learning training on real storage, with MPI.

    Run under mpiexec: every rank behaves, towards the storage, like one training process."""


# the rank number launchers give each process (Open MPI, PMIx, MPICH's Hydra, Slurm, MVAPICH)
_RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID",
              "MV2_COMM_WORLD_RANK")


def _say_once(line):
    """A line every rank would print before MPI starts (a bad configuration): said by the
    first rank only, as its launcher numbers it (or by a process started alone)."""
    rank = next((os.environ[v] for v in _RANK_VARS if v in os.environ), "0")
    if rank.strip() == "0":
        click.echo(line, err=True)


def _load(overrides, config_file):
    from dlio_mpi.config import loader as config

    hydra = click.get_current_context().meta
    config_dir, config_name = hydra.get("config_dir"), hydra.get("config_name")
    try:
        if not config_file and not config_name and not any(
                o.split("=", 1)[0].lstrip("+") == "workload" for o in overrides):
            overrides = ("workload=default",) + tuple(overrides)
        return config.load(overrides, config_file=config_file, config_dir=config_dir,
                           config_name=config_name)
    except config.ConfigError as e:
        _say_once(f"dlio_mpi: config error: {e}")
        sys.exit(CONFIG_ERROR)


def _keep_in_meta(ctx, param, value):
    ctx.meta[param.name] = value
    return value


def config_option(f):
    f = click.option("--config-name", "config_name", expose_value=False, callback=_keep_in_meta,
                     metavar="NAME", help="as the DLIO benchmark's (Hydra's): the primary "
                     "config NAME.yaml in --config-dir, naming its workload")(f)
    f = click.option("--config-dir", "config_dir", expose_value=False, callback=_keep_in_meta,
                     type=click.Path(file_okay=False), metavar="DIR",
                     help="as the DLIO benchmark's (Hydra's): workload=NAME reads "
                     "DIR/workload/NAME.yaml")(f)
    return click.option("--config", "config_file", type=click.Path(dir_okay=False),
                        help="a workload YAML file (the DLIO benchmark's and MLPerf Storage's "
                        "load unchanged); overrides apply on top")(f)


def _refuse_protected_folders(cfg, checkpoints):
    """generate and run write into no folder that clean would refuse to remove files from."""
    from dlio_mpi.files import protected_folders

    line = protected_folders.writing_refusal(cfg, checkpoints)
    if line:
        _say_once(f"dlio_mpi: config error: {line}")
        sys.exit(CONFIG_ERROR)


def darshan_options(f):
    f = click.option("--darshan", is_flag=True,
                     help="run under Darshan (libdarshan.so preloaded in every rank)")(f)
    f = click.option("--dxt", is_flag=True, help="with --darshan: DXT tracing")(f)
    f = click.option("--darshan-modmem", type=int, default=0, metavar="MIB",
                     help="with --darshan: module memory for long runs")(f)
    f = click.option("--darshan-nonmpi", is_flag=True,
                     help="with --darshan: non-MPI mode, one log per process")(f)
    return f


def verbosity_options(f):
    f = click.option("-v", "--verbose", count=True,
                     help="more lines while it runs (debug)")(f)
    return click.option("-q", "--quiet", count=True,
                        help="no progress lines, warnings and results only")(f)


def _say_progress(comm, verbose, quiet):
    from dlio_mpi.run import progress

    progress.setup(comm.Get_rank(), verbose - quiet)


def _under_darshan(cfg, darshan, dxt, modmem, nonmpi):
    """With --darshan, re-execute this process under Darshan before MPI starts."""
    from dlio_mpi.run import darshan as dm

    if not darshan or dm.active_log():
        return
    try:
        env = dm.prepare(cfg, dxt=dxt, modmem_mib=modmem, nonmpi=nonmpi)
    except dm.DarshanNotFound as e:
        _say_once(f"dlio_mpi: --darshan: {e}")
        sys.exit(CONFIG_ERROR)
    except OSError as e:
        _say_once(f"dlio_mpi: --darshan: cannot write {cfg.output.folder}: {e.strerror}")
        sys.exit(CONFIG_ERROR)
    dm.reexec(env, sys.argv[1:])


def _say_missing_darshan_log(rank):
    """Under Darshan in MPI mode the log is written at MPI_Finalize, after the summary: MPI is
    finalized here so that rank 0 can say in one line when no log appeared."""
    from dlio_mpi.run import darshan as dm

    log = dm.active_log()
    if not log or os.environ.get("DARSHAN_ENABLE_NONMPI"):
        return          # not under Darshan, or one log per process, written at its exit
    from mpi4py import MPI

    if not MPI.Is_finalized():
        MPI.Finalize()
    line = dm.missing_log_line(log) if rank == 0 else None
    if line:
        click.echo(f"dlio_mpi: {line}", err=True)


@main.command(context_settings={"ignore_unknown_options": True})
@click.argument("overrides", nargs=-1)
@config_option
@darshan_options
@verbosity_options
def run(overrides, config_file, darshan, dxt, darshan_modmem, darshan_nonmpi, verbose, quiet):
    """Run the training emulation on every rank.

    OVERRIDES are workload=NAME and section.key=value (dataset.num_files_train=64,
    io.interface=mpiio_coll, io.mpiio_hints.cb_nodes=4, ...). A missing or partial dataset
    is generated first only when workflow.generate_data=true (the default workload and the
    shipped ones set it); otherwise it is an error (python -m dlio_mpi generate makes it).
    Each run's results go to a folder of their own in output.folder (output.folder/latest/
    summary.json for the newest), with the run's log."""
    cfg = _load(overrides, config_file)
    _refuse_protected_folders(cfg, cfg.workflow.checkpoint)
    _under_darshan(cfg, darshan, dxt, darshan_modmem, darshan_nonmpi)
    from mpi4py import MPI

    started_ns = time.monotonic_ns()        # MPI_Init is done: where Darshan's job starts
    from dlio_mpi.run import collective
    from dlio_mpi.config import loader as config
    from dlio_mpi.run import job as runner
    from dlio_mpi.run import status as run_status

    comm = MPI.COMM_WORLD
    _stop_on_signals()
    _say_progress(comm, verbose, quiet)
    try:
        summary = runner.run(cfg, comm, job_start_ns=started_ns, overrides=overrides)
    except config.ConfigError as e:
        run_status.mark_stopped(cfg, "failed", str(e))
        if comm.Get_rank() == 0:
            click.echo(f"dlio_mpi: config error: {e}", err=True)
        sys.exit(CONFIG_ERROR)
    except Interrupted as e:
        # one line for the job, from rank 0 (the launcher signals every rank); a rank on rank
        # 0's host whose process is gone died, and the launcher is ending the job
        from dlio_mpi.run import rank_deaths

        dead = rank_deaths.dead_ranks() if comm.Get_rank() == 0 else []
        why = f"{rank_deaths.describe(dead)}; the launcher ended the job ({e})" if dead \
            else str(e)
        marked = run_status.mark_stopped(cfg, "interrupted", why, rank=comm.Get_rank())
        if marked == "failed":
            click.echo(f"dlio_mpi: rank {comm.Get_rank()}: stopped by {e} after another rank "
                       "failed; the run is marked failed", err=True)
        elif marked or comm.Get_rank() == 0:
            after = f" after {rank_deaths.describe(dead)}" if dead else ""
            click.echo(f"dlio_mpi: rank {comm.Get_rank()}: stopped by {e}{after}; the run is "
                       "marked interrupted", err=True)
        sys.exit(128 + e.signum)
    except Exception as e:
        rank = comm.Get_rank()
        line, by = _error_line(rank, e)
        # an error of one rank: that rank marks the run, as rank 0 may be ended before it
        # can; an error every rank raised: rank 0 marks it (and the job ends without Abort)
        agreed = isinstance(e, collective.RankError)
        run_status.mark_stopped(cfg, "failed", line,
                                 rank=rank if by == rank and not agreed else None)
        _fail(comm, e)
    if comm.Get_rank() == 0:
        from dlio_mpi.run.metrics import format_summary
        from dlio_mpi.run.outputs import LATEST
        click.echo(format_summary(summary))
        click.echo(f"summary: {cfg.output.folder}/{LATEST}/summary.json")
    _say_missing_darshan_log(comm.Get_rank())
    if cfg.io.fail_below_au and summary["metric"]["train_au_meet_expectation"] != "success":
        sys.exit(AU_FAIL)


@main.command(context_settings={"ignore_unknown_options": True})
@click.argument("overrides", nargs=-1)
@config_option
@darshan_options
@verbosity_options
def generate(overrides, config_file, darshan, dxt, darshan_modmem, darshan_nonmpi, verbose,
             quiet):
    """Generate the dataset of a workload (in parallel over the ranks) and stop."""
    cfg = _load(overrides, config_file)
    _refuse_protected_folders(cfg, False)
    _under_darshan(cfg, darshan, dxt, darshan_modmem, darshan_nonmpi)
    from mpi4py import MPI

    from dlio_mpi.data import generation as datagen

    comm = MPI.COMM_WORLD
    _say_progress(comm, verbose, quiet)
    _stop_on_signals()
    try:
        n = comm.allreduce(datagen.generate(cfg, comm, say=True))
    except Interrupted as e:
        # one line for the job, from rank 0 (the launcher signals every rank); the files
        # written so far stay, whole or under .part names, and the manifest, if written,
        # says in progress: a run refuses the dataset, clean removes it
        if comm.Get_rank() == 0:
            click.echo(f"dlio_mpi: rank 0: stopped by {e}; the generation of "
                       f"{cfg.dataset.data_folder} did not finish (clean removes it, generate "
                       "completes it)", err=True)
        sys.exit(128 + e.signum)
    except Exception as e:
        _fail(comm, e)
    if comm.Get_rank() == 0:
        click.echo(f"{n} files written, {cfg.dataset.num_files_train - n} already complete, "
                   f"in {cfg.dataset.data_folder}")
    _say_missing_darshan_log(comm.Get_rank())


@main.command(context_settings={"ignore_unknown_options": True})
@click.argument("overrides", nargs=-1)
@config_option
@click.option("--dry-run", is_flag=True, help="count what would be removed, remove nothing")
def clean(overrides, config_file, dry_run):
    """Remove a workload's dataset (the files its manifest describes, also a partial one) and
    the checkpoints its runs recorded, and nothing else; refuses /, home and system
    directories and any path that resolves outside the data or checkpoint folder. Run it
    without mpiexec."""
    from dlio_mpi.data import clean as cl

    cfg = _load(overrides, config_file)
    try:
        n, nbytes, notes = cl.clean(cfg, dry_run=dry_run)
    except cl.RefusedPath as e:
        click.echo(f"dlio_mpi: clean: {e}", err=True)
        sys.exit(CONFIG_ERROR)
    except OSError as e:
        click.echo(f"dlio_mpi: clean: {e.filename}: {e.strerror}", err=True)
        sys.exit(1)
    verb = "would remove" if dry_run else "removed"
    click.echo(f"{verb} {n} files ({nbytes} bytes)")
    for note in notes:
        click.echo(f"dlio_mpi: clean: {note}", err=True)


@main.group()
def workloads():
    """The shipped workloads."""


@workloads.command("list")
def workloads_list():
    """A line per shipped workload: its name, what it stands for, its size as shipped, and
    the overrides that shrink it to a laptop's size."""
    from dlio_mpi.config import workload_catalog

    for line in workload_catalog.lines():
        click.echo(line)


@workloads.command("show")
@click.argument("name")
def workloads_show(name):
    """A shipped workload's YAML."""
    from dlio_mpi.config import loader as config

    try:
        with open(config.workload_path(name)) as f:
            text = f.read()
        click.echo(text, nl=not text.endswith("\n"))
    except config.ConfigError as e:
        click.echo(f"dlio_mpi: {e}", err=True)
        sys.exit(CONFIG_ERROR)


@workloads.command("check", context_settings={"ignore_unknown_options": True})
@click.argument("file", type=click.Path(dir_okay=False))
@click.argument("overrides", nargs=-1)
@click.option("--ranks", type=click.IntRange(min=1), default=None,
              help="also check what depends on the job's size, for this many ranks")
def workloads_check(file, overrides, ranks):
    """Check a workload file (with overrides on top) without any I/O: one line per problem
    on stderr and exit status 2, or a line saying it loads and what is not emulated."""
    from dlio_mpi.config import workload_check

    found, cfg = workload_check.problems(file, overrides, ranks)
    for line in found:
        click.echo(f"dlio_mpi: {line}", err=True)
    if found:
        sys.exit(CONFIG_ERROR)
    skipped = ", ".join(cfg.not_emulated) or "none"
    click.echo(f"{file}: loads; format {cfg.dataset.format}, {cfg.dataset.num_files_train} "
               f"training files; not emulated: {skipped}")


@main.command("darshan-env", context_settings={"ignore_unknown_options": True})
@click.argument("overrides", nargs=-1)
@config_option
@click.option("--launcher", type=click.Choice(["openmpi", "mpich", "srun"]), default="openmpi",
              help="whose option syntax to print: Open MPI's mpiexec (-x), MPICH's mpiexec "
              "(-genv) or Slurm's srun (--export)")
@click.option("--dxt", is_flag=True, help="DXT tracing (every read and write traced)")
@click.option("--darshan-modmem", type=int, default=0, metavar="MIB",
              help="module memory for long runs (MiB)")
def darshan_env(overrides, config_file, launcher, dxt, darshan_modmem):
    """Print the launcher options that put a run under Darshan (instead of run --darshan),
    and write the Darshan config file they name into output.folder. Give the run the same
    OVERRIDES: mpiexec $(python -m dlio_mpi darshan-env OVERRIDES) -n N python -m dlio_mpi
    run OVERRIDES. The options go to stdout, what was written and how to use it to stderr."""
    from dlio_mpi.run import darshan as dm

    cfg = _load(overrides, config_file)
    try:
        env = dm.prepare(cfg, dxt=dxt, modmem_mib=darshan_modmem)
    except dm.DarshanNotFound as e:
        click.echo(f"dlio_mpi: {e}", err=True)
        sys.exit(CONFIG_ERROR)
    except OSError as e:
        click.echo(f"dlio_mpi: darshan-env: cannot write {cfg.output.folder}: {e.strerror}",
                   err=True)
        sys.exit(CONFIG_ERROR)
    click.echo(dm.launcher_flags(env, launcher))
    for line in dm.usage_lines(env, launcher, overrides, config_file):
        click.echo(f"darshan-env: {line}", err=True)


@main.command()
@click.argument("directory", type=click.Path(file_okay=False))
def status(directory):
    """Say whether the run in output folder DIRECTORY completed, failed, was interrupted, is
    running, or died while marked running (its rank 0 is gone). Exit status 0 when it
    completed or is running, 1 otherwise."""
    from dlio_mpi.run import outputs

    line = outputs.describe(directory)
    click.echo(line)
    state = line[len(directory) + 2:]
    sys.exit(0 if state.startswith("complete") or (state.startswith("running")
                                                    and "the run died" not in state) else 1)


@main.command()
@click.argument("directory", default=".", type=click.Path(file_okay=False))
def info(directory):
    """Show the MPI library, its MPI-IO component, HDF5, and O_DIRECT support of DIRECTORY."""
    from dlio_mpi.run import sysinfo

    for key, value in sysinfo.describe(directory).items():
        click.echo(f"{key:>18}: {value}")


if __name__ == "__main__":
    main()

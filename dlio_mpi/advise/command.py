"""python -m dlio_mpi advise: the command line (run it under mpiexec like ``run``)."""

import sys

import click

from dlio_mpi.config.option_types import FiniteFloatRange

ADVISE_ERROR = 1


def _split(args):
    """(source or None, overrides): the one argument without '=' is the source."""
    sources = [a for a in args if "=" not in a]
    if len(sources) > 1:
        raise click.UsageError(f"one log or run directory at most, got {', '.join(sources)}")
    return (sources[0] if sources else None), tuple(a for a in args if "=" in a)


@click.command("advise", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1)
@click.option("--config", "config_file", type=click.Path(dir_okay=False),
              help="a workload YAML to start from")
@click.option("--out", "out_dir", default="./dlio_advise", show_default=True,
              help="runs, datasets made for the changes, the report and winner.yaml")
@click.option("--budget", type=FiniteFloatRange(min=1.0), default=900.0, show_default=True,
              metavar="SECONDS", help="time for the whole study, from start to report")
@click.option("--cold", is_flag=True,
              help="evict the dataset from the page cache before every run")
@click.option("--keep-data", is_flag=True,
              help="keep the datasets generated for changes of the dataset")
@click.option("--quiet", is_flag=True, help="no progress lines on stderr")
@click.option("--paper", is_flag=True,
              help="the DLIO paper's optimization study on its six applications, scaled down")
@click.option("--apps", default=None, metavar="A,B",
              help="with --paper: the applications (default: the four the paper optimized)")
@click.option("--io-share", type=FiniteFloatRange(0.001, 0.999), default=None,
              help="with --paper: I/O's share of the run time the compute is calibrated to "
                   "(default: the real application's)")
def advise_cmd(args, config_file, out_dir, budget, cold, keep_data, quiet, paper, apps,
               io_share):
    """Find what slows a workload's I/O and measure the changes that remove it.

    ARGS: a Darshan log, a dlio_mpi run directory, or workload=NAME, then section.key=value
    overrides. Every change is measured on the storage (rounds against the baseline, within
    --budget); the winner is written as a ready-to-run workload. The last line is one JSON
    object: baseline, recommendations (change, evidence, speedup, spread), winner."""
    from dlio_mpi.run.exits import CONFIG_ERROR, Interrupted, _fail, _stop_on_signals

    source, overrides = _split(args)
    from mpi4py import MPI

    from dlio_mpi.run import collective
    from dlio_mpi.config import loader as config
    from dlio_mpi.advise.measure import AdviseError, echo_progress

    echo = None if quiet else echo_progress
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    _stop_on_signals()
    try:
        if paper:
            from dlio_mpi.advise.paper import advise_paper, render_paper
            study = advise_paper(comm, out_dir, budget, apps=apps.split(",") if apps else None,
                                 cold=cold, echo=echo, io_share=io_share)
            if rank == 0:
                import json
                click.echo(render_paper(study))
                click.echo(json.dumps(study, separators=(",", ":"), default=str))
            return
        from dlio_mpi.advise.study import advise
        result = advise(comm, source, overrides, config_file, out_dir, budget, cold=cold,
                        keep_data=keep_data, echo=echo)
    except config.ConfigError as e:
        if rank == 0:
            click.echo(f"dlio_mpi: advise: config error: {e}", err=True)
        sys.exit(CONFIG_ERROR)
    except AdviseError as e:
        if rank == 0:
            click.echo(f"dlio_mpi: advise: {e}", err=True)
        sys.exit(ADVISE_ERROR)
    except Interrupted as e:
        if rank == 0:
            click.echo(f"dlio_mpi: advise: stopped by {e}", err=True)
        sys.exit(128 + e.signum)
    except collective.RankError as e:
        _fail(comm, e)
    except Exception as e:          # noqa: BLE001 - one line, and no rank left waiting
        _fail(comm, e)
    if rank == 0:
        from dlio_mpi_analysis.diagnosis.advice_report import render_text, summary_line, write_advice
        paths = write_advice(result, out_dir)
        click.echo(render_text(result), nl=False)
        click.echo(f"report: {paths['md']}, {paths['html']}, {paths['json']}")
        click.echo(summary_line(result))

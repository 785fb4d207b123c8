"""Command line of the analysis: the click group ``analyze``.

    python -m dlio_mpi_analysis.cli characterize PATH...        (or: python -m dlio_mpi_analysis ...)
    python -m dlio_mpi_analysis.cli diagnose PATH [--threshold NAME=VALUE ...]
    python -m dlio_mpi_analysis.cli compare PATH PATH...
    python -m dlio_mpi_analysis.cli fit PATH -o workload.yaml
    python -m dlio_mpi_analysis.cli report PATH -o DIR
    python -m dlio_mpi_analysis.cli paper --out DIR [--ranks 2]
    python -m dlio_mpi_analysis.cli replay LOG --out DIR [--ranks N]

A PATH is a Darshan log, a directory of one job's Darshan logs, or a dlio_mpi run directory
(summary.json + op logs); a directory of several jobs' logs is refused, naming the jobs, unless
``--merge-jobs`` reads them as one job. Text by default; ``--json`` prints JSON instead. A file that cannot
be read ends the command with one line on stderr and exit status 1; the analysis' warnings
about a log's contents are printed on stderr as ``analyze: warning: ...`` lines.
"""

import contextlib
import json
import sys
import warnings

import click

ERROR = 1
USAGE = 2       # a request that cannot be met as given


@contextlib.contextmanager
def _reported():
    """Analysis errors as one line and exit status 1; warnings as stderr lines."""
    from dlio_mpi_analysis.errors import AnalysisWarning, FitError, LogError
    from dlio_mpi_analysis.replays.launch import Interrupted, LaunchError
    from dlio_mpi_analysis.replays.replay_size import ReplaySizeError

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", AnalysisWarning)
        try:
            yield
        except Interrupted as error:        # its job ended; the shell's status for a signal
            _flush(caught)
            click.echo(f"analyze: {error}", err=True)
            sys.exit(128 + error.signum)
        except ReplaySizeError as error:    # the line says it all, numbers included
            _flush(caught)
            click.echo(f"analyze: {error}", err=True)
            sys.exit(USAGE)
        except (LogError, FitError, LaunchError, OSError) as error:
            _flush(caught)
            if isinstance(error, OSError) and error.filename and error.strerror:
                error = f"{error.filename}: {error.strerror}"
            click.echo(f"analyze: {error}", err=True)
            sys.exit(ERROR)
    _flush(caught)


def _flush(caught):
    for w in caught:
        click.echo(f"analyze: warning: {w.message}", err=True)
    caught.clear()


def merge_jobs_option(f):
    return click.option("--merge-jobs", is_flag=True,
                        help="read a directory holding several jobs' Darshan logs as one job "
                             "(refused otherwise)")(f)


def _source(path, dxt, merge_jobs):
    """What the analysis reads for PATH: the path itself, or with --merge-jobs the job loaded
    from all the logs it holds."""
    from dlio_mpi_analysis.loading.oplog import is_run_dir

    if not merge_jobs or is_run_dir(path):
        return path
    from dlio_mpi_analysis.loading.loader import load
    return load(path, dxt=dxt, merge_jobs=True)


def _dump(data):
    click.echo(json.dumps(data, indent=2, default=_json_default))


def _json_default(value):
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


@click.group(name="analyze", context_settings={"help_option_names": ["-h", "--help"]})
def analyze():
    """Characterize, compare, fit and report the I/O of Darshan logs and dlio_mpi runs.

    A PATH is a Darshan log, a directory of one job's logs, or a dlio_mpi run directory
    (summary.json and the op logs of io.keep_oplog=true)."""


@analyze.command("characterize")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--dxt/--no-dxt", default=True, show_default=True,
              help="read Darshan's DXT traces (a run directory always has its traces)")
@click.option("--json", "as_json", is_flag=True,
              help="JSON: one object, or an array of them for several PATHs")
@merge_jobs_option
def characterize_cmd(paths, dxt, as_json, merge_jobs):
    """The DLIO paper's I/O characterization of each PATH (each one job)."""
    from dlio_mpi_analysis.characterization.characterize import characterize
    from dlio_mpi_analysis.characterization.text import render_text

    with _reported():
        results = [characterize(_source(path, dxt, merge_jobs), dxt=dxt) for path in paths]
    if as_json:
        data = [r.to_dict() for r in results]
        _dump(data[0] if len(data) == 1 else data)
    else:
        click.echo("\n".join(render_text(r) for r in results), nl=False)


@analyze.command("diagnose")
@click.argument("path", type=click.Path(exists=True))
@click.option("--threshold", "thresholds", multiple=True, metavar="NAME=VALUE",
              help="a rule's threshold (repeatable; docs/diagnose.md lists them)")
@click.option("--dxt/--no-dxt", default=True, show_default=True,
              help="read Darshan's DXT traces (the training rules need them)")
@click.option("--json", "as_json", is_flag=True,
              help="JSON: the findings, each with its stable id, and the thresholds")
def diagnose_cmd(path, thresholds, dxt, as_json):
    """What is wrong with the I/O of PATH: findings, most severe first, each with its evidence
    and the workload change advise would measure for it."""
    from dlio_mpi_analysis.diagnosis.diagnosis_report import diagnose_path, render_diagnosis
    from dlio_mpi_analysis.diagnosis.finding_kinds import Thresholds

    try:
        limits = Thresholds().with_values(thresholds)
    except ValueError as error:
        click.echo(f"analyze: diagnose: {error}", err=True)
        sys.exit(USAGE)
    with _reported():
        result = diagnose_path(path, limits, dxt=dxt)
    if as_json:
        _dump(result)
    else:
        click.echo(render_diagnosis(result), nl=False)


@analyze.command("compare")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--label", "labels", multiple=True, help="a name per PATH, in order")
@click.option("--dxt/--no-dxt", default=True, show_default=True,
              help="use the DXT trace where a log holds one (transfer sizes, timeline)")
@click.option("--json", "as_json", is_flag=True,
              help="the comparison as one JSON object instead of the table")
@merge_jobs_option
def compare_cmd(paths, labels, dxt, as_json, merge_jobs):
    """Jobs side by side, with a similarity score in [0, 1] of each to the first."""
    from dlio_mpi_analysis.comparison.compare import compare, render_comparison

    if len(paths) < 2:
        raise click.UsageError("compare needs at least two PATHs")
    if labels and len(labels) != len(paths):
        raise click.UsageError(f"{len(labels)} --label for {len(paths)} PATHs")
    with _reported():
        result = compare([_source(path, dxt, merge_jobs) for path in paths],
                         labels=labels or None, dxt=dxt)
    if as_json:
        _dump(result.to_dict())
    else:
        click.echo(render_comparison(result), nl=False)


@analyze.command("fit")
@click.argument("path", type=click.Path(exists=True))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="the workload YAML to write")
@click.option("--data-folder", default="./data/fitted", show_default=True,
              help="dataset.data_folder of the fitted workload")
@click.option("--name", default=None, help="model.name of the fitted workload")
@click.option("--json", "as_json", is_flag=True,
              help="print the fit (workload, evidence, notes) as JSON")
@merge_jobs_option
def fit_cmd(path, output, data_folder, name, as_json, merge_jobs):
    """Fit a dlio_mpi workload to the I/O of PATH and write it as YAML."""
    from dlio_mpi_analysis.fitting.fit import fit

    with _reported():
        result = fit(_source(path, True, merge_jobs), data_folder=data_folder, name=name)
        result.write(output)
    if as_json:
        _dump({**result.to_dict(), "output": output})
    else:
        click.echo(result.to_yaml(), nl=False)
        click.echo(f"# written to {output}")


@analyze.command("replay")
@click.argument("path", type=click.Path(exists=True))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="directory for fitted.yaml, the dataset (data/), the run (run/) and "
                   "replay.json")
@click.option("--ranks", default=None, type=click.IntRange(min=1),
              help="processes (default: the log's)")
@click.option("--mpiexec", "launcher", default=None,
              help="launcher command (default: mpiexec from PATH)")
@click.option("--scale", default=None,
              type=click.FloatRange(min=0, max=1, min_open=True),
              help="shrink the dataset and the bytes read to about this share (files, then "
                   "sample length, then epochs), keeping transfer size, samples per file, "
                   "access order, interface, layout and ranks")
@click.option("--json", "as_json", is_flag=True,
              help="after the report, one JSON object on the last line")
def replay_cmd(path, out_dir, ranks, launcher, scale, as_json):
    """Fit a workload to PATH, run it under mpiexec and compare the run with PATH. A replay
    that would not fit the free space of --out is refused (exit 2) before anything is made."""
    from dlio_mpi_analysis.replays.replay import render_replay, replay

    with _reported():
        result = replay(path, out_dir, ranks=ranks, launcher=launcher, scale=scale,
                        progress=lambda m: click.echo(f"replay: {m}", err=True))
    click.echo(render_replay(result), nl=False)
    if as_json:
        click.echo(json.dumps(result.to_dict(), default=str, separators=(",", ":")))


@analyze.command("report")
@click.argument("path", type=click.Path(exists=True))
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="directory for report.md, report.html and the PNG figures")
@click.option("--dxt/--no-dxt", default=True, show_default=True,
              help="use the DXT trace where a log holds one (timeline, bandwidth over time)")
@click.option("--json", "as_json", is_flag=True,
              help="the files written as one JSON object instead of a line each")
@merge_jobs_option
def report_cmd(path, out_dir, dxt, as_json, merge_jobs):
    """Markdown and a self-contained HTML report with figures."""
    from dlio_mpi_analysis.reporting.report import write_report

    with _reported():
        files = write_report(_source(path, dxt, merge_jobs), out_dir, dxt=dxt)
    if as_json:
        _dump({"markdown": files.markdown, "html": files.html, "figures": files.figures})
    else:
        click.echo(f"{files.markdown}\n{files.html}")
        for figure in files.figures.values():
            click.echo(figure)


@analyze.command("paper")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="directory for the runs (data/, runs/) and paper.txt, paper.json")
@click.option("--ranks", default=2, show_default=True, type=click.IntRange(min=1),
              help="ranks each scaled-down application runs on")
@click.option("--mpiexec", "launcher", default=None,
              help="launcher command (default: mpiexec from PATH)")
@click.option("--calibrate/--no-calibrate", default=True, show_default=True,
              help="probe each application's I/O time per step on this storage and set its "
                   "compute so that the I/O share is the real application's")
@click.option("--app", "apps", multiple=True, help="only these applications (repeatable)")
@click.option("--json", "as_json", is_flag=True,
              help="after the table, one JSON object on the last line: application -> "
                   "io_share, files, xfer_mean, xfer_median, seq, consec")
def paper_cmd(out_dir, ranks, launcher, calibrate, apps, as_json):
    """The DLIO paper's six applications, scaled down, run, characterized and set beside the
    real applications' Darshan figures."""
    from dlio_mpi_analysis.paper_study.paper import APPS, render_paper, run_paper, summary_line, write_paper

    unknown = [a for a in apps if a not in APPS]
    if unknown:
        click.echo(f"analyze: unknown application {unknown[0]!r} (one of {', '.join(APPS)})",
                   err=True)
        sys.exit(2)
    with _reported():
        study = run_paper(out_dir, ranks=ranks, launcher=launcher, calibrate=calibrate,
                          apps=tuple(apps) or APPS,
                          progress=lambda m: click.echo(f"paper: {m}", err=True))
        write_paper(study, out_dir)
    click.echo(render_paper(study), nl=False)
    if as_json:
        click.echo(summary_line(study))


if __name__ == "__main__":
    analyze()

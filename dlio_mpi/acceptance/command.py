"""python -m dlio_mpi acceptance: datasize, datagen, run, search, checkpoint, report."""
import json
import sys

import click

from dlio_mpi.acceptance import rules
from dlio_mpi.run.exits import AU_FAIL, CONFIG_ERROR, Interrupted, _fail, _stop_on_signals

GIB = 2**30


def _refuse(line, rank=0):
    """Bad input: one line (from rank 0 under mpiexec), exit 2."""
    if rank == 0:
        click.echo(f"dlio_mpi: acceptance: {line}", err=True)
    sys.exit(CONFIG_ERROR)


def _memory_bytes(gib):
    from dlio_mpi.run import sysinfo

    if gib is None:
        return sysinfo.memory_bytes()
    if gib <= 0:
        _refuse(f"--host-memory-gib {gib:g}: must be more than 0")
    return int(gib * GIB)


def _positive(name, value):
    if value < 1:
        _refuse(f"{name} {value}: must be at least 1")


@click.group()
def acceptance():
    """Storage acceptance as MLPerf Storage defines it: size the dataset (datasize), make it
    once (datagen), then a warm-up and five runs judged against the workload's AU threshold
    and the rules (run), the most accelerators a host sustains (search). Workloads: unet3d,
    resnet50, cosmoflow. Checkpointing of the llama3 models: writes, the page cache dropped,
    reads (checkpoint). HTML and JSON over a results folder (report)."""


overrides_argument = click.argument("overrides", nargs=-1)
results_option = click.option("--results", required=True, type=click.Path(file_okay=False),
                              help="the procedure's results folder (its dataset in data/)")
undersized_option = click.option(
    "--allow-undersized-dataset", is_flag=True,
    help="go on with a dataset under the rules' minimum (reported not compliant)")


@acceptance.command(context_settings={"ignore_unknown_options": True})
@click.argument("workload")
@click.option("--hosts", type=int, default=1, show_default=True, help="client hosts")
@click.option("--accelerators", type=int, required=True,
              help="emulated accelerators over all the hosts (the largest count to be run)")
@click.option("--host-memory-gib", type=float, default=None,
              help="memory of each host, GiB (default: this host's MemTotal)")
@overrides_argument
def datasize(workload, hosts, accelerators, host_memory_gib, overrides):
    """The minimum training dataset by both rules, with the arithmetic; the last line is one
    JSON object (num_files_train, num_subfolders_train, dataset_gib, rule)."""
    from dlio_mpi.acceptance import configs
    from dlio_mpi.acceptance import datasize as sizing

    _positive("--hosts", hosts)
    _positive("--accelerators", accelerators)
    memory = _memory_bytes(host_memory_gib)
    try:
        rules.threshold(workload)
        configs.check_overrides(overrides)
        sizing.check_even(hosts, accelerators)
        cfg = configs.load(configs.base(workload, ".", overrides))
        m = sizing.minimum(record_length=cfg.dataset.record_length,
                           samples_per_file=cfg.dataset.num_samples_per_file,
                           batch_size=cfg.reader.batch_size, hosts=hosts,
                           accelerators=accelerators, host_memory_bytes=hosts * memory)
    except rules.AcceptanceError as e:
        _refuse(str(e))
    for line in sizing.explain(m):
        click.echo(line)
    click.echo(json.dumps(m.as_json()))


def _mpi():
    from mpi4py import MPI

    _stop_on_signals()
    return MPI.COMM_WORLD


def _say(comm, verbose, quiet):
    from dlio_mpi.run import progress

    progress.setup(comm.Get_rank(), verbose - quiet)


def _verbosity(f):
    f = click.option("-v", "--verbose", count=True, help="more lines while it runs")(f)
    return click.option("-q", "--quiet", count=True, help="warnings and results only")(f)


@acceptance.command(context_settings={"ignore_unknown_options": True})
@click.argument("workload")
@results_option
@click.option("--hosts", type=int, default=1, show_default=True,
              help="client hosts the runs will use")
@click.option("--accelerators", type=int, required=True,
              help="emulated accelerators over all the hosts (the largest count to be run)")
@click.option("--host-memory-gib", type=float, default=None,
              help="memory of each host, GiB (default: this host's MemTotal)")
@undersized_option
@_verbosity
@overrides_argument
def datagen(workload, results, hosts, accelerators, host_memory_gib, allow_undersized_dataset,
            verbose, quiet, overrides):
    """Generate the procedure's dataset once, in parallel over the ranks (run it under
    mpiexec; run it again to complete an interrupted generation)."""
    from dlio_mpi.acceptance import generation

    _positive("--hosts", hosts)
    _positive("--accelerators", accelerators)
    memory = _memory_bytes(host_memory_gib)
    comm = _mpi()
    _say(comm, verbose, quiet)
    try:
        written, before, cfg, m = generation.generate(
            workload, results, overrides, comm, hosts=hosts, accelerators=accelerators,
            host_memory_bytes=hosts * memory, allow_undersized=allow_undersized_dataset)
    except rules.AcceptanceError as e:
        _refuse(str(e), comm.Get_rank())
    except Interrupted as e:
        if comm.Get_rank() == 0:
            click.echo(f"dlio_mpi: acceptance: datagen stopped by {e}; run it again to "
                       "complete the dataset", err=True)
        sys.exit(128 + e.signum)
    except Exception as e:
        _fail(comm, e)
    if comm.Get_rank() == 0:
        click.echo(f"{written} files written, {before} already complete, in "
                   f"{cfg.dataset.data_folder} (rules' minimum {m.num_files_train} files: "
                   f"{m.rule})")


@acceptance.command(context_settings={"ignore_unknown_options": True})
@click.argument("workload")
@results_option
@click.option("--runs", type=int, default=rules.RUNS, show_default=True,
              help="measured runs after the warm-up")
@click.option("--allow-fewer-runs", is_flag=True,
              help=f"allow --runs under {rules.RUNS} (reported not compliant)")
@undersized_option
@click.option("--seed", type=int, default=None,
              help="train.seed of the warm-up (run i: seed + i; default: the workload's)")
@_verbosity
@overrides_argument
def run(workload, results, runs, allow_fewer_runs, allow_undersized_dataset, seed, verbose,
        quiet, overrides):
    """The warm-up and the measured runs (run it under mpiexec, one rank per accelerator):
    result.json in results/training/WORKLOAD/run/latest/. Exit status 0 when the mean AU
    meets the workload's threshold, 3 when it does not."""
    from dlio_mpi.acceptance import procedure, result

    comm = _mpi()
    _say(comm, verbose, quiet)
    try:
        doc = procedure.run(workload, results, overrides, comm, runs=runs,
                            allow_undersized=allow_undersized_dataset,
                            allow_fewer_runs=allow_fewer_runs, seed=seed,
                            say=lambda line: click.echo(line))
    except rules.AcceptanceError as e:
        _refuse(str(e), comm.Get_rank())
    except Interrupted as e:
        if comm.Get_rank() == 0 and not getattr(e, "after_failure", False):
            click.echo(f"dlio_mpi: acceptance {workload}: {getattr(e, 'run', 'the procedure')} "
                       f"stopped by {e}; the completed runs are kept", err=True)
        sys.exit(128 + e.signum)
    except Exception as e:
        _fail(comm, e)
    passed = comm.bcast(doc["pass"] if doc else None, root=0)
    if comm.Get_rank() == 0:
        for line in result.lines(doc):
            click.echo(line)
        click.echo(f"result: {doc['folder']}/result.json")
    if not passed:
        sys.exit(AU_FAIL)


@acceptance.command(context_settings={"ignore_unknown_options": True})
@click.argument("model")
@click.option("--mode", type=click.Choice(["default", "subset"]), default="default",
              show_default=True, help="default: every rank of the model's TP x PP x DP "
              "writes its share; subset: the ranks of one host play its first ranks")
@results_option
@click.option("--num-checkpoints", type=int, default=None,
              help="checkpoints written, then read (default: the rules' 10)")
@click.option("--clear-cache", type=click.Choice(["fadvise", "drop_caches"]),
              default="fadvise", show_default=True,
              help="how the written files leave the page cache before the reads")
@_verbosity
@overrides_argument
def checkpoint(model, mode, results, num_checkpoints, clear_cache, verbose, quiet, overrides):
    """Checkpointing of a llama3 model (llama3_8b, llama3_70b, llama3_405b, llama3_1t) as
    MLPerf Storage defines it (run it under mpiexec, one rank per accelerator): the
    checkpoints written with fsync, the page cache dropped, then read back; result.json in
    results/checkpointing/MODEL/latest/."""
    from dlio_mpi.acceptance import checkpointing

    comm = _mpi()
    _say(comm, verbose, quiet)
    try:
        doc = checkpointing.run(model, mode, results, overrides, comm,
                                checkpoints=num_checkpoints, cache=clear_cache,
                                say=lambda line: click.echo(line))
    except rules.AcceptanceError as e:
        _refuse(str(e), comm.Get_rank())
    except Interrupted as e:
        if comm.Get_rank() == 0:
            click.echo(f"dlio_mpi: acceptance {model}: stopped by {e}", err=True)
        sys.exit(128 + e.signum)
    except Exception as e:
        _fail(comm, e)
    if comm.Get_rank() == 0:
        for line in checkpointing.lines(doc):
            click.echo(line)
        click.echo(f"result: {doc['folder']}/result.json")


@acceptance.command(context_settings={"ignore_unknown_options": True})
@click.argument("workload")
@results_option
@click.option("--min", "low", type=int, default=1, show_default=True,
              help="fewest accelerators per host tried")
@click.option("--max", "high", type=int, default=None,
              help="most accelerators per host tried (default: this host's CPUs; inside an "
              "allocation, the fewest processes it has on one host)")
@click.option("--repeats", type=int, default=3, show_default=True,
              help="runs of each count; a majority at or above the AU threshold passes it")
@click.option("--launcher", default=None,
              help="launcher command the runs are started with (default: mpiexec from "
              "PATH), e.g. 'mpiexec --hostfile H --map-by node'")
@click.option("--hosts", type=int, default=1, show_default=True,
              help="client hosts the launcher spreads each run over, the same count on each")
@click.option("--host-memory-gib", type=float, default=None,
              help="memory of each host, GiB, for the dataset's rule (default: this host's "
              "MemTotal)")
@click.option("--inside-allocation", is_flag=True,
              help="run under mpiexec on the whole allocation: each run uses the first N "
              "processes of every host, the others wait")
@click.option("--timeout", type=float, default=3600.0, show_default=True,
              help="seconds a launched run may take before it is ended")
@undersized_option
@click.option("--seed", type=int, default=None,
              help="train.seed of each count's first repeat (repeat k: seed + k - 1)")
@_verbosity
@overrides_argument
def search(workload, results, low, high, repeats, launcher, hosts, host_memory_gib,
           inside_allocation, timeout, allow_undersized_dataset, seed, verbose, quiet,
           overrides):
    """The largest number of emulated accelerators per host whose runs keep the workload's AU
    at or above its threshold, over the dataset datagen made: the count doubled from --min,
    then bisected, each count run --repeats times, a majority deciding. Each run is launched
    with --launcher, or, with --inside-allocation, made of the processes the command started
    on. search.json in results/training/WORKLOAD/search/latest/. Exit status 0 when a count
    passes, 3 when --min does not."""
    from dlio_mpi.acceptance import search as searching

    if inside_allocation:
        given = [name for name, value in (("--launcher", launcher), ("--hosts", hosts != 1),
                                          ("--host-memory-gib", host_memory_gib),
                                          ("--timeout", timeout != 3600.0)) if value]
        if given:
            _refuse(f"{given[0]} is for a launched search: --inside-allocation runs on the "
                    "processes and hosts it was started with")
        _search_inside_allocation(searching, workload, results, low, high, repeats,
                                  allow_undersized_dataset, seed, verbose, quiet, overrides)
        return
    _positive("--hosts", hosts)
    memory = _memory_bytes(host_memory_gib)
    if high is None:
        import os

        high = os.cpu_count() or 1
    try:
        recorded = searching.check_launcher(launcher)
        p = searching.plan(workload, results, overrides, low=low, high=high, repeats=repeats,
                           hosts=hosts, host_memory_bytes=hosts * memory,
                           allow_undersized=allow_undersized_dataset, seed=seed)
    except rules.AcceptanceError as e:
        _refuse(str(e))
    from dlio_mpi_analysis.replays.launch import Interrupted as LaunchInterrupted

    try:
        doc = searching.search(p, searching.launched_runs(p, launcher, timeout),
                               mode="launched", launcher=recorded,
                               say=lambda line: click.echo(line))
    except searching.SearchFailed as e:
        click.echo(f"dlio_mpi: {e}", err=True)
        sys.exit(1)
    except LaunchInterrupted as e:
        click.echo(f"dlio_mpi: acceptance search {workload}: {e}; the counts tried are kept "
                   f"in {p['folder']}/{searching.SEARCH}", err=True)
        sys.exit(128 + e.signum)
    _search_done(doc)
    if not doc["accelerators_per_host"]:
        sys.exit(AU_FAIL)


def _search_inside_allocation(searching, workload, results, low, high, repeats,
                              allow_undersized, seed, verbose, quiet, overrides):
    from dlio_mpi.run import facts as run_facts

    comm = _mpi()
    _say(comm, verbose, quiet)
    rank = comm.Get_rank()
    hosts, fewest, per_host = searching.allocation_hosts(comm)
    memory = sum(h[2] for h in run_facts.host_figures(comm))
    if high is None:
        high = fewest
    error = p = None
    if high > fewest:
        error = (f"--max {high}: the allocation has {fewest} processes on its smallest host "
                 f"({', '.join(f'{name}: {n}' for name, n in per_host)})")
    elif rank == 0:
        try:
            p = searching.plan(workload, results, overrides, low=low, high=high,
                               repeats=repeats, hosts=hosts, host_memory_bytes=memory,
                               allow_undersized=allow_undersized, seed=seed)
        except rules.AcceptanceError as e:
            error = str(e)
    error, p = comm.bcast((error, p), root=0)
    if error:
        _refuse(error, rank)
    try:
        doc = searching.search(p, searching.allocation_runs(p, comm), mode="inside allocation",
                               say=lambda line: click.echo(line), write=rank == 0)
    except Interrupted as e:
        if rank == 0 and not getattr(e, "after_failure", False):
            click.echo(f"dlio_mpi: acceptance search {workload}: {getattr(e, 'run', 'a run')} "
                       f"stopped by {e}; the counts tried are kept", err=True)
        sys.exit(128 + e.signum)
    except Exception as e:
        _fail(comm, e)
    if rank == 0:
        _search_done(doc)
    if not doc["accelerators_per_host"]:
        sys.exit(AU_FAIL)


def _search_done(doc):
    """The answer on the console."""
    n = doc["accelerators_per_host"]
    if n:
        click.echo(f"{doc['workload']}: {n} accelerators per host ({doc['accelerators']} in "
                   f"all) keep the AU at or above {doc['au_threshold_percentage']:g} %"
                   + (" (the most tried: --max)" if doc["at_max"] else ""))
    else:
        click.echo(f"{doc['workload']}: {doc['min_accelerators_per_host']} accelerators per "
                   f"host already fall under the AU threshold of "
                   f"{doc['au_threshold_percentage']:g} %")
    click.echo(f"search: {doc['folder']}/search.json")


@acceptance.command()
@click.argument("results", type=click.Path(file_okay=False))
@click.option("-o", "--output", "out_dir", default=None, type=click.Path(file_okay=False),
              help="folder for report.json, report.html and report_runs.png (default: RESULTS)")
def report(results, out_dir):
    """HTML and JSON over everything in the results folder RESULTS: the system the runs ran
    on, each procedure's rule table, every run's AU and throughput (a figure), the
    accelerators each search found, the checkpoint figures."""
    from dlio_mpi.acceptance import report as gathering
    from dlio_mpi.acceptance import report_page

    try:
        doc = gathering.gather(results)
    except rules.AcceptanceError as e:
        _refuse(str(e))
    try:
        written = report_page.write(doc, out_dir or results)
    except OSError as e:
        click.echo(f"dlio_mpi: acceptance report: {e.filename or out_dir}: {e.strerror}",
                   err=True)
        sys.exit(1)
    for path in written:
        click.echo(path)

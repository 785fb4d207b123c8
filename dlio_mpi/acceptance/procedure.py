"""run: the warm-up and the measured runs of a workload, one after another in one job on the
same ranks, the seed changed for each, each run's outputs kept in its own output folder; then
result.json. Everything the rules can refuse is checked before the first run starts; a run
that fails stops the procedure with the run named, the runs before it kept."""
import collections
import os
import time

from dlio_mpi.run import collective
from dlio_mpi.config import loader as config
from dlio_mpi.run import outputs
from dlio_mpi.run import facts as run_facts
from dlio_mpi.run import job as runner
from dlio_mpi.run import status as run_status
from dlio_mpi.acceptance import compliance, configs, datasize, result, results_folder, rules
from dlio_mpi.acceptance.generation import dataset_config, undersized_line
from dlio_mpi.acceptance.rules import AcceptanceError
from dlio_mpi.run.exits import Interrupted, _error_line


class RunFailed(RuntimeError):
    """A run of the procedure failed on this rank; the line names the run and the rank."""

    def __init__(self, line, rank):
        super().__init__(line)
        self.rank = rank


def _plan(workload, results, user_overrides, *, ranks, hosts, runs, allow_undersized, seed):
    """Rank 0: everything checked, the procedure's folder made. Returns the plan."""
    base, cfg, marker = dataset_config(workload, results, user_overrides)
    m = datasize.minimum(record_length=cfg.dataset.record_length,
                         samples_per_file=cfg.dataset.num_samples_per_file,
                         batch_size=cfg.reader.batch_size, hosts=len(hosts), accelerators=ranks,
                         host_memory_bytes=sum(h[2] for h in hosts))
    if cfg.dataset.num_files_train < m.num_files_train and not allow_undersized:
        raise AcceptanceError(undersized_line(cfg.dataset.num_files_train, m,
                                              "--allow-undersized-dataset"))
    first = cfg.train.seed if seed is None else seed
    folder = results_folder.new_step_folder(results, workload, "run", time.time())
    steps = [(results_folder.WARMUP, first)] + [
        (results_folder.run_name(i), first + i) for i in range(1, runs + 1)]
    return {"folder": folder, "base": base, "minimum": m,
            "overrides": configs.given(list(marker.get("overrides", [])) + list(user_overrides)),
            "dataset_bytes": cfg.num_samples * cfg.dataset.record_length,
            "num_files": cfg.dataset.num_files_train, "batch_size": cfg.reader.batch_size,
            "runs": [(name, s, os.path.join(folder, name)) for name, s in steps]}


def one_run(name, cfg, overrides, comm, workload):
    """One run; its failure as an error that names the run (and the rank)."""
    try:
        return runner.run(cfg, comm, overrides=overrides)
    except Interrupted as e:
        # a rank stopped by the launcher after another rank failed says nothing: the failed
        # rank's line is the job's
        marked = run_status.mark_stopped(cfg, "interrupted", str(e), rank=comm.Get_rank())
        e.after_failure = marked == "failed"
        e.run = name
        raise
    except Exception as e:
        rank = comm.Get_rank()
        line, by = _error_line(rank, e)
        agreed = isinstance(e, (collective.RankError, config.ConfigError))
        run_status.mark_stopped(cfg, "failed", line,
                                 rank=rank if by == rank and not agreed else None)
        text = (f"acceptance {workload}: {name} failed ({cfg.output.folder}): {line}; "
                "the runs before it are kept")
        if isinstance(e, collective.RankError):
            raise collective.RankError(text, e.rank, e.errors) from e
        if isinstance(e, config.ConfigError):
            raise collective.RankError(text, 0) from e
        raise RunFailed(text, by) from e


def run(workload, results, user_overrides, comm, *, runs=rules.RUNS, allow_undersized=False,
        allow_fewer_runs=False, seed=None, say=print):
    """Collective: the procedure. Returns result.json's content on rank 0 (None elsewhere).
    AcceptanceError (on every rank) before any run starts."""
    threshold = rules.threshold(workload)
    configs.check_overrides(user_overrides)
    if runs < 1:
        raise AcceptanceError(f"--runs {runs}: at least 1")
    if runs < rules.RUNS and not allow_fewer_runs:
        raise AcceptanceError(f"--runs {runs} is under the rules' {rules.RUNS} runs: give "
                              "--allow-fewer-runs to go on (the result is then reported not "
                              "compliant)")
    hosts = run_facts.host_figures(comm)
    per_host = collections.Counter(comm.allgather(os.uname().nodename))
    rank = comm.Get_rank()
    error = plan = None
    if rank == 0:
        try:
            plan = _plan(workload, results, user_overrides, ranks=comm.Get_size(), hosts=hosts,
                         runs=runs, allow_undersized=allow_undersized, seed=seed)
        except AcceptanceError as e:
            error = str(e)
        except OSError as e:
            error = f"results folder {results} cannot be written: {e.strerror} ({e.filename})"
    error, plan = comm.bcast((error, plan), root=0)
    if error:
        raise AcceptanceError(error)
    done = []
    for name, run_seed, out in plan["runs"]:
        overrides = configs.for_run(plan["base"], run_seed, out)
        cfg = configs.load(overrides)
        if rank == 0:
            say(f"acceptance {workload}: {name}, train.seed={run_seed}, in {out}")
        summary = one_run(name, cfg, overrides, comm, workload)
        if rank == 0:
            folder = os.path.relpath(os.path.realpath(outputs.results_folder(out)),
                                     plan["folder"])
            done.append(result.run_record(name, run_seed, folder, summary))
            say(f"acceptance {workload}: {name} done, AU {done[-1]['au_percentage']:.2f} %")
    if rank != 0:
        return None
    m = plan["minimum"]
    checks = compliance.check(
        dataset_bytes=plan["dataset_bytes"], num_files=plan["num_files"],
        host_memory_bytes=m.host_memory_bytes, hosts=[h[0] for h in hosts],
        ranks_per_host=dict(per_host), batch_size=plan["batch_size"], warmup=done[0],
        runs=done[1:], overrides=plan["overrides"])
    doc = result.result(workload=workload, threshold=threshold, warmup=done[0], runs=done[1:],
                        compliance=checks, division=compliance.division(plan["overrides"]),
                        datasize={**m.as_json(), "hosts": m.hosts,
                                  "accelerators": m.accelerators,
                                  "host_memory_bytes": m.host_memory_bytes,
                                  "dataset_num_files_train": plan["num_files"]})
    results_folder.write_json(os.path.join(plan["folder"], results_folder.RESULT), doc)
    doc["folder"] = plan["folder"]
    return doc

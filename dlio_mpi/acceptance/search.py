"""search: the largest number of emulated accelerators per host whose runs keep the workload's
AU at or above its threshold, over the dataset datagen made (MLPerf Storage's single-host figure;
over several hosts, the same number on each). The count is doubled from --min until a count
fails, then bisected (see bisection); each count is run --repeats times and a majority
decides. Each run is a run of the emulator in DLIO's layout, kept in
DIR/training/WORKLOAD/search/TIME/accelerators_N/repeat_K/; search.json beside them lists every
count tried (the AU of each repeat, pass or fail) and the answer, rewritten after each count
so that a search cut short keeps what it found.

Two ways to run the counts: launched (this process starts `LAUNCHER -n N*HOSTS python -m
dlio_mpi run ...` for each run, and needs no MPI itself), or inside an allocation (the command
runs under mpiexec on every process of the allocation, and each run uses the first N processes
of each host, the others waiting)."""
import os
import shlex
import time

from dlio_mpi.acceptance import bisection, configs, datasize, generation, results_folder, rules
from dlio_mpi.acceptance.rules import AcceptanceError
from dlio_mpi.run import summary_layout

SEARCH = "search.json"
STEP = "search"


class SearchFailed(RuntimeError):
    """A run of the search failed; the line names the run, the counts tried before it are kept
    in search.json."""


def point_folder(folder, per_host, repeat):
    return os.path.join(folder, f"accelerators_{per_host}", f"repeat_{repeat}")


def check_counts(low, high, repeats):
    if low < 1:
        raise AcceptanceError(f"--min {low}: at least 1 accelerator per host")
    if high < low:
        raise AcceptanceError(f"--max {high} is below --min {low}: the search needs "
                              "min <= max")
    if repeats < 1:
        raise AcceptanceError(f"--repeats {repeats}: at least 1")


def plan(workload, results, user_overrides, *, low, high, repeats, hosts, host_memory_bytes,
         allow_undersized, seed):
    """Everything checked, the search's folder made (DIR/training/WORKLOAD/search/TIME, with
    `latest`). Returns the plan every run of the search is made from."""
    threshold = rules.threshold(workload)
    configs.check_overrides(user_overrides)
    check_counts(low, high, repeats)
    base, cfg, _ = generation.dataset_config(workload, results, user_overrides)
    m = datasize.minimum(record_length=cfg.dataset.record_length,
                         samples_per_file=cfg.dataset.num_samples_per_file,
                         batch_size=cfg.reader.batch_size, hosts=hosts,
                         accelerators=high * hosts, host_memory_bytes=host_memory_bytes)
    undersized = cfg.dataset.num_files_train < m.num_files_train
    if undersized and not allow_undersized:
        raise AcceptanceError(generation.undersized_line(cfg.dataset.num_files_train, m,
                                                         "--allow-undersized-dataset"))
    try:
        folder = results_folder.new_step_folder(results, workload, STEP, time.time())
    except OSError as e:
        raise AcceptanceError(f"results folder {results} cannot be written: {e.strerror} "
                              f"({e.filename})") from None
    return {"workload": workload, "threshold": threshold, "folder": folder, "base": base,
            "low": low, "high": high, "repeats": repeats, "hosts": hosts,
            "seed": cfg.train.seed if seed is None else seed,
            "dataset": {"num_files_train": cfg.dataset.num_files_train,
                        "rules_minimum_files": m.num_files_train, "rule": m.rule,
                        "undersized": undersized}}


def run_overrides(p, per_host, repeat):
    """The overrides of one run: repeat K of every count has the same seed (the first + K - 1),
    so that counts are compared on the same sample orders."""
    return configs.for_run(p["base"], p["seed"] + repeat - 1,
                           point_folder(p["folder"], per_host, repeat))


def run_name(per_host, repeat):
    return f"{per_host} accelerators per host, repeat {repeat}"


def au_of(summary):
    return float(summary["metric"]["train_au_mean_percentage"])


def document(p, mode, launcher, points, answer):
    """search.json's content; answer None while the search goes on."""
    doc = {
        "procedure": "MLPerf Storage training: accelerators per host",
        "workload": p["workload"],
        "au_threshold_percentage": p["threshold"],
        "mode": mode,
        "launcher": launcher,
        "hosts": p["hosts"],
        "min_accelerators_per_host": p["low"],
        "max_accelerators_per_host": p["high"],
        "repeats": p["repeats"],
        "majority": bisection.majority(p["repeats"]),
        "first_seed": p["seed"],
        "dataset": p["dataset"],
        "points": points,
        "complete": answer is not None,
        "accelerators_per_host": answer,
        "accelerators": None if answer is None else answer * p["hosts"],
        # the answer is --max: the host may sustain more than the search tried
        "at_max": answer == p["high"],
    }
    return doc


def point_line(workload, point, threshold):
    aus = ", ".join(f"{a:.2f}" for a in point["au_percentage"])
    return (f"search {workload}: {point['accelerators_per_host']} accelerators per host "
            f"({point['accelerators']} in all): AU {aus} % -> "
            f"{'pass' if point['pass'] else 'fail'} ({point['passing_repeats']} of "
            f"{len(point['au_percentage'])} at or above {threshold:g} %)")


def search(p, run_one, *, mode, launcher=None, say=print, write=True):
    """The search over run_one(per_host, repeat) -> (AU %, run folder); returns search.json's
    content. write: this process writes search.json (rank 0 inside an allocation)."""
    points = []
    path = os.path.join(p["folder"], SEARCH)

    def save(answer):
        if write:
            results_folder.write_json(path, document(p, mode, launcher, points, answer))

    def passes(per_host):
        folders = []

        def measure(n, repeat):
            au, folder = run_one(n, repeat)
            folders.append(os.path.relpath(folder, p["folder"]))
            return au

        passed, values = bisection.decide(measure, per_host, p["repeats"], p["threshold"])
        point = {"accelerators_per_host": per_host, "accelerators": per_host * p["hosts"],
                 "au_percentage": values, "runs": folders,
                 "passing_repeats": sum(v >= p["threshold"] for v in values), "pass": passed}
        points.append(point)
        save(None)
        if write:
            say(point_line(p["workload"], point, p["threshold"]))
        return passed

    try:
        answer = bisection.largest_passing(p["low"], p["high"], passes)
    except SearchFailed:
        save(None)
        raise
    save(answer)
    doc = document(p, mode, launcher, points, answer)
    doc["folder"] = p["folder"]
    return doc


def launched_runs(p, launcher, timeout):
    """run_one for the launched search: each run its own job of N x hosts processes."""
    from dlio_mpi_analysis.replays.launch import LaunchError, run_emulator

    def run_one(per_host, repeat):
        overrides = run_overrides(p, per_host, repeat)
        out = point_folder(p["folder"], per_host, repeat)
        name = run_name(per_host, repeat)
        try:
            run_emulator(f"acceptance search {p['workload']}: {name}", per_host * p["hosts"],
                         ["run", "-q", *overrides], launcher=launcher, timeout=timeout)
        except LaunchError as e:
            tail = [ln for ln in str(e).splitlines()[1:] if ln.strip()]
            raise SearchFailed(f"acceptance search {p['workload']}: {name} failed ({out}): "
                               f"{tail[-1] if tail else str(e).splitlines()[0]}; the counts "
                               f"before it are kept in {os.path.join(p['folder'], SEARCH)}") \
                from None
        try:
            summary, facts = summary_layout.load(out)
        except (OSError, ValueError) as e:
            raise SearchFailed(f"acceptance search {p['workload']}: {name}: its summary "
                               f"cannot be read ({e})") from None
        placed = summary.get("num_hosts")
        most = facts.get("facts", {}).get("ranks_per_host_max")
        if placed != p["hosts"] or most != per_host:
            raise SearchFailed(
                f"acceptance search {p['workload']}: {name}: the launcher placed "
                f"{per_host * p['hosts']} processes on {placed} hosts, at most {most} on one, "
                f"not {per_host} on each of {p['hosts']} hosts: give a --launcher that spreads "
                "the processes evenly over the hosts (Open MPI: --map-by node)")
        return au_of(summary), os.path.realpath(outputs_folder(out))

    return run_one


def outputs_folder(out):
    from dlio_mpi.run import outputs

    return outputs.results_folder(out)


def allocation_runs(p, comm):
    """run_one for the search inside an allocation: collective over comm; each run on the
    first N processes of every host (a communicator of its own), the others waiting."""
    from mpi4py import MPI

    from dlio_mpi.acceptance import procedure

    names = comm.allgather(os.uname().nodename)
    rank = comm.Get_rank()
    local = names[:rank].count(names[rank])

    def run_one(per_host, repeat):
        overrides = run_overrides(p, per_host, repeat)
        out = point_folder(p["folder"], per_host, repeat)
        sub = comm.Split(0 if local < per_host else MPI.UNDEFINED, rank)
        au = folder = None
        if sub != MPI.COMM_NULL:
            try:
                cfg = configs.load(overrides)
                summary = procedure.one_run(f"search, {run_name(per_host, repeat)}", cfg,
                                            overrides, sub, p["workload"])
            finally:
                sub.Free()
            if rank == 0:
                au, folder = au_of(summary), os.path.realpath(outputs_folder(out))
        return comm.bcast((au, folder), root=0)

    return run_one


def allocation_hosts(comm):
    """(hosts, fewest processes on one host, [(name, processes)])."""
    import collections

    per_host = collections.Counter(comm.allgather(os.uname().nodename))
    return len(per_host), min(per_host.values()), sorted(per_host.items())


def check_launcher(launcher):
    """The launcher's program can be found (before anything starts); returns the launcher as
    search.json records it."""
    import shutil

    words = shlex.split(launcher) if launcher else ["mpiexec"]
    if not words or shutil.which(words[0]) is None:
        raise AcceptanceError(f"--launcher {launcher or 'mpiexec'}: "
                              f"{words[0] if words else 'nothing'} not found on PATH")
    return launcher or "mpiexec (from PATH)"

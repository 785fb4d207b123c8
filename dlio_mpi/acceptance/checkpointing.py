"""checkpoint: MLPerf Storage's checkpointing procedure for a llama3 model. A write run (N
checkpoints, every file fsynced), the page cache of the written files dropped, then a read run
(the N checkpoints read back), each run an output folder of its own in DLIO's layout; then
result.json (each checkpoint's time and throughput, per rank and in total, their mean and
standard deviation, the rules with their evidence) and ranks.csv (every rank's figures).
Everything the rules can refuse is checked before the write run starts."""
import collections
import csv
import io
import os
import statistics
import time

from dlio_mpi.config import loader as config
from dlio_mpi.run import outputs
from dlio_mpi.files import safe_files
from dlio_mpi.acceptance import checkpoint_rules, configs, results_folder
from dlio_mpi.acceptance.rules import AcceptanceError
from dlio_mpi.checkpoint import page_cache
from dlio_mpi.checkpoint import schedule
from dlio_mpi.display import units

PROCEDURE = "mlperf_storage_checkpointing"
GIB = 2**30
RANKS_CSV = "ranks.csv"

# keys the procedure sets for itself, and where the user sets them instead
RESERVED = {"workload": "the command's argument", "output.folder": "--results",
            "checkpoint.num_checkpoints_write": "--num-checkpoints",
            "checkpoint.num_checkpoints_read": "--num-checkpoints",
            "checkpoint.fsync": "the rules: always on", "checkpoint.mode": "--mode",
            "model.parallelism.data": "--mode", "workflow.train": "checkpoints only",
            "workflow.checkpoint": "checkpoints only",
            "workflow.generate_data": "checkpoints only"}


def check_overrides(overrides):
    for item in overrides:
        if "=" not in item:
            raise AcceptanceError(f"{item!r}: overrides are section.key=value")
        key = next(iter(configs.given([item])))
        if key in RESERVED:
            raise AcceptanceError(f"{item!r}: the procedure sets {key} ({RESERVED[key]})")


def checkpoint_folder(results, model):
    return os.path.join(results, "checkpoints", model)


def base_overrides(m, mode, results, user_overrides):
    out = [f"workload={m.name}",
           f"checkpoint.checkpoint_folder={checkpoint_folder(results, m.name)}",
           "checkpoint.fsync=true"]
    if mode == "subset":
        out += ["checkpoint.mode=subset", f"model.parallelism.data={m.dp}"]
    return out + list(user_overrides)


def phase_overrides(base, folder, phase, n):
    writes, reads = (n, 0) if phase == "write" else (0, n)
    return list(base) + [f"output.folder={os.path.join(folder, phase)}",
                         f"checkpoint.num_checkpoints_write={writes}",
                         f"checkpoint.num_checkpoints_read={reads}"]


def _plan(m, results):
    """Rank 0: the results folder checked and the procedure's folder made."""
    marker = results_folder.read_marker(results)
    if marker is None:
        results_folder.check_owner(results, m.name, None)
    elif marker.get("procedure") != PROCEDURE or marker.get("workload") != m.name:
        raise AcceptanceError(
            f"results folder {results} holds the runs of {marker.get('procedure')} "
            f"{marker.get('workload')}, not of {PROCEDURE} {m.name}: give another folder")
    os.makedirs(results, exist_ok=True)
    if marker is None:
        results_folder.write_marker(results, {"procedure": PROCEDURE, "workload": m.name})
    parent = os.path.join(results, "checkpointing", m.name)
    os.makedirs(parent, exist_ok=True)
    return outputs.new_run_folder(parent, time.time())


def _agree(comm, error):
    errors = [e for e in comm.allgather(error) if e]
    if errors:
        raise AcceptanceError(errors[0])


def run(model, mode, results, user_overrides, comm, *, checkpoints=None,
        cache="fadvise", say=print):
    """Collective: the procedure. Returns result.json's content on rank 0 (None elsewhere).
    AcceptanceError (on every rank) before anything starts."""
    m = checkpoint_rules.model(model)
    n = checkpoint_rules.CHECKPOINTS if checkpoints is None else checkpoints
    if n < 1:
        raise AcceptanceError(f"--num-checkpoints {n}: at least 1")
    if cache not in page_cache.METHODS:
        raise AcceptanceError(f"--clear-cache {cache!r}: use one of "
                              f"{', '.join(page_cache.METHODS)}")
    check_overrides(user_overrides)
    rank, size = comm.Get_rank(), comm.Get_size()
    per_host = collections.Counter(comm.allgather(os.uname().nodename))
    checkpoint_rules.check_fit(m, mode, size, len(per_host))
    base = base_overrides(m, mode, results, user_overrides)
    try:
        cfg = config.load(phase_overrides(base, results, "write", n))
        schedule.size_of(cfg, size)
    except config.ConfigError as e:
        raise AcceptanceError(f"config error: {e}") from None
    if cache == "drop_caches":
        _agree(comm, None if page_cache.drop_caches_writable() else
               f"--clear-cache drop_caches: {page_cache.DROP_CACHES} is not writable on "
               f"{os.uname().nodename} (use --clear-cache fadvise)")
    error = folder = None
    if rank == 0:
        try:
            folder = _plan(m, results)
        except AcceptanceError as e:
            error = str(e)
        except OSError as e:
            error = f"results folder {results} cannot be written: {e.strerror} ({e.filename})"
    error, folder = comm.bcast((error, folder), root=0)
    if error:
        raise AcceptanceError(error)

    runs, mine = {}, {"write": [], "read": []}
    cleared = fetched = None
    for phase in ("write", "read"):
        overrides = phase_overrides(base, folder, phase, n)
        if rank == 0:
            say(f"acceptance {m.name} ({mode}): {n} checkpoint {phase}s in "
                f"{os.path.join(folder, phase)}")
        before = page_cache.storage_read_bytes()
        from dlio_mpi.run import job as runner
        runs[phase] = runner.run(config.load(overrides), comm, overrides=overrides,
                                 checkpoint_results=mine[phase])
        after = page_cache.storage_read_bytes()
        if phase == "write":
            written = sorted({p for r in mine["write"] for p in r.files})
            cleared = page_cache.clear(comm, written, cache)
            if rank == 0:
                say(f"acceptance {m.name}: page cache dropped ({cache}): {cleared['files']} "
                    f"files, {cleared['bytes']:,} bytes on {_hosts(cleared['hosts'])}")
        elif before is not None and after is not None:
            fetched = after - before
    host = os.uname().nodename
    mine_rows = [(r.op, r.index, r.bytes, r.seconds, r.fsyncs, len(r.files))
                 for phase in ("write", "read") for r in mine[phase]]
    gathered = comm.gather((host, mine_rows, fetched), root=0)
    if rank != 0:
        return None
    doc = result(m, mode, size, per_host, n, folder, runs, gathered, cleared,
                 configs.given(user_overrides))
    results_folder.write_json(os.path.join(folder, results_folder.RESULT), doc)
    safe_files.write_whole(os.path.join(folder, RANKS_CSV), ranks_csv(gathered), fsync=True)
    doc["folder"] = folder
    return doc


def ranks_csv(gathered):
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["op", "index", "rank", "host", "bytes", "seconds", "bytes_per_s"])
    rows = sorted((op, index, rank, host, nbytes, secs)
                  for rank, (host, mine, _) in enumerate(gathered)
                  for op, index, nbytes, secs, _, _ in mine)
    for op, index, rank, host, nbytes, secs in sorted(rows, key=lambda r: (r[0] != "write",
                                                                          r[1], r[2])):
        w.writerow([op, index, rank, host, nbytes, f"{secs:.6f}",
                    f"{nbytes / secs:.1f}" if secs > 0 else ""])
    return buf.getvalue()


def _spread(values):
    values = [float(v) for v in values]
    return {"min": min(values), "mean": statistics.fmean(values), "max": max(values)}


def _mean_stdev(values):
    return {"mean": statistics.fmean(values), "stdev": statistics.pstdev(values)}


def checkpoint_records(gathered):
    """One record per checkpoint written or read: its bytes, the time of the slowest rank
    (the duration), the throughput in total (bytes / duration), and the ranks' times and
    throughputs (their smallest throughput is MLPerf Storage's figure for the checkpoint)."""
    per = collections.defaultdict(list)
    for host, mine, _ in gathered:
        for op, index, nbytes, secs, fsyncs, files in mine:
            per[(op, index)].append((nbytes, secs, fsyncs, files))
    out = []
    for (op, index), ranks in sorted(per.items(), key=lambda kv: (kv[0][0] != "write",
                                                                  kv[0][1])):
        total = sum(r[0] for r in ranks)
        duration = max(r[1] for r in ranks)
        movers = [r for r in ranks if r[0] > 0]
        out.append({
            "op": op, "index": index, "bytes": total, "duration_s": duration,
            "throughput_bytes_per_s": total / duration if duration > 0 else 0.0,
            "fsyncs": sum(r[2] for r in ranks), "files": sum(r[3] for r in ranks),
            "rank_seconds": _spread(r[1] for r in ranks),
            "rank_throughput_bytes_per_s": _spread(
                r[0] / r[1] if r[1] > 0 else 0.0 for r in movers) if movers else None})
    return out


def _figures(records):
    out = {}
    for op in ("write", "read"):
        done = [r for r in records if r["op"] == op]
        if not done:
            continue
        out[op] = {
            "checkpoints": len(done),
            "duration_s": _mean_stdev([r["duration_s"] for r in done]),
            "throughput_GiB_per_s": _mean_stdev([r["throughput_bytes_per_s"] / GIB
                                                 for r in done]),
            "slowest_rank_throughput_GiB_per_s": _mean_stdev(
                [r["rank_throughput_bytes_per_s"]["min"] / GIB for r in done
                 if r["rank_throughput_bytes_per_s"]]),
        }
    return out


def _hosts(n):
    return f"{n} host" + ("" if n == 1 else "s")


def _rule(name, ok, evidence):
    return {"rule": name, "compliant": bool(ok), "evidence": evidence}


def _from_storage(fetched):
    """Bytes the ranks' read runs fetched from the storage layer, summed; None when a rank
    could not tell."""
    return None if None in fetched else sum(fetched)


def compliance(m, mode, size, per_host, records, cleared, fetched, overrides):
    closed = checkpoint_rules.closed_processes(m, mode)
    hosts = ", ".join(f"{h}: {k}" for h, k in per_host.items())
    writes = [r for r in records if r["op"] == "write"]
    reads = [r for r in records if r["op"] == "read"]
    files = sum(r["files"] for r in writes)
    fsyncs = sum(r["fsyncs"] for r in writes)
    read_bytes = sum(r["bytes"] for r in reads)
    out = [
        _rule("the process count fits the model's parallelism", size == closed,
              f"{size} processes on {_hosts(len(per_host))} ({hosts}); {m.name} is "
              f"{m.parallelism()}, ZeRO {m.zero_stage}; {mode} mode: a CLOSED result runs "
              f"{closed} processes"
              + ("" if mode == "default" else
                 f", playing ranks 0 .. {size - 1} of its {m.processes}")),
        _rule(f"every host runs at least {checkpoint_rules.MIN_PROCESSES_PER_HOST} processes",
              min(per_host.values()) >= checkpoint_rules.MIN_PROCESSES_PER_HOST, hosts),
        _rule(f"{checkpoint_rules.CHECKPOINTS} checkpoints written",
              len(writes) == checkpoint_rules.CHECKPOINTS,
              f"{len(writes)} written: {sum(r['bytes'] for r in writes):,} bytes in "
              f"{files} files"),
        _rule(f"{checkpoint_rules.CHECKPOINTS} checkpoints read back after the writes",
              len(reads) == checkpoint_rules.CHECKPOINTS,
              f"{len(reads)} read: {read_bytes:,} bytes"),
        _rule("every checkpoint file fsynced when written", files > 0 and fsyncs >= files,
              f"{fsyncs} fsyncs for {files} files written"),
    ]
    from_storage = _from_storage(fetched)
    out.append(_rule(
        "the page cache cleared between the writes and the reads",
        from_storage is None or from_storage >= read_bytes,
        f"{cleared['method']}: "
        + (f"POSIX_FADV_DONTNEED on {cleared['files']} files ({cleared['bytes']:,} bytes) "
           f"by the ranks that wrote them, on {_hosts(cleared['hosts'])}"
           if cleared["method"] == "fadvise" else
           f"{page_cache.DROP_CACHES} on each of {_hosts(cleared['hosts'])} after the "
           f"{cleared['files']} files ({cleared['bytes']:,} bytes) were written")
        + "; the read run fetched "
        + (f"{from_storage:,} bytes from the storage layer (/proc/self/io read_bytes "
           f"summed over the ranks) for {read_bytes:,} bytes read"
           if from_storage is not None else
           "an unknown number of bytes from the storage layer (/proc/self/io unavailable)")))
    allowed = {k: k in checkpoint_rules.CLOSED_PARAMETERS for k in overrides}
    out.append(_rule(
        "only the parameters a CLOSED submission may change were changed",
        all(allowed.values()),
        ", ".join(f"{k}={overrides[k]} ({'allowed' if ok else 'not allowed'})"
                  for k, ok in allowed.items()) or "no parameter changed"))
    return out


def result(m, mode, size, per_host, n, folder, runs, gathered, cleared, overrides):
    records = checkpoint_records(gathered)
    rules = compliance(m, mode, size, per_host, records, cleared,
                       [g[2] for g in gathered], overrides)
    broken = [r for r in rules if not r["compliant"]]
    reasons = [r["rule"] + ": " + r["evidence"] for r in broken]
    # another process count than the rules' is an OPEN result; any other broken rule leaves
    # the result in no division
    if any(r is not rules[0] for r in broken):
        division = "invalid"
    else:
        division = "open" if broken else "closed"
    return {
        "procedure": "MLPerf Storage checkpointing",
        "model": m.name, "mode": mode, "processes": size,
        "hosts": dict(per_host),
        "parallelism": {"tp": m.tp, "pp": m.pp, "dp": m.dp, "zero_stage": m.zero_stage},
        "num_checkpoints": n,
        "page_cache": {**cleared, "read_run_storage_bytes": _from_storage(
            [g[2] for g in gathered])},
        "compliant": not reasons,
        "division": division,
        "not_compliant_because": reasons,
        "figures": _figures(records),
        "checkpoints": records,
        "runs": {phase: os.path.relpath(os.path.realpath(outputs.results_folder(
            os.path.join(folder, phase))), folder) for phase in runs},
        "ranks_csv": RANKS_CSV,
        "compliance": rules,
    }


def lines(doc):
    out = []
    for op, f in doc["figures"].items():
        out.append(f"{op:>5}: {f['checkpoints']} checkpoints, "
                   f"{f['duration_s']['mean']:.3f} s (stdev {f['duration_s']['stdev']:.3f}), "
                   f"{units.rate_in(f['throughput_GiB_per_s']['mean'] * GIB, 'GiB', 3)} in total, "
                   f"slowest rank "
                   f"{units.rate_in(f['slowest_rank_throughput_GiB_per_s']['mean'] * GIB, 'GiB', 3)}")
    out.append(f"{doc['model']} ({doc['mode']}, {doc['processes']} processes): "
               + ("compliant" if doc["compliant"] else
                  f"NOT COMPLIANT ({'; '.join(r.split(':')[0] for r in doc['not_compliant_because'])})"))
    return out

"""A whole run on every rank: check, make the dataset if it is missing, train, reduce the
measurements across ranks (dlio_mpi.metrics), and write the outputs (rank 0: summary.json,
per-rank CSV)."""
import csv
import io
import json
import os
import sys
import time

import numpy as np

from dlio_mpi import (collective, config, darshan, datagen, engines, oplog_format, outputs,
                      pipeline, prefetch, sampler, sysinfo)
from dlio_mpi.metrics import STARTUP_COLUMNS, _mean, _mpi, reduce_epochs, startup_figures
from dlio_mpi.checkpoint import schedule


def _agree(comm, error):
    """Every rank learns the first rank's error, so all stop together (no one waits in a
    collective for a rank that failed)."""
    collective.agree(comm, error)


def write_atomic(path, text):
    tmp = f"{path}.part"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def check_supported(cfg):
    """What this version's training loop does not emulate yet stops the run before any I/O."""
    missing = []
    if missing:
        raise config.ConfigError(f"not emulated by this version yet: {', '.join(missing)}")


def prepare(cfg, comm):
    """Output directory and dataset, agreed on by every rank."""
    rank = comm.Get_rank()
    check_supported(cfg)
    if cfg.workflow.train:
        config.check_ranks(cfg, comm.Get_size())
    out_dir = cfg.output.folder
    error = None
    if rank == 0:
        try:
            os.makedirs(out_dir, exist_ok=True)
            probe = os.path.join(out_dir, ".write_probe")
            with open(probe, "w"):
                pass
            os.unlink(probe)
            outputs.acquire(out_dir)
            outputs.clear_results(out_dir)
            outputs.set_status(out_dir, "running", ranks=comm.Get_size())
            outputs.guard_status(out_dir)
        except OSError as e:
            error = f"rank 0: output directory {out_dir} cannot be written: {e.strerror}"
        except outputs.OutputInUse as e:
            error = f"rank 0: {e}"
    _agree(comm, error)
    owner = comm.bcast(outputs.owned if rank == 0 else None, root=0)
    if rank != 0:
        outputs.owned = owner
        outputs.guard_status_beside(out_dir, rank)
    if cfg.workflow.checkpoint:
        schedule.size_of(cfg, comm.Get_size())       # a ConfigError before any I/O
    if not cfg.workflow.train:
        return 0
    have, error = None, None
    if rank == 0:
        try:
            have = datagen.load_manifest(cfg.dataset.data_folder)
        except datagen.ManifestError as e:
            error = f"rank 0: {e}"
    have, error = comm.bcast((have, error), root=0)
    if error:
        raise RuntimeError(error)
    generated = 0
    if cfg.io.write_first:
        pass                # the run writes its dataset (dlio_mpi.write_phase)
    elif datagen.description(have) != datagen.manifest_for(cfg) or datagen.in_progress(have):
        if not cfg.workflow.generate_data:
            data = cfg.dataset.data_folder
            if datagen.description(have) == datagen.manifest_for(cfg):
                raise config.ConfigError(
                    f"{data} holds a dataset whose generation did not finish (its manifest is "
                    "marked in progress) and workflow.generate_data is false: generate it "
                    "again (python -m dlio_mpi generate ...), or remove it (python -m "
                    "dlio_mpi clean ...)")
            what = "no dataset manifest" if have is None else "the manifest of another dataset"
            raise config.ConfigError(
                f"{data} holds {what} and workflow.generate_data is false: "
                "generate it first (python -m dlio_mpi generate ...) or set "
                "workflow.generate_data=true")
        generated = comm.allreduce(datagen.generate(cfg, comm))
    if cfg.io.check_dataset and not cfg.io.write_first:
        datagen.check(cfg, comm)
    if cfg.io.interface == "posix_direct":
        error = bad_value = None
        try:
            data = cfg.dataset.data_folder
            mem, off, _ = engines.dio_alignment(data)
            if cfg.reader.transfer_size % off:
                bad_value = (f"io.interface=posix_direct needs reader.transfer_size in "
                             f"multiples of {off} bytes on {data} (reader.transfer_size="
                             f"{cfg.reader.transfer_size})")
            else:
                engines.dio_probe(data)
        except engines.EngineError as e:
            error = str(e)
        bad_values = [b for b in comm.allgather(bad_value) if b]
        if bad_values:          # a configuration value: a config error on every rank
            raise config.ConfigError(bad_values[0])
        _agree(comm, error)
    return generated


def run_facts(cfg, comm):
    """What the run ran on, for the summary: MPI library and MPI-IO component, ranks and
    hosts, file system of the data, dataset size against one host's memory."""
    hosts = comm.allgather(os.uname().nodename)
    memory = comm.allreduce(sysinfo.memory_bytes(), op=_mpi().MIN)
    dataset = cfg.num_samples * cfg.dataset.record_length
    facts = {"mpi": sysinfo.mpi_library(), "mpiio": sysinfo.mpiio_component(),
             "ranks": comm.Get_size(), "hosts": len(set(hosts)),
             "ranks_per_host_max": max(hosts.count(h) for h in set(hosts)),
             "filesystem": sysinfo.filesystem_type(cfg.dataset.data_folder),
             "dataset_bytes": dataset, "host_memory_bytes": memory,
             "warnings": []}
    warn = sysinfo.dataset_vs_memory(dataset, memory) if cfg.workflow.train else None
    if warn:
        facts["warnings"].append(warn)
    threads = prefetch.read_ahead_threads(cfg)
    widening = odirect_widening(cfg) if comm.Get_rank() == 0 else None
    widening = comm.bcast(widening, root=0)
    if widening:
        facts["odirect_widening"] = widening
        facts["warnings"].append(
            f"io.interface=posix_direct: O_DIRECT alignment ({widening['alignment']} bytes on "
            f"{cfg.dataset.data_folder}) widens each sample read to up to "
            f"{widening['read_bytes_max']} bytes (samples of {widening['sample_bytes_max']} "
            f"bytes at most); bytes moved include the widening (file 0: "
            f"{widening['file0_read_bytes']} bytes read for {widening['file0_sample_bytes']} "
            "bytes of samples)")
    cpus = comm.allreduce(len(os.sched_getaffinity(0)), op=_mpi().MIN)
    facts["cpus_per_rank_min"] = cpus
    if threads > 1 and threads > cpus:
        facts["warnings"].append(
            f"reader.read_threads={threads} on {cpus} CPU{'s' if cpus > 1 else ''} per rank "
            "(the launcher's binding): the threads share the rank's CPUs (they give way to "
            "the rank's own thread), so reads that the CPU does, as from the page cache, go no "
            "faster than with fewer threads; bind each rank to "
            f"{threads} CPUs or more (mpiexec --map-by slot:PE={threads}, srun "
            "--cpus-per-task) or not at all (--bind-to none)")
    return facts


def odirect_widening(cfg):
    """With io.interface=posix_direct and per-sample reads, how O_DIRECT alignment widens the
    reads of the samples of the first training file (the aligned ranges covering them, cut at
    the file's end, as the reader reads them), or None when no read is widened."""
    if (cfg.io.interface != "posix_direct" or not cfg.workflow.train
            or cfg.reader.access != "sample" or cfg.io.read_type != "on_demand"):
        return None
    from dlio_mpi.dataset import Dataset
    data = Dataset(cfg)
    if not data.byte_ranges or data.num_files == 0:
        return None
    align = engines.dio_alignment(data.root)[1]
    idx = data.index(0)
    offs, lens = idx.ranges(np.arange(data.spf))
    start = offs - offs % align
    end = np.minimum(-(-(offs + lens) // align) * align, max(int(idx.file_size), 0))
    read = np.maximum(end - start, lens)
    if int(read.sum()) == int(lens.sum()):
        return None
    return {"alignment": int(align), "sample_bytes_max": int(lens.max()),
            "read_bytes_max": int(read.max()), "file0_sample_bytes": int(lens.sum()),
            "file0_read_bytes": int(read.sum())}


def run(cfg, comm, echo=print, job_start_ns=None):
    """The main job. Returns the summary (on every rank)."""
    rank, size = comm.Get_rank(), comm.Get_size()
    t0 = time.time()
    # the job as Darshan covers it, from MPI_Init on: on the op log's clock
    job = [engines.mono_ns() if job_start_ns is None else int(job_start_ns), 0]
    generated = prepare(cfg, comm)
    log = engines.OpLog(cfg.io.oplog_capacity)

    tty = sys.stderr.isatty()
    epoch_start = {}

    def progress(epoch, step, steps):
        """Rank 0 on a terminal: epoch, step and this rank's samples/s, at most ~10 times a
        second; silent otherwise."""
        if not tty:
            return
        now = time.perf_counter()
        t0 = epoch_start.setdefault(epoch, now)
        if step != steps and now - epoch_start.get("shown", 0) < 0.1:
            return
        epoch_start["shown"] = now
        rate = step * cfg.reader.batch_size / (now - t0) if now > t0 else 0.0
        print(f"\repoch {epoch + 1}/{cfg.train.epochs} step {step}/{steps} "
              f"{rate:,.0f} samples/s per rank", end="", file=sys.stderr, flush=True)

    facts = run_facts(cfg, comm)
    window = [engines.mono_ns(), 0]     # the training part, on the op log's clock
    if cfg.workflow.train:
        epochs, oplogs, first_batch, checkpoints = pipeline.run_epochs(cfg, comm, log, progress)
    else:
        epochs, oplogs, first_batch = [], [], None
        checkpoints = schedule.checkpoint_only(cfg, comm, log, facts["ranks_per_host_max"])
        if cfg.io.keep_oplog:       # the checkpoints' writes and reads, as one phase
            log.finalize()
            oplogs.append(("checkpoint", {k: np.array(v) for k, v in log.arrays().items()}))
    window[1] = engines.mono_ns()
    startup, my_startup = startup_figures(comm, first_batch)
    if rank == 0 and sys.stderr.isatty():
        print(file=sys.stderr)
    everything = reduce_epochs(epochs, comm)
    load = [e for e in everything if e["phase"] == "load"]
    wrote = [e for e in everything if e["phase"] == "write"]
    trained = [e for e in everything if e["phase"] == "train"]
    evals = [e for e in everything if e["phase"] == "eval"]
    au = float(np.mean([e["au"] for e in trained])) if trained else 0.0
    unread = (cfg.num_samples - (trained[0]["steps"] if trained else 0) * cfg.reader.batch_size
              * size if cfg.reader.access == "stream" else
              sampler.unread_per_epoch(cfg.num_samples, size, cfg.reader.batch_size,
                                       cfg.io.remainder, cfg.io.layout, cfg.io.read_type))
    summary = {
        "config": cfg.to_dict(),
        "ranks": size,
        "hosts": facts["hosts"],
        "steps_per_epoch": trained[0]["steps"] if trained else 0,
        "samples_dropped_per_epoch": max(0, unread),
        "samples_padded_per_epoch": max(0, -unread),
        "load": load[0] if load else None,
        "write": {"duration_s": wrote[0]["duration_s"], "bytes_written": wrote[0]["bytes_moved"],
                  "bandwidth_bytes_per_s": wrote[0]["bytes_per_s"]} if wrote else None,
        "evaluations": evals,
        "checkpoints": checkpoints,
        "checkpoint_write_duration_s_mean": _mean([c["duration_s"] for c in checkpoints
                                                   if c["op"] == "write"]),
        "checkpoint_write_bandwidth_bytes_per_s_mean": _mean(
            [c["bandwidth_bytes_per_s"] for c in checkpoints if c["op"] == "write"]),
        "workload": cfg.workload,
        "not_emulated": list(cfg.not_emulated) + (
            [f"reader.read_threads ({prefetch.read_ahead_off(cfg)})"]
            if prefetch.read_ahead_off(cfg) else []),
        "read_threads": prefetch.read_ahead_threads(cfg),
        "files_generated": generated,
        "darshan_logs": sorted({x for x in comm.allgather(darshan.active_log()) if x}),
        # a run without training epochs (checkpoints only) has no AU and no throughput
        "train_au_mean_percentage": 100 * au if trained else None,
        "train_au_meet_expectation": ("success" if au >= cfg.metric.au else "fail")
        if trained else "not applicable",
        "au_threshold_percentage": 100 * cfg.metric.au,
        "train_throughput_mean_samples_per_second":
            float(np.mean([e["samples_per_s"] for e in trained])) if trained else None,
        "train_io_mean_MB_per_second":
            float(np.mean([e["bytes_per_s"] for e in trained])) / 1e6 if trained else None,
        "bytes_moved": int(sum(e["bytes_moved"] for e in everything if e["phase"] != "write")),
        "epochs": trained,
        "histogram_bucket_lower_ns": engines.hist_bucket_bounds().tolist(),
        "facts": facts,
        "startup": startup,
        "started": t0,
        "duration_s": time.time() - t0,
    }
    rows = comm.gather([rank] + [round(my_startup[k], 6) for k in STARTUP_COLUMNS]
                       + [round(e[k], 6) for e in epochs
                          for k in ("wall_s", "io_wait_s", "compute_s", "bytes_moved")],
                       root=0)
    out_dir = cfg.output.folder
    if cfg.io.keep_oplog:
        oplog_format.save(out_dir, rank, oplogs, log.origin_mono_ns, window,
                          (job[0], engines.mono_ns()))
    if rank == 0:
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(["rank", *STARTUP_COLUMNS]
                   + [f"{e['phase']}{'' if e['epoch'] < 0 else e['epoch']}_{k}" for e in epochs
                      for k in ("wall_s", "io_wait_s", "compute_s", "bytes_moved")])
        w.writerows(rows)
        write_atomic(os.path.join(out_dir, "per_rank.csv"), buf.getvalue())
        write_atomic(os.path.join(out_dir, "summary.json"),
                     json.dumps(summary, indent=1))
        outputs.unguard_status()
        outputs.set_status(out_dir, "complete")
        outputs.release(out_dir)
    else:
        outputs.unguard_status()
        outputs.owned = None
    comm.Barrier()
    return summary

"""A whole run on every rank: check, make the dataset if it is missing, train, reduce the
measurements across ranks (dlio_mpi.metrics), and write the outputs (rank 0: summary.json,
per-rank CSV)."""
import os
import sys
import time

import numpy as np

from dlio_mpi import (collective, config, darshan, datagen, engines, folder_lock, memory_check,
                      metrics, oplog_format, outputs, pipeline, prefetch, rank_deaths,
                      run_facts, safe_files, status)
from dlio_mpi.metrics import reduce_epochs, startup_figures
from dlio_mpi.checkpoint import lock as checkpoint_lock
from dlio_mpi.checkpoint import schedule


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
            safe_files.create(probe).close()
            os.unlink(probe)
            outputs.acquire(out_dir)
            outputs.clear_results(out_dir)
            status.set_status(out_dir, "running", ranks=comm.Get_size())
            status.guard_status(out_dir)
        except OSError as e:
            error = f"rank 0: output directory {out_dir} cannot be written: {e.strerror}"
        except outputs.OutputInUse as e:
            error = f"rank 0: {e}"
        if cfg.workflow.checkpoint and not error:
            folder = cfg.checkpoint.checkpoint_folder
            try:
                checkpoint_lock.take(folder)
            except OSError as e:
                error = f"rank 0: checkpoint folder {folder} cannot be written: {e.strerror}"
            except folder_lock.FolderInUse as e:
                error = f"rank 0: {e}"
    collective.agree(comm, error)
    owner = comm.bcast(outputs.owned if rank == 0 else None, root=0)
    if rank != 0:
        outputs.owned = owner
        status.guard_status_beside(out_dir, rank)
    rank_deaths.gather(comm)
    if cfg.workflow.checkpoint:
        schedule.size_of(cfg, comm.Get_size())       # a ConfigError before any I/O
    if not cfg.workflow.train:
        memory_check.check(cfg, comm)
        return 0
    have, error = None, None
    if rank == 0:
        try:
            have = datagen.load_manifest(cfg.dataset.data_folder)
        except datagen.ManifestError as e:
            error = f"rank 0: {e}"
    have, error = comm.bcast((have, error), root=0)
    if error:
        raise collective.RankError(error, 0)
    generated = 0
    stale = not cfg.io.write_first and (datagen.description(have) != datagen.manifest_for(cfg)
                                        or datagen.in_progress(have))
    if stale and not cfg.workflow.generate_data:
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
    memory_check.check(cfg, comm, generating=stale)
    if stale:
        generated = comm.allreduce(datagen.generate(cfg, comm))
    if cfg.io.check_dataset and not cfg.io.write_first:
        datagen.check(cfg, comm)
    if cfg.io.interface == "posix_direct":
        error = bad_value = None
        try:
            data = cfg.dataset.data_folder
            if cfg.io.write_first:      # the folder the write phase makes, or its parent's
                data = engines.existing_folder(data)
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
        collective.agree(comm, error)
    return generated


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

    facts = run_facts.run_facts(cfg, comm)
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
    off = prefetch.read_ahead_off(cfg)
    summary = metrics.summary(
        cfg, size, everything, checkpoints, facts=facts, startup=startup, generated=generated,
        not_emulated=list(cfg.not_emulated) + ([f"reader.read_threads ({off})"] if off else []),
        read_threads=prefetch.read_ahead_threads(cfg),
        darshan_logs=sorted({x for x in comm.allgather(darshan.active_log()) if x}),
        bucket_bounds=engines.hist_bucket_bounds().tolist(), started=t0)
    rows = comm.gather(metrics.per_rank_row(rank, my_startup, epochs), root=0)
    out_dir = cfg.output.folder
    if cfg.io.keep_oplog:
        oplog_format.save(out_dir, rank, oplogs, log.origin_mono_ns, window,
                          (job[0], engines.mono_ns()))
    if rank == 0:
        outputs.write_results(out_dir, summary, metrics.per_rank_header(epochs), rows)
        status.unguard_status()
        status.set_status(out_dir, "complete")
        checkpoint_lock.release()
        outputs.release(out_dir)
    else:
        status.unguard_status()
        outputs.owned = None
    comm.Barrier()
    return summary

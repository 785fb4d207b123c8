"""A whole run on every rank: check, make the dataset if it is missing, train, reduce the
measurements across ranks (dlio_mpi.run.metrics), and write the outputs (rank 0, in the run's own
folder inside output.folder: summary.json in the DLIO layout, the configuration and overrides
as DLIO records them, per-rank CSV, the log)."""
import os
import time

import numpy as np
import yaml

from dlio_mpi import backends, engines
from dlio_mpi.run import collective
from dlio_mpi.config import loader as config
from dlio_mpi.run import darshan
from dlio_mpi.data import generation as datagen
from dlio_mpi.files import folder_lock
from dlio_mpi.config import memory_check
from dlio_mpi.run import metrics
from dlio_mpi.run import oplog_format
from dlio_mpi.run import outputs
from dlio_mpi.run import training_loop as pipeline
from dlio_mpi.readers import prefetch
from dlio_mpi.run import progress
from dlio_mpi.run import rank_deaths
from dlio_mpi.run import facts as run_facts
from dlio_mpi.files import safe_files
from dlio_mpi.run import status
from dlio_mpi.run import summary_layout
from dlio_mpi.acceptance import run_metadata
from dlio_mpi.run.metrics import reduce_epochs, startup_figures
from dlio_mpi.checkpoint import lock as checkpoint_lock
from dlio_mpi.checkpoint import schedule
from dlio_mpi.files.nearest_folder import existing_folder


def prepare(cfg, comm, started, overrides=()):
    """Output directory (the run's own folder in it, with the configuration and overrides as
    DLIO records them) and dataset, agreed on by every rank. Returns (files generated, the
    run's folder, rank 0's log file handler or None)."""
    rank = comm.Get_rank()
    if cfg.workflow.train:
        config.check_ranks(cfg, comm.Get_size())
    out_dir = cfg.output.folder
    error = run_dir = log_file = None
    if rank == 0:
        try:
            os.makedirs(out_dir, exist_ok=True)
            probe = os.path.join(out_dir, ".write_probe")
            safe_files.create(probe).close()
            os.unlink(probe)
            outputs.acquire(out_dir)
            outputs.clear_results(out_dir)
            run_dir = outputs.new_run_folder(out_dir, started)
            status.set_status(out_dir, "running", ranks=comm.Get_size(),
                              run_folder=os.path.basename(run_dir))
            status.guard_status(out_dir)
            log_file = progress.open_log_file(run_dir)
            progress.log.info(f"run on {comm.Get_size()} ranks: results in {run_dir}")
            write_configuration(run_dir, cfg, overrides)
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
    run_dir = comm.bcast(run_dir, root=0)
    owner = comm.bcast(outputs.owned if rank == 0 else None, root=0)
    if rank != 0:
        outputs.owned = owner
        status.guard_status_beside(out_dir, rank)
    rank_deaths.gather(comm)
    if cfg.workflow.checkpoint:
        schedule.size_of(cfg, comm.Get_size())       # a ConfigError before any I/O
    if not cfg.workflow.train:
        memory_check.check(cfg, comm)
        return 0, run_dir, log_file
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
        t0 = time.perf_counter()
        generated = comm.allreduce(datagen.generate(cfg, comm, say=True))
        progress.log.info(f"dataset generated: {generated} files written in "
                          f"{time.perf_counter() - t0:.1f} s")
    if cfg.io.check_dataset and not cfg.io.write_first:
        datagen.check(cfg, comm)
    if backends.of(cfg).direct:
        error = bad_value = None
        try:
            data = cfg.dataset.data_folder
            if cfg.io.write_first:      # the folder the write phase makes, or its parent's
                data = existing_folder(data)
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
    return generated, run_dir, log_file


def write_configuration(run_dir, cfg, overrides):
    """The run's configuration and overrides as DLIO records them: config.yaml (the workload
    under `workload:`) and overrides.yaml (a list of Hydra overrides) in
    summary_layout.CONFIG_FOLDER, with Hydra's own folder name linked to it."""
    folder = os.path.join(run_dir, summary_layout.CONFIG_FOLDER)
    os.mkdir(folder)
    safe_files.write_whole(os.path.join(folder, "config.yaml"),
                           yaml.safe_dump(summary_layout.dlio_config(cfg), sort_keys=False))
    safe_files.write_whole(os.path.join(folder, "overrides.yaml"),
                           yaml.safe_dump(summary_layout.dlio_overrides(overrides)))
    safe_files.replace_link(os.path.join(run_dir, summary_layout.HYDRA_FOLDER),
                            summary_layout.CONFIG_FOLDER)


def run(cfg, comm, echo=print, job_start_ns=None, overrides=(), checkpoint_results=None):
    """The main job (overrides: the command line's, recorded with the run). Returns the
    summary (on every rank). checkpoint_results, a list, receives this rank's
    CheckpointResult of each checkpoint of the checkpoint-only mode."""
    t0 = comm.bcast(time.time(), root=0)
    # the job as Darshan covers it, from MPI_Init on: on the op log's clock
    job = [engines.mono_ns() if job_start_ns is None else int(job_start_ns), 0]
    generated, run_dir, log_file = prepare(cfg, comm, t0, overrides)
    try:
        return _run(cfg, comm, t0, job, generated, run_dir, checkpoint_results, overrides)
    finally:
        progress.close_log_file(log_file)


def _run(cfg, comm, t0, job, generated, run_dir, checkpoint_results=None, overrides=()):
    rank, size = comm.Get_rank(), comm.Get_size()
    log = engines.OpLog(cfg.io.oplog_capacity)
    shown = progress.RunProgress(cfg, size) if rank == 0 else None
    facts = run_facts.run_facts(cfg, comm)
    hosts = run_facts.host_figures(comm)
    if rank == 0:
        for line in facts["warnings"]:
            progress.log.warning(line)
    window = [engines.mono_ns(), 0]     # the training part, on the op log's clock
    if cfg.workflow.train:
        try:
            epochs, oplogs, first_batch, checkpoints = pipeline.run_epochs(cfg, comm, log,
                                                                           shown)
        finally:
            if shown:
                shown.close()
    else:
        epochs, oplogs, first_batch = [], [], None
        checkpoints = schedule.checkpoint_only(cfg, comm, log, facts["ranks_per_host_max"],
                                               progress.checkpoint_line if rank == 0 else None,
                                               mine=checkpoint_results)
        if cfg.io.keep_oplog:       # the checkpoints' writes and reads, as one phase
            log.finalize()
            oplogs.append(("checkpoint", {k: np.array(v) for k, v in log.arrays().items()}))
    window[1] = engines.mono_ns()
    startup, my_startup = startup_figures(comm, first_batch)
    everything = reduce_epochs(epochs, comm)
    off = prefetch.read_ahead_off(cfg)
    summary = metrics.summary(
        cfg, size, everything, checkpoints, facts=facts, startup=startup, generated=generated,
        not_emulated=list(cfg.not_emulated) + ([f"reader.read_threads ({off})"] if off else []),
        read_threads=prefetch.read_ahead_threads(cfg),
        darshan_logs=sorted({x for x in comm.allgather(darshan.active_log()) if x}),
        bucket_bounds=engines.hist_bucket_bounds().tolist(), started=t0, hosts=hosts)
    rows = comm.gather(metrics.per_rank_row(rank, my_startup, epochs), root=0)
    out_dir = cfg.output.folder
    if cfg.io.keep_oplog:
        oplog_format.save(run_dir, rank, oplogs, log.origin_mono_ns, window,
                          (job[0], engines.mono_ns()))
    if rank == 0:
        outputs.write_results(run_dir, summary, metrics.per_rank_header(epochs), rows)
        run_metadata.write(cfg, summary, run_dir, overrides, t0, time.time())
        status.unguard_status()
        status.set_status(out_dir, "complete")
        checkpoint_lock.release()
        outputs.release(out_dir)
    else:
        status.unguard_status()
        outputs.owned = None
    comm.Barrier()
    return summary

"""The per-rank training loop: each epoch, read the rank's batches through the configured
interface (a reader_protocol.BatchReader, the only thing the loop asks of its reader), emulate
compute, join the gradient exchange, and measure."""
import time

import numpy as np

from dlio_mpi import engines
from dlio_mpi.readers import access
from dlio_mpi.readers import choice as reader_choice
from dlio_mpi.data import sampler
from dlio_mpi.run import reading_ranks
from dlio_mpi.run import steploop
from dlio_mpi.run import sysinfo
from dlio_mpi.run import compute_time as timing
from dlio_mpi.run.exchange import Exchange
from dlio_mpi.checkpoint import schedule


def _log_totals(log):
    """(bytes, operations, histogram) of the reads in the finalized op log and its overflow.
    HDF5 through sec2 is counted at the file system: the reads libhdf5 issues (logged by the
    logging driver as POSIX reads, metadata included), not its H5Dread calls."""
    log.finalize()
    ops = log.arrays()
    reads = (ops["op"] == engines.OP["read"]) & (ops["iface"] != engines.IFACE["hdf5_sec2"])
    over = log.overflow_totals().get("read", (0, 0))
    over_h5 = log.overflow_totals(iface="hdf5_sec2").get("read", (0, 0))
    hist = log.histogram(op="read") - log.histogram(op="read", iface="hdf5_sec2")
    return (int(ops["bytes"][reads].sum()) + over[1] - over_h5[1],
            int(reads.sum()) + over[0] - over_h5[0], hist)


def step_histogram(seconds):
    """Counts of step durations in the op log's latency buckets (uint64, summable)."""
    buckets = [engines.hist_bucket(int(x * 1e9)) for x in seconds]
    return np.bincount(buckets, minlength=engines.HIST_BUCKETS).astype(np.uint64)


def load_into_memory(cfg, comm, reader, log):
    """io.read_type=memory: the rank reads its whole input at start, file by file, in
    transfer-size pieces, as applications that load a CSV or NPZ dataset do. Returns the load
    phase's numbers, as an epoch entry with epoch=-1."""
    share = sampler.memory_share(cfg.num_samples, comm.Get_size(), reading_rank(cfg, comm),
                                 cfg.io.layout)
    files, local = reader.data.locate(share)
    comm.Barrier()
    t0 = time.perf_counter()
    for f in np.unique(files):
        reader.load(int(f), local[files == f])
    wall = time.perf_counter() - t0
    moved, nops, hist = _log_totals(log)
    return {"phase": "load", "epoch": -1, "steps": 0, "samples": int(share.size), "wall_s": wall,
            "io_wait_s": wall, "compute_s": 0.0, "first_step_io_s": wall, "bytes_moved": moved,
            "read_ops": nops, "latency_hist": hist, "step_wait_hist": step_histogram([])}


def _phase(phase, epoch, plan, wall, io_wait, compute, first_io, waits, log):
    moved, nops, hist = _log_totals(log)
    return {"phase": phase, "epoch": epoch, "steps": len(plan), "samples": int(plan.size),
            "wall_s": wall, "io_wait_s": io_wait, "compute_s": compute,
            "first_step_io_s": first_io, "bytes_moved": moved, "read_ops": nops,
            "latency_hist": hist, "step_wait_hist": step_histogram(waits)}


def reading_rank(cfg, comm):
    """The rank whose share this rank reads (reader.rank_shift)."""
    return (comm.Get_rank() + cfg.reader.rank_shift) % comm.Get_size()


def epoch_plan(cfg, comm, reader, batch, epoch, shuffle):
    """(plan, files): the (steps, batch) samples this rank consumes in an epoch, and with
    reader.access=stream the files it streams, in order (those of the rank reader.rank_shift
    names)."""
    rank, size = reading_rank(cfg, comm), comm.Get_size()
    data = reader.data
    if cfg.reader.access == "stream":
        files = access.stream_files(data.num_files, size, rank, epoch, cfg.train.seed,
                                    cfg.reader.file_shuffle != "off")
        steps = access.stream_steps(data.num_files, data.spf, size, batch)
        return access.stream_plan(files, data.spf, steps, batch, cfg.reader.interleave), files
    plan = sampler.rank_samples(data.num_samples, size, rank, batch, epoch, cfg.train.seed,
                                shuffle, cfg.io.remainder, cfg.io.layout, cfg.io.read_type,
                                data.spf, cfg.reader.file_shuffle != "off",
                                cfg.reader.sharding, cfg.reader.shuffle_scope,
                                cfg.reader.sharding_block, cfg.reader.shuffle_block,
                                cfg.reader.shuffle_window)
    return plan, None


def read_overrun(cfg, comm, reader, epoch, shuffle):
    """reader.epoch_overrun: the first steps' batches of epoch ``epoch`` (counted from 0; the
    one after the last too) read and dropped, with no compute, as a prefetching input
    pipeline reads on past an epoch's end before its iterator is dropped; the epoch, when it
    comes, reads them again. Outside the epochs' timing (the bytes are counted as moved)."""
    seed_epoch = epoch if cfg.train.seed_change_epoch else 0
    plan, files = epoch_plan(cfg, comm, reader, cfg.reader.batch_size, seed_epoch, shuffle)
    ahead = plan[:cfg.reader.epoch_overrun]
    reader.start_epoch(ahead, files)
    for batch in ahead:
        reader.read_batch(batch)


def computing(reader, start, seconds):
    """A step's emulated compute: the accelerator works ``seconds`` from ``start`` (its batch
    is there) while the rank's thread queues the next reads (reader.refill), as a training
    loop's host work overlaps the accelerator's; returns the compute time it counts: until
    the end of the sleep (oversleep included), or ``seconds`` when the host's own work
    outlasted them."""
    reader.refill()
    if seconds <= 0:
        return 0.0
    left = start + seconds - time.perf_counter()
    if left <= 0:
        return float(seconds)
    time.sleep(left)
    return time.perf_counter() - start


def evaluates_after(evaluation, epoch):
    """Whether an evaluation phase follows epoch ``epoch`` (counted from 1): the first after
    evaluation.eval_after_epoch, then every evaluation.epochs_between_evals epochs, as the
    DLIO benchmark schedules them."""
    first = evaluation.eval_after_epoch
    return epoch >= first and (epoch - first) % evaluation.epochs_between_evals == 0


def evaluate(cfg, comm, log, epoch, rng):
    """An evaluation phase: every rank reads its share of the evaluation files in batches of
    reader.batch_size_eval, with evaluation.eval_time of compute per step, then all meet."""
    reader = reader_choice.make_reader(cfg, comm, log, "valid")
    bs = cfg.reader.batch_size_eval
    if cfg.reader.access == "stream":
        plan, files = epoch_plan(cfg, comm, reader, bs, epoch, False)
    else:
        plan = sampler.rank_samples(reader.data.num_samples, comm.Get_size(), comm.Get_rank(),
                                    bs, epoch, cfg.train.seed, False, cfg.io.remainder,
                                    cfg.io.layout)
        files = None
    sleeps = timing.draw(cfg.evaluation.eval_time, rng, len(plan),
                         cfg.evaluation.eval_time_stdev)
    waits = np.zeros(len(plan))
    comm.Barrier()
    reader.start_epoch(plan, files)
    t_start = time.perf_counter()
    io_wait = compute = 0.0
    for step, batch in enumerate(plan):
        t0 = time.perf_counter()
        reader.read_batch(batch)
        t1 = time.perf_counter()
        waits[step] = t1 - t0
        io_wait += t1 - t0
        compute += computing(reader, t1, sleeps[step])
    comm.Barrier()
    wall = time.perf_counter() - t_start
    # closed after success only: a failing rank must not enter a collective close of shared
    # files while the others wait in another call; the caller ends the job
    reader.close()
    return _phase("eval", epoch, plan, wall, io_wait, compute,
                  waits[0] if len(plan) else 0.0, waits, log)


def run_epochs(cfg, comm, log, progress=None):
    """Run the training loop (with its evaluation phases); returns this rank's numbers per
    phase ("load", "train", "eval"), the op log arrays of each phase (with io.keep_oplog),
    and when the first batch arrived. progress (progress.RunProgress, called on rank 0):
    after steps, and with each phase and checkpoint as it ends."""
    rank, size = comm.Get_rank(), comm.Get_size()
    phases, oplogs, checkpoints = [], [], []

    def keep_log(name):
        """The op log's entries so far, as phase `name` (with io.keep_oplog); then a new log."""
        if cfg.io.keep_oplog:
            log.finalize()
            oplogs.append((name, {k: np.array(v) for k, v in log.arrays().items()}))
        log.reset()

    def said(what, entry):
        """progress's line for a phase or a checkpoint that ended (rank 0, where it says)."""
        hook = getattr(progress, what, None) if rank == 0 else None
        if hook:
            hook(entry)

    # the ranks that read (reader.reading_ranks): their own communicator, None on the others
    readers, idle = reading_ranks.split(cfg, comm)
    if cfg.io.write_first:
        from dlio_mpi.data import write_phase
        phases.append(write_phase.write_dataset(cfg, readers, log) if readers else
                      reading_ranks.idle_phase("write", -1, log))
        if readers is not comm:
            comm.Barrier()      # the data is whole before any rank trains
        said("phase_done", phases[-1])
        keep_log("write")
    reader = reader_choice.make_reader(cfg, readers, log) if readers else reading_ranks.NoReads()
    if idle is not None and cfg.reader.idle_ranks_open:
        reading_ranks.open_once(cfg, idle, log)
    exchange = Exchange(comm, cfg.io.allreduce_bytes, cfg.io.exchange_wait)
    rng = np.random.default_rng([cfg.train.seed, rank])
    shuffle = cfg.reader.sample_shuffle != "off"
    max_steps = cfg.train.total_training_steps
    done_steps = 0
    in_memory = cfg.io.read_type == "memory"
    first_batch = None
    ckpt = schedule.make(cfg, comm, log) if cfg.workflow.checkpoint else None
    ckpt_size = schedule.size_of(cfg, size) if ckpt else None

    def write_checkpoint(step, epoch):
        res = ckpt.write(len(checkpoints), ckpt_size)
        entry = schedule.record(res, len(checkpoints), "write")
        entry.update(step=step, epoch=epoch + 1)       # numbered from 1, as on screen
        checkpoints.append(entry)
        said("checkpoint_done", entry)
        return res.duration

    def close_phase(entry):
        phases.append(entry)
        said("phase_done", entry)
        keep_log(f"{entry['phase']}{entry['epoch']}")

    if in_memory:
        close_phase(load_into_memory(cfg, readers, reader, log) if readers else
                    reading_ranks.idle_phase("load", -1, log))
    for epoch in range(cfg.train.epochs):
        if cfg.io.write_each_epoch and epoch > 0:
            # the files are made anew: the reader's handles of the old ones are given back
            reader.close()
            phases.append(write_phase.write_dataset(cfg, comm, log, epoch))
            said("phase_done", phases[-1])
            keep_log(f"write{epoch}")
            reader = reader_choice.make_reader(cfg, comm, log)
        seed_epoch = epoch if cfg.train.seed_change_epoch else 0
        if readers:
            plan, files = epoch_plan(cfg, readers, reader, cfg.reader.batch_size, seed_epoch,
                                     shuffle)
        else:
            plan, files = reading_ranks.idle_plan(cfg, size, cfg.reader.batch_size), None
        if max_steps >= 0:      # steps of each epoch, as the DLIO benchmark counts them
            plan = plan[:max_steps]
        sleeps = timing.draw(cfg.train.computation_time, rng, len(plan),
                             cfg.train.computation_time_stdev)
        reader.plan_epoch(plan, files)      # the emulator's bookkeeping, untimed
        # the C step loop where it applies (dlio_mpi.run.steploop); step 0 of the run in Python,
        # which notes when the first batch arrived
        py_steps, c_only = len(plan), False
        if steploop.usable(cfg, reader, plan, done_steps, in_memory):
            py_steps = 1 if first_batch is None else 0
            c_only = py_steps == 0
        # the epoch's start: ranks released at once (a blocking MPI barrier's spinning ranks
        # took the cores from each other), then only what the application does; the C loop
        # waits for that barrier and queues its first batches itself, under the rank's
        # priority (dlio_mpi.run.steploop)
        c_sync = c_only and steploop.syncs(exchange)
        if not c_sync:
            exchange.sync()
        if c_only:
            reader.start_epoch(plan, files, fill=False)
        else:
            reader.start_epoch(plan, files)
        t_start = time.perf_counter()
        io_wait = compute = first_io = ckpt_s = 0.0
        waits = np.zeros(len(plan))
        for step, batch in enumerate(plan[:py_steps]):
            t0 = time.perf_counter()
            if not in_memory:
                reader.read_batch(batch)
                busy = reader.preprocess_inline(len(batch))
                if busy > 0:
                    time.sleep(busy)
            t1 = time.perf_counter()
            if step == 0:
                first_io = t1 - t0
                if first_batch is None:
                    first_batch = (time.time(), sysinfo.cpu_seconds())
            io_wait += t1 - t0
            waits[step] = t1 - t0
            compute += computing(reader, t1, sleeps[step])
            exchange()
            if ckpt and schedule.due_after_step(cfg, step + 1, done_steps + step + 1):
                ckpt_s += write_checkpoint(done_steps + step + 1, epoch)
            if progress and rank == 0:
                progress(epoch, step + 1, len(plan))
        if py_steps < len(plan):
            shown = (lambda at: progress(epoch, at, len(plan))) if progress and rank == 0 \
                else None
            w, c, _ = steploop.run(reader, exchange, sleeps, shown, cfg.io.rank_priority,
                                   c_sync)
            if c_sync:
                t_start = reader.ep.t_start_ns * 1e-9     # time.perf_counter's clock
            if c_only:          # the epoch ends with its last step, not when Python is back
                t_end = reader.ep.t_end_ns * 1e-9
            if py_steps == 0:
                first_io = float(w[0])
            waits[py_steps:] = w[py_steps:]
            io_wait += float(w[py_steps:].sum())
            compute += float(c[py_steps:].sum())
            if shown:
                shown(len(plan))
        # checkpoints during the epoch are not training time (AU)
        wall = (t_end if c_only else time.perf_counter()) - t_start - ckpt_s
        done_steps += len(plan)
        close_phase(_phase("train", epoch, plan, wall, io_wait, compute, first_io, waits,
                           log))
        if cfg.reader.epoch_overrun:
            read_overrun(cfg, comm, reader, epoch + 1, shuffle)
            keep_log(f"overrun{epoch}")     # its reads, in the op log as Darshan has them
        if ckpt and schedule.due_after_epoch(cfg, epoch + 1):
            write_checkpoint(done_steps, epoch)
            keep_log(f"checkpoint{epoch}")      # its writes, in the op log as Darshan has them
        if cfg.workflow.evaluation and cfg.dataset.num_files_eval > 0 \
                and evaluates_after(cfg.evaluation, epoch + 1):
            close_phase(evaluate(cfg, comm, log, epoch, rng))
    # closed after success only: a failing rank must not enter a collective close of shared
    # files while the others wait in another call; the caller ends the job
    reader.close()
    exchange.close()
    for mine in (readers, idle):
        if mine is not None and mine is not comm:
            mine.Free()
    return phases, oplogs, first_batch, checkpoints

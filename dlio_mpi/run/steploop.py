"""A training epoch's steps run by the C step loop (engines.EpochRequests.run, csrc/run/steploop.c):
the rank's main thread spends almost no CPU per step, so that more ranks than cores keep their
emulated accelerators busy. A step does what dlio_mpi.run.training_loop.run_epochs does (wait for the
batch, queue the next ones, compute, the gradient exchange) and records its wait, compute and
exchange times; the loop comes back to Python at the epoch's end, at least every 0.1 s (signal
handlers, progress), when a step's files are to be opened, for an exchange that is not the
node barrier (each step), and on a failed or short read (its error as the Python loop gives)."""
import os

import numpy as np

from dlio_mpi import engines

DEFER_PER_RANK_S = 100e-6


def usable(cfg, reader, plan, done_steps, in_memory):
    """Whether this epoch runs in the C loop: read-ahead threads with the epoch's requests
    built (prefetch.PrefetchReader, or a stream's pattern_reader.PatternReader), and no
    checkpoint due after one of its steps."""
    if in_memory or reader.ep is None:
        return False
    if len(plan) == 0 or reader.ep.nsteps != len(plan):
        return False
    n = cfg.checkpoint.steps_between_checkpoints
    # schedule.due_after_step: a multiple of n among the epoch's steps, counted from 1 in the
    # epoch or over the run
    first = 0 if cfg.checkpoint.step_count == "epoch" else done_steps
    return not (cfg.workflow.checkpoint and n > 0 and (first + len(plan)) // n > first // n)


def defer_s(exchange):
    """How far into a step's compute its rank queues the next batches (at most half the
    compute): the time the node's ranks take, one after another on its CPUs, to take their
    batches once the exchange's barrier releases them (DEFER_PER_RANK_S each). Queued at
    once, a batch's read threads, woken at the rank's priority, take the CPUs from ranks that
    have not yet started their compute, and the last one to start sets the next barrier
    (scripts/bench-accelerators, resnet50 at 16 ranks on 2 cores: AU 86-88 % queueing at
    once, 97 % 2 ms into the compute). At once with a CPU per rank (no rank waits for another's
    CPU; the deferral would cost the rank's thread one more wake-up a step) and with an
    exchange other than the node barrier."""
    node = getattr(exchange, "node", None)
    cpus = max(os.cpu_count() or 1, 1)
    if node is None or node.Get_size() <= cpus:
        return 0.0
    return DEFER_PER_RANK_S * node.Get_size() / cpus


def rank_priority(ep, priority):
    """The SCHED_FIFO priority of the rank's thread in an epoch's C loop: io.rank_priority
    where no step of the epoch returns to Python to open its files, else 0 (the thread's own
    policy). Files opened within the steps are the data loader's host work, done by the rank's
    thread between its steps; under SCHED_FIFO, every rank doing it at once after the barrier
    took the cores from the read threads of the batches the next steps wait for (cosmoflow, a
    new file a step, at 16 ranks on 2 cores: AU 67.8 % under SCHED_FIFO, 73.1 % without)."""
    return priority if priority and not ep.prepare.any() else 0


def syncs(exchange):
    """Whether the C loop itself waits for the barrier that starts an epoch (run's sync): with
    a node barrier on one node, which it waits under the rank's priority."""
    return getattr(exchange, "barrier", None) is not None and getattr(exchange, "nodes", 1) == 1


def run(reader, exchange, sleeps, on_check=None, priority=0, sync=False):
    """The epoch's steps (reader.start_epoch done, no step consumed); returns the per-step
    (wait, compute, exchange) seconds. on_check(step) runs whenever the loop comes back to
    Python between steps; priority: the SCHED_FIFO priority of the thread inside the C loop
    (io.rank_priority; refused, the loop runs without it, as run_facts notes) in an epoch
    whose files are all open when it starts (see rank_priority); sync (where syncs(exchange)):
    the loop begins with the barrier that starts the epoch, and reader.ep.t_start_ns is when
    it released the rank."""
    ep = reader.ep
    barrier = exchange.barrier if getattr(exchange, "nodes", 1) == 1 else None
    ep.start_loop(np.maximum(np.asarray(sleeps, dtype=np.float64), 0.0) * 1e9, barrier,
                  defer_s(exchange), rank_priority(ep, priority), sync)
    timer = engines.mono_ns
    try:
        while True:
            rc = ep.run()
            if rc == engines.STEPS_DONE:
                break
            if rc == engines.STEPS_PREPARE:
                reader.prepare(ep.nsub)
            elif rc == engines.STEPS_EXCHANGE:
                t0 = timer()
                exchange()
                ep.exchange_s[ep.step] = (timer() - t0) * 1e-9
            elif rc == engines.STEPS_SHORT:
                raise reader.short_batch(ep.step)
            elif on_check is not None:
                on_check(ep.step)
    finally:
        ep.leave()      # an error raised in Python between calls
    return ep.wait_s.copy(), ep.compute_s.copy(), ep.exchange_s.copy()

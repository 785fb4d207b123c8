"""Checkpoints in a run: their size from the configuration, when they are written during
training, and the checkpoint-only mode (write N, then read N). The writing and reading itself is
dlio_mpi.checkpoint.writer's."""
import time

from dlio_mpi.checkpoint import size as checkpoint_size
from dlio_mpi.config.loader import ConfigError
from dlio_mpi.config.schema import SCHEMA


def size_of(cfg, world):
    """The checkpoint's size object for a job of world ranks: a preset (checkpoint.preset), a
    transformer (model.transformer with model.num_layers), or model.model_size_bytes written by
    checkpoint.writers. With checkpoint.mode=subset the world ranks play the first ranks of a
    job of TP x PP x model.parallelism.data ranks and write their shares only. Raises
    ConfigError when nothing sizes it."""
    if cfg.checkpoint.mode == "subset":
        return _subset_of(cfg, world)
    return _whole(cfg, world)


def _whole(cfg, world):
    par = dict(cfg.model.parallelism)
    given = par != SCHEMA["model"]["parallelism"].default
    tp, pp = int(par.get("tensor", 1)), int(par.get("pipeline", 1))
    zero = int(par.get("zero_stage", 0))
    ck = cfg.checkpoint
    if ck.preset != "none" and not given:
        _, own, _ = checkpoint_size.LLAMA3[ck.preset]
        tp, pp = own.tp, own.pp
    if world % (tp * pp):
        raise ConfigError(f"model.parallelism tensor={tp} x pipeline={pp} does not divide "
                          f"the {world} ranks")
    layout = checkpoint_size.Layout.for_world(world, tp, pp)
    if ck.preset != "none":
        return checkpoint_size.preset(ck.preset, layout=layout,
                                      zero_stage=zero if given else None)
    tr = dict(cfg.model.transformer)
    if tr and cfg.model.num_layers > 0:
        try:
            model = checkpoint_size.Transformer(
                int(tr["hidden_size"]), int(cfg.model.num_layers), int(tr["vocab_size"]),
                int(tr["ffn_hidden_size"]), int(tr["num_attention_heads"]),
                int(tr.get("num_kv_heads", tr["num_attention_heads"])))
        except KeyError as e:
            raise ConfigError(f"model.transformer needs {e.args[0]}") from None
        except ValueError as e:
            raise ConfigError(f"model.transformer: {e}") from None
        return checkpoint_size.TransformerCheckpoint(model, layout, zero)
    if cfg.model.model_size_bytes > 0:
        # model_optimizer keeps the two parts apart also when the same ranks write both
        opt = ck.optimizer_writers if ck.optimizer_writers != "same" else \
            ck.writers if ck.format == "model_optimizer" else ""
        return checkpoint_size.FlatCheckpoint(
            cfg.model.model_size_bytes, ck.optimizer_multiplier, ck.writers, layout, opt,
            ck.writer_stride, ck.writer_first)
    if ck.format == "four_files":
        return 0
    raise ConfigError("workflow.checkpoint=true needs a size: model.model_size_bytes, "
                      "model.transformer with model.num_layers, or checkpoint.preset")


def _subset_of(cfg, world):
    par = dict(cfg.model.parallelism)
    tp, pp = int(par.get("tensor", 1)), int(par.get("pipeline", 1))
    dp = int(par.get("data", -1))
    if dp < 1:
        raise ConfigError("checkpoint.mode=subset needs model.parallelism.data: the "
                          "data-parallel degree of the whole job whose first ranks this "
                          "job plays")
    whole = tp * pp * dp
    if world > whole:
        raise ConfigError(f"checkpoint.mode=subset: {world} ranks are more than the whole "
                          f"job's TP {tp} x PP {pp} x DP {dp} = {whole}")
    full = _whole(cfg, whole)
    if not hasattr(full, "rank_bytes"):      # four_files: every rank its own fixed files
        return full
    return checkpoint_size.SubsetCheckpoint(full, world)


def make(cfg, comm, log):
    from dlio_mpi.checkpoint.writer import Checkpointer     # imported when a run checkpoints
    from dlio_mpi.run.status import mark_stopped

    ck = cfg.checkpoint
    c = Checkpointer(
        comm, ck.checkpoint_folder, ck.format, direct=ck.odirect, xfer=ck.transfer_size,
        sync="fsync" if ck.fsync else "none", hints=cfg.io.mpiio_hints, oplog=log,
        record=True, read_pattern=ck.read_pattern, tensors=ck.tensors_per_file,
        write_pattern=ck.write_pattern,
        **({"chunk": ck.collective_transfer_size, "collective": ck.collective}
                        if ck.format in ("mpiio", "hdf5") else {}),
        **({"files": ck.files_per_rank} if ck.format == "file_per_rank" else {}))

    def mark_failed(message):      # before a checkpoint error ends the job (HDF5 + ROMIO)
        mark_stopped(cfg, "failed", message, rank=comm.Get_rank())
    c.before_abort = mark_failed
    return c


def due_after_step(cfg, step_of_epoch, step_of_run):
    """Both count from 1: a checkpoint after steps n, 2n, ... (n = steps_between_checkpoints)
    of each epoch (checkpoint.step_count=epoch, the DLIO benchmark's count, starting again with
    every epoch) or of the run (step_count=run)."""
    n = cfg.checkpoint.steps_between_checkpoints
    step = step_of_epoch if cfg.checkpoint.step_count == "epoch" else step_of_run
    return cfg.workflow.checkpoint and n > 0 and step % n == 0


def due_after_epoch(cfg, epoch):
    """epoch counts from 1: checkpoints at checkpoint_after_epoch, then every
    epochs_between_checkpoints epochs (unless steps_between_checkpoints rules)."""
    ck = cfg.checkpoint
    if not cfg.workflow.checkpoint or ck.steps_between_checkpoints > 0:
        return False
    return epoch >= ck.checkpoint_after_epoch and \
        (epoch - ck.checkpoint_after_epoch) % ck.epochs_between_checkpoints == 0


def record(result, index, op):
    """A checkpoint's figures for the summary (the same on every rank)."""
    return {"index": index, "op": op, "bytes": int(result.total_bytes),
            "fsyncs": int(result.total_fsyncs), "duration_s": float(result.duration),
            "bandwidth_bytes_per_s": float(result.bandwidth), "writers": int(result.movers),
            "publish_s": float(result.publish_duration)}


def checkpoint_only(cfg, comm, log, ranks_per_host, on_done=None, mine=None):
    """Write checkpoint.num_checkpoints_write checkpoints, then read
    checkpoint.num_checkpoints_read back; with recovery_rank_shift a rank reads the shard of
    the rank one host further on (one rank further on a single host). num_checkpoints_write=0
    writes none and reads checkpoints 0 .. num_checkpoints_read-1 that an earlier run of the
    same size wrote to checkpoint_folder (a restart: their pages need not be cached).
    on_done(record), when given, runs after each checkpoint (for its progress line); mine, a
    list, receives this rank's CheckpointResult of each."""
    size = size_of(cfg, comm.Get_size())
    ck = cfg.checkpoint
    writes = ck.num_checkpoints_write if ck.num_checkpoints_write >= 0 else 1
    reads = ck.num_checkpoints_read if ck.num_checkpoints_read >= 0 else writes
    if writes:
        reads = min(reads, writes)
    shift = 0
    if ck.recovery_rank_shift and comm.Get_size() > 1:
        shift = ranks_per_host if ranks_per_host < comm.Get_size() else 1
    c = make(cfg, comm, log)
    out = []
    def done(result, i, op):
        out.append(record(result, i, op))
        if mine is not None:
            mine.append(result)
        if on_done:
            on_done(out[-1])
    # the training between two checkpoints, as the DLIO benchmark's checkpoint-only mode
    # computes it before each write and each read
    pause = max(0.0, ck.time_between_checkpoints)
    for i in range(writes):
        time.sleep(pause)
        done(c.write(i, size), i, "write")
    for i in range(reads):
        time.sleep(pause)
        done(c.read(i, size, shift=shift, verify=ck.verify), i, "read")
    return out

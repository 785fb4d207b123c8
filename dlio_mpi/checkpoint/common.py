"""What the checkpoint writer's parts share: formats, op-log file ids, the error every rank
raises, a checkpoint's result, and small helpers."""
import os
from dataclasses import dataclass

from dlio_mpi import engines
from dlio_mpi.config.schema import (CHECKPOINT_READ_PATTERNS, CHECKPOINT_WRITE_PATTERNS,
                                    CHECKPOINT_ZIP_FORMATS)
from dlio_mpi.run import collective
from dlio_mpi.run.oplog_format import CHECKPOINT_ID_BASE

FORMATS = ("file_per_rank", "mpiio", "hdf5", "four_files", "model_optimizer")
# model_optimizer: a rank's weights and its optimizer state, each in a file of its own
MODEL_OPTIMIZER_FILES = ("model", "optim")
FOUR_FILES = (("data", 4 << 20), ("meta", 64 << 10), ("index", 4 << 10), ("state", 1 << 10))
SYNCS = ("fsync", "fdatasync", "none")
READ_PATTERNS, ZIP_FORMATS = CHECKPOINT_READ_PATTERNS, CHECKPOINT_ZIP_FORMATS
WRITE_PATTERNS = CHECKPOINT_WRITE_PATTERNS
# numpy.save's header (format 1.0: magic, version, header length, the dict padded to 128 B)
NUMPY_HEADER = 128
FILE_ID_BASE = CHECKPOINT_ID_BASE     # op-log file ids: oplog_format.checkpoint_id


class CheckpointError(collective.RankError):
    """A checkpoint failed on some rank; raised on every rank with the same one-line message.
    errors: [(rank, message)] of every failing rank."""

    def __init__(self, message, errors):
        super().__init__(message, int(errors[0][0]), errors)


@dataclass(frozen=True)
class CheckpointResult:
    """One checkpoint write or read. This rank: bytes, fsyncs (of files, counted when issued
    and successful), dir_fsyncs, seconds (from the agreed start to this rank's end, less the
    time spent making and verifying content), files, publish (seconds of a write's seconds
    spent publishing it once every rank's files are whole: the renames from .part and the
    directory fsync, a cost a tool writing in place does not pay). Whole job (reduced with
    MPI): total_bytes, total_fsyncs, movers (ranks that moved bytes), duration (the slowest
    rank's seconds), publish_duration (the largest publish) and bandwidth (total_bytes /
    duration, bytes/s)."""
    index: int
    op: str
    fmt: str
    bytes: int
    fsyncs: int
    dir_fsyncs: int
    seconds: float
    files: tuple
    total_bytes: int
    total_fsyncs: int
    movers: int
    duration: float
    publish: float = 0.0
    publish_duration: float = 0.0

    @property
    def bandwidth(self):
        return self.total_bytes / self.duration if self.duration > 0 else 0.0


def _line(e):
    """One line for an exception, with the file name where Python's OSError has one."""
    if isinstance(e, OSError) and not isinstance(e, engines.EngineError) and e.filename:
        return f"{e.filename}: {e.strerror}"
    return " ".join(str(e).split()) or type(e).__name__


def _unlink(*paths):
    for p in paths:
        try:
            os.unlink(p)
        except OSError:
            pass

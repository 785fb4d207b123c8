"""Checkpoints: their size (size), bytes (content), writing and reading through the native
engines with every call collective (writer, with posix_io and shared_io for the formats' files),
when a run writes them (schedule) and the folder's record of them (record).

    from dlio_mpi.checkpoint import Checkpointer, preset
    size = preset("llama3_8b")                       # 8 ranks: TP 1 x PP 1 x DP 8, ZeRO 3
    ck = Checkpointer(comm, "/scratch/ckpt", "file_per_rank", direct=True, oplog=log)
    res = ck.write(step, size)                       # one checkpoint: res.duration, .bandwidth
    ck.read(step, size, shift=1, verify=True)        # read another rank's shard back

Formats (``fmt``):
  file_per_rank  each writing rank one file ``<prefix>-<index>-r<rank>.bin`` through POSIX,
                 buffered or O_DIRECT: ``chunk`` bytes per engine call, split into
                 ``xfer``-byte pwrites.
  mpiio          one shared file ``<prefix>-<index>.bin``, rank shares in rank order (offsets
                 by exscan): ``chunk`` bytes per rank per MPI_File_write_at_all, every rank
                 joining every round (with nothing when it has nothing left), MPI_File_sync.
  hdf5           one shared file ``<prefix>-<index>.h5`` with a 1-D uint8 dataset "checkpoint"
                 of the total bytes, each rank's rows collectively through the MPI-IO driver,
                 ``chunk`` rows per H5Dwrite; HDF5 does not fsync, so after closing the file is
                 reopened with MPI-IO and MPI_File_sync'ed.
  four_files     the DLIO paper's pattern: every rank writes four files of 4 MiB, 64 KiB,
                 4 KiB and 1 KiB (``.data``, ``.meta``, ``.index``, ``.state``), each in one
                 write and fsynced.

O_DIRECT (``direct=True``, POSIX formats): aligned buffer; ``xfer`` must be a multiple of the
file system's O_DIRECT alignment (checked before any I/O). When a file's size is not a multiple
of it, the aligned part goes through O_DIRECT and the remaining tail through a second, buffered
descriptor (reads alike): no padding, the file has exactly its size, and one fsync covers both
(fsync flushes the inode).

Completion: a file is written as ``<name>.part``, fsynced and closed; once every rank is done
(agreed collectively) it is renamed to its final name (a shared file by rank 0, a file per rank
by its rank), and the directory is fsynced (``sync_dir``). A final name always holds a whole
file, and no file of a checkpoint has its final name before all its files are whole: a rank
that fails or dies during the writes leaves only ``.part`` files. A failed checkpoint leaves no
file.

Errors: every rank checks its inputs and directory and the outcome is agreed collectively before
any collective I/O; an error during the I/O is caught, the rank keeps joining the remaining
collective calls with nothing, and the outcome is agreed again after them. Every rank then
raises the same one-line CheckpointError naming the lowest failing rank and its path.
One exception: HDF5 (1.10) through ROMIO cannot finish a collective H5Dwrite or H5Dread that
failed on one rank, so there the rank whose call failed ends the job (collective.end_hdf5_job,
after ``before_abort(message)`` if set) instead of hanging. With ompio, and for plain MPI-IO
with either, every rank raises the same error. ompio reports a failed pwrite as a short write
without an error code: the bytes moved are checked against the bytes asked for.

The bytes are content.Content(index, writer): position-determined, so any reader verifies.

The names below are imported from their modules when first used, so that the size, content
and record modules (no MPI) load without mpi4py.
"""
import importlib

_HOMES = {
    "common": ("FORMATS", "FOUR_FILES", "SYNCS", "FILE_ID_BASE", "CheckpointError",
               "CheckpointResult"),
    "writer": ("Checkpointer", "write_then_read"),
    "content": ("Content", "Filler"),
    "size": ("FLAT", "GIB", "LLAMA3", "MLPERF_STORAGE_GIB", "PAGE", "PRESETS",
             "WRITER_POLICIES", "FlatCheckpoint", "Layout", "Transformer",
             "TransformerCheckpoint", "is_writer", "preset", "split", "stage_layers",
             "writer_ranks"),
}
_WHERE = {name: module for module, names in _HOMES.items() for name in names}
__all__ = sorted(_WHERE)


def __getattr__(name):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'dlio_mpi.checkpoint' has no attribute {name!r}")
    return getattr(importlib.import_module(f"dlio_mpi.checkpoint.{module}"), name)

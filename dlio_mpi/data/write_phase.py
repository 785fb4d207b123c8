"""io.write_first: the run writes the dataset it then reads, as a write-then-read benchmark
(IOR) does, through io.interface and in reader.transfer_size pieces, before the first epoch
(and with io.write_each_epoch again before every later one, as IOR's repetitions, -i N, write
then read each time): raw records here, HDF5 files through libhdf5 in dlio_mpi.data.write_hdf5.

Each rank writes the samples it reads in the first epoch, file by file in ascending order
(IOR writes its blocks in order, whatever order it reads them in), or, under
io.write_order=shuffled, its transfer-size pieces of a file in a seeded random order (IOR's -z,
within each CHUNK of the rank's samples, so that memory stays bounded); a sample read by several
ranks is written by the lowest of them, and samples nobody reads in the first epoch are dealt
to the ranks in turn, so that every byte of the dataset is written exactly once. Under
io.interface=mpiio_coll a shared file is written with one collective call per transfer-size
piece (ranks with fewer pieces join with none). The writes are in the op log (phase "write")
and in the summary; rank 0 writes the manifest marked in progress before the writes (after the
room and memory checks generation makes) and marks it complete after every rank has written, so
that a dataset whose writing failed is never taken for a whole one.

The engines (and with them MPI) are imported by the functions that write, never at import:
config validation imports this module before a rank re-executes itself under Darshan, and
MPI must not be initialized before that."""
import os
import time

import numpy as np

from dlio_mpi import backends, formats
from dlio_mpi.readers import access
from dlio_mpi.data import sampler
from dlio_mpi.run.collective import agree
from dlio_mpi.data.dataset import Dataset
from dlio_mpi.formats import content

CHUNK = 64 << 20        # content made and written in pieces of at most this many bytes


def writes_ranges(b):
    """Whether the write phase writes byte ranges through backend b."""
    return b.byte_ranges and not b.mapped


def writes_collective(b):
    """Whether the write phase can write one shared file through backend b in collective
    calls: MPI-IO, or libhdf5's MPI-IO driver."""
    return b.library == backends.MPIIO or b.hdf5_driver == "mpio"


def check(cfg):
    """The combinations io.write_first cannot do, as ConfigError lines."""
    from dlio_mpi.config.errors import ConfigError

    if not cfg.io.write_first:
        if cfg.io.write_each_epoch:
            raise ConfigError("io.write_each_epoch=true needs io.write_first=true")
        if cfg.io.write_fsync:
            raise ConfigError("io.write_fsync=true needs io.write_first=true")
        if cfg.io.write_fsync_per_write:
            raise ConfigError("io.write_fsync_per_write=true needs io.write_first=true")
        if cfg.io.write_order != "sequential":
            raise ConfigError(f"io.write_order={cfg.io.write_order} needs io.write_first=true")
        if cfg.io.write_collective:
            raise ConfigError("io.write_collective=true needs io.write_first=true")
        return
    if cfg.io.write_collective and (cfg.io.layout == "multi"
                                    or not writes_collective(backends.of(cfg))):
        raise ConfigError("io.write_collective=true writes one shared file in collective "
                          f"calls: io.layout shared or replicated and io.interface "
                          f"{backends.listed(writes_collective)}, not {cfg.io.interface} with "
                          f"io.layout={cfg.io.layout}")
    fmt = formats.traits(cfg.dataset.format)
    if not fmt.written_first:
        raise ConfigError(f"io.write_first writes raw records or HDF5 files: dataset.format "
                          f"must be {formats.listed(lambda t: t.written_first)}, not "
                          f"{cfg.dataset.format}")
    if fmt.rows:
        if cfg.io.write_fsync_per_write:
            raise ConfigError("io.write_fsync_per_write=true syncs raw files' write calls: "
                              f"not dataset.format={cfg.dataset.format} (io.write_fsync "
                              "flushes each file)")
        from dlio_mpi.data import write_hdf5
        write_hdf5.check(cfg)
    elif not writes_ranges(backends.of(cfg)):
        raise ConfigError(f"io.write_first writes through {backends.listed(writes_ranges)}: "
                          f"not io.interface={cfg.io.interface}")
    if cfg.io.write_each_epoch and cfg.io.read_type == "memory":
        raise ConfigError("io.write_each_epoch=true rewrites the files before every epoch's "
                          "reads: io.read_type must be on_demand, not memory (a load at "
                          "start)")
    if cfg.dataset.num_files_eval and cfg.workflow.evaluation:
        raise ConfigError("io.write_first writes the training files only: set "
                          "dataset.num_files_eval=0 or workflow.evaluation=false")
    if cfg.io.write_order != "sequential" and fmt.rows:
        raise ConfigError(f"io.write_order={cfg.io.write_order} writes byte ranges: "
                          f"dataset.format must be "
                          f"{formats.listed(lambda t: t.written_first and t.byte_ranges)}, not "
                          f"{cfg.dataset.format} (HDF5 rows are written in order)")


def _owners(cfg, comm, data):
    """Every sample's writer (rank), the same array on every rank."""
    from mpi4py import MPI

    rank, size = comm.Get_rank(), comm.Get_size()
    n = data.num_samples
    if cfg.reader.access == "stream":
        files = access.stream_files(data.num_files, size, rank, 0, cfg.train.seed,
                                    cfg.reader.file_shuffle != "off")
        read = (np.asarray(files, np.int64)[:, None] * data.spf
                + np.arange(data.spf, dtype=np.int64)).ravel()
    else:
        read = sampler.rank_samples(n, size, rank, cfg.reader.batch_size, 0, cfg.train.seed,
                                    cfg.reader.sample_shuffle != "off", cfg.io.remainder,
                                    cfg.io.layout, cfg.io.read_type, data.spf,
                                    cfg.reader.file_shuffle != "off", cfg.reader.sharding,
                                    cfg.reader.shuffle_scope, cfg.reader.sharding_block,
                                    cfg.reader.shuffle_block, cfg.reader.shuffle_window)
    read = np.asarray(read, np.int64).ravel()
    owner = np.full(n, size, dtype=np.int32)
    owner[read] = rank
    comm.Allreduce(MPI.IN_PLACE, owner, op=MPI.MIN)
    nobody = np.flatnonzero(owner == size)
    owner[nobody] = (np.arange(nobody.size) % size).astype(np.int32)
    return owner, read


def _write_list(cfg, owner, read, rank):
    """The samples this rank writes: ascending, or under io.write_order=read those it reads
    first in their first epoch's order, then the rest it was dealt."""
    mine = np.flatnonzero(owner == rank)
    if cfg.io.write_order != "read":
        return mine
    first = read[owner[read] == rank]
    first = first[np.sort(np.unique(first, return_index=True)[1])]      # once each, in order
    return np.concatenate([first, np.setdiff1d(mine, first, assume_unique=True)])


def _open(cfg, comm, path, shared, fid, log):
    return backends.of(cfg).open_write(path, io=cfg.io, comm=comm, file_id=fid, oplog=log,
                                       shared=shared)


def _shuffled(cfg, rank, f, lo, offs, lens, buf, spare):
    """io.write_order=shuffled: the transfer-size pieces of ranges (offs, lens), packed in buf,
    in a seeded order of this rank, file and run: (offsets, lengths, buffer packed in that
    order). spare: a buffer at least as large as the ranges' bytes."""
    po, pl = access.pieces(offs, lens, cfg.reader.transfer_size)
    order = np.random.default_rng([cfg.train.seed, rank, f, lo]).permutation(len(po))
    src = np.cumsum(pl) - pl
    at = 0
    for i in order.tolist():
        n = int(pl[i])
        spare[at:at + n] = buf[src[i]:src[i] + n]
        at += n
    return po[order], pl[order], spare


def _write_file(cfg, comm, h, data, f, local, collective):
    """Write samples `local` of file f through h, in io.write_order (local ascending, or in
    the order the rank reads them); returns the bytes written."""
    from dlio_mpi import engines

    idx = data.index(f)
    sizes = idx.lengths[local]
    written = 0
    buf = spare = None
    shuffled = cfg.io.write_order == "shuffled"
    each = cfg.io.write_fsync_per_write
    runs = list(content.batches(sizes, CHUNK)) if len(local) else []
    if collective:
        from mpi4py import MPI
        calls = []
        for lo, hi in runs:
            offs, lens = idx.ranges(local[lo:hi])
            calls.append(len(access.pieces(offs, lens, cfg.reader.transfer_size)[0]))
        total_calls = comm.allreduce(sum(calls), op=MPI.MAX)
    done = 0
    for lo, hi in runs:
        need = int(sizes[lo:hi].sum())
        if buf is None or len(buf) < need:
            buf = engines.aligned_empty(need, 4096)
        content.fill(data.spec.content, f, local[lo:hi], sizes[lo:hi], buf)
        offs, lens = idx.ranges(local[lo:hi])
        packed = buf
        if shuffled:
            if spare is None or len(spare) < need:
                spare = engines.aligned_empty(need, 4096)
            offs, lens, packed = _shuffled(cfg, comm.Get_rank(), f, lo, offs, lens, buf, spare)
        if collective:
            po, pl = access.pieces(offs, lens, cfg.reader.transfer_size)
            at = 0
            for o, n in zip(po.tolist(), pl.tolist()):
                written += h.write_all([o], [n], packed[at:at + n])
                if each:
                    h.sync()
                at += n
            done += len(po)
        elif each:
            po, pl = access.pieces(offs, lens, cfg.reader.transfer_size)
            at = 0
            for o, n in zip(po.tolist(), pl.tolist()):
                written += h.writev([o], [n], packed[at:at + n])
                h.sync()
                at += n
        else:
            written += h.writev(offs, lens, packed[:need], xfer=cfg.reader.transfer_size)
    if collective:
        empty = np.empty(0, np.uint8)
        for _ in range(total_calls - done):
            h.write_all([], [], empty)
            if each:
                h.sync()    # MPI_File_sync is collective: as many on every rank
    return written


def write_dataset(cfg, comm, log, epoch=-1):
    """Write the training files (collective). Returns the phase's numbers as an epoch entry
    (phase "write"; epoch -1 before the first epoch, else the epoch it comes before, under
    io.write_each_epoch) with the bytes written as bytes_moved."""
    from dlio_mpi import engines
    from dlio_mpi.data import generation as datagen

    rank, size = comm.Get_rank(), comm.Get_size()
    data = Dataset(cfg)
    # in memory at once: a piece of content (at least one sample) and the samples' owners
    big = data.max_sample_bytes()
    copies = 2 if cfg.io.write_order == "shuffled" else 1      # packed again in its order
    hold = copies * max(big, min(data.spf * big, CHUNK)) + 16 * data.num_samples
    agree(comm, datagen.memory_error(cfg, comm, hold))
    error = None
    if rank == 0:
        try:
            error = datagen.room_error(cfg) or datagen.begin(cfg)
        except (OSError, datagen.ManifestError) as e:
            error = f"rank 0: cannot prepare {data.root}: {datagen.error_text(e)}"
    agree(comm, error)
    try:
        owner, read = _owners(cfg, comm, data)
        mine = _write_list(cfg, owner, read, rank)
        files, local = data.locate(mine)
        shared = cfg.io.layout != "multi"
        hdf5 = data.traits.rows
        b = backends.of(cfg)
        # calls every rank enters: collective transfers, or a file made through libhdf5 over
        # MPI-IO
        collective = shared and (backends.collective_writes(cfg) or b.hdf5_driver == "mpio")
        comm.Barrier()
        t0 = time.perf_counter()
        written, error, count = 0, None, int(mine.size)
        try:
            if hdf5:
                from dlio_mpi.data import write_hdf5
                written, count = write_hdf5.write(cfg, comm, data, owner, log)
            elif shared:
                with _open(cfg, comm, data.path(0), True, data.first_id, log) as h:
                    written = _write_file(cfg, comm, h, data, 0, local,
                                          backends.collective_writes(cfg))
                    if cfg.io.write_fsync:
                        h.sync()
            else:
                for f in np.unique(files).tolist():
                    with _open(cfg, comm, data.path(f), False, data.first_id + f, log) as h:
                        written += _write_file(cfg, comm, h, data, f, local[files == f],
                                               False)
                        if cfg.io.write_fsync:
                            h.sync()
        except engines.EngineError as e:
            if collective:
                raise       # a collective write failed on this rank: the caller ends the job
            error = f"rank {rank}: io.write_first: {e}"
        agree(comm, error)
        wall = time.perf_counter() - t0
        error = None
        try:
            # a file longer than its samples (an earlier dataset) is cut to its size
            for f in range(rank, data.num_files if not hdf5 else 0, size):
                want = data.index(f).file_size
                if os.stat(data.path(f)).st_size > want:
                    os.truncate(data.path(f), want)
        except OSError as e:
            error = f"rank {rank}: io.write_first: {e.filename}: {e.strerror}"
        agree(comm, error)
        if rank == 0:
            datagen.write_manifest(cfg)
    finally:
        if rank == 0:
            datagen.end()      # the manifest says whether the files are whole
    comm.Barrier()
    log.finalize()
    ops = log.arrays()
    writes = ops["op"] == engines.OP["write"]
    return {"phase": "write", "epoch": epoch, "steps": 0, "samples": count,
            "wall_s": wall, "io_wait_s": wall, "compute_s": 0.0, "first_step_io_s": wall,
            "bytes_moved": written, "read_ops": 0, "write_ops": int(writes.sum()),
            "latency_hist": log.histogram(op="write"),
            "step_wait_hist": np.zeros(engines.HIST_BUCKETS, np.uint64)}

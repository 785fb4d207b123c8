"""io.write_first for dataset.format=hdf5: the run writes the dataset's HDF5 files through
libhdf5 (the native HDF5 engine: the file and its 2-D uint8 dataset created, then H5Dwrite
calls of whole rows), in the layout dlio_mpi.formats.hdf5 generates and the readers read.

One shared file (io.layout shared or replicated) is created by all ranks through the MPI-IO
driver; each rank then writes the rows (samples) it owns (dlio_mpi.data.write_phase: the ones it reads
in the first epoch, in the order of reader.sharding), in ascending row order, one H5Dwrite per
run of consecutive rows of at most reader.transfer_size bytes (at least one row; 0: one row),
independent under io.interface=hdf5, collective under hdf5_coll or io.write_collective (every
rank makes as many calls as the rank with the most, joining with an empty selection). Under io.layout=multi a file is
created and written whole by the rank that owns its first sample (a file per process, as IOR
writes them), alone (MPI_COMM_SELF or sec2).

io.write_fsync flushes each file (H5Fflush, which the MPI-IO driver turns into MPI_File_sync)
after its writes. The H5Dwrite calls are in the op log (phase "write"), as the engine logs
them: the H5D call, and beneath it, under hdf5_sec2, the POSIX calls of the file driver
(libhdf5's sieve buffer: 64 KiB writes, and reads of the rest of a buffer it fills)."""
import numpy as np

from dlio_mpi import backends
from dlio_mpi.formats import content
CHUNK = 64 << 20        # content made and written in pieces of at most this many bytes


def check(cfg):
    """The HDF5 combinations io.write_first cannot write, as ConfigError lines."""
    from dlio_mpi.config.errors import ConfigError
    from dlio_mpi.data.dataset import chunking

    ds, io = cfg.dataset, cfg.io
    b = backends.of(cfg)
    if b.library != backends.HDF5:
        raise ConfigError(f"io.write_first on dataset.format=hdf5 writes through "
                          f"{backends.listed(lambda x: x.library == backends.HDF5)}: "
                          f"not io.interface={io.interface}")
    if b.hdf5_driver == "core":
        raise ConfigError(f"io.write_first: io.interface={io.interface} reads files whole into "
                          "memory and writes none: use hdf5_sec2 (a file per rank), hdf5 or "
                          "hdf5_coll")
    if b.hdf5_driver != "mpio" and io.layout != "multi":
        raise ConfigError(f"io.write_first: one HDF5 file written by all ranks needs the MPI-IO "
                          f"driver (io.interface hdf5 or hdf5_coll), not {io.interface} with "
                          f"io.layout={io.layout}")
    if io.write_fsync and b.hdf5_driver != "mpio":
        raise ConfigError("io.write_fsync: libhdf5's sec2 driver never syncs a file (H5Fflush "
                          "syncs through the MPI-IO driver): use io.interface hdf5 or "
                          "hdf5_coll, or io.write_fsync=false")
    if ds.compression != "none":
        raise ConfigError(f"io.write_first writes uncompressed HDF5 datasets: not "
                          f"dataset.compression={ds.compression}")
    if ds.enable_chunking and chunking(ds)[1]:
        raise ConfigError(f"io.write_first writes HDF5 chunks of whole rows: "
                          f"dataset.chunk_size={ds.chunk_size} is less than a row "
                          f"(dataset.record_length={ds.record_length})")
    if ds.volumes or ds.volume_shape:
        raise ConfigError("io.write_first writes HDF5 datasets of rows: not dataset.volumes or "
                          "dataset.volume_shape")


def _pieces(rows, most):
    """Runs of consecutive rows of rows (sorted, distinct), each at most `most` rows:
    [(first, count), ...]."""
    rows = np.asarray(rows, np.int64)
    if not rows.size:
        return []
    cut = np.flatnonzero(np.diff(rows) != 1) + 1
    out = []
    for lo, hi in zip([0] + cut.tolist(), cut.tolist() + [rows.size]):
        out += [(int(rows[a]), min(most, hi - a)) for a in range(lo, hi, most)]
    return out


def _write_rows(cfg, comm, h, spec, f, rows, row_bytes, collective):
    """Write rows (sorted) of file f through h; returns the bytes written."""
    from mpi4py import MPI

    from dlio_mpi import engines

    most = max(1, cfg.reader.transfer_size // row_bytes)
    per_fill = max(1, CHUNK // row_bytes // most) * most
    calls = [_pieces(rows[a:a + per_fill], most) for a in range(0, len(rows), per_fill)]
    total_calls = sum(len(c) for c in calls)
    if collective:
        total_calls = comm.allreduce(total_calls, op=MPI.MAX)
    written, done, buf = 0, 0, None
    for a, pieces in zip(range(0, len(rows), per_fill), calls):
        block = rows[a:a + per_fill]
        need = len(block) * row_bytes
        if buf is None or len(buf) < need:
            buf = engines.aligned_empty(need, 4096)
        content.fill(spec.content, f, block, np.full(len(block), row_bytes, np.int64), buf)
        at = 0
        for first, count in pieces:
            n = count * row_bytes
            written += h.write_rows([first], [count], buf[at:at + n])
            at += n
        done += len(pieces)
    empty = np.empty(0, np.uint8)
    for _ in range(total_calls - done):
        h.write_rows([], [], empty)
    return written


def _create(cfg, comm, data, f, rows_total, row_bytes, log):
    """File f created with its dataset: over comm (None: this rank alone)."""
    from mpi4py import MPI

    from dlio_mpi import engines

    spec = data.spec
    b = backends.of(cfg)
    mpio = b.hdf5_driver == "mpio"
    return engines.H5Dataset(
        data.path(f), spec.dataset, driver=b.hdf5_driver,
        comm=(comm or MPI.COMM_SELF) if mpio else None,
        collective=backends.collective_writes(cfg) and comm is not None,
        hints=cfg.io.mpiio_hints,
        file_id=data.first_id + f, oplog=log, create=(rows_total, row_bytes),
        libver=spec.libver, chunk_rows=spec.chunk_rows if spec.chunked else 0)


def write(cfg, comm, data, owner, log):
    """Write the training files (collective over comm, given every sample's owner rank).
    Returns (bytes written, rows written by this rank)."""
    rank = comm.Get_rank()
    spec, spf = data.spec, data.spf
    written, count = 0, 0
    if cfg.io.layout != "multi":
        row_bytes = int(content.sample_sizes(spec, 0)[0])
        rows = np.flatnonzero(owner == rank)
        with _create(cfg, comm, data, 0, spf, row_bytes, log) as h:
            written = _write_rows(cfg, comm, h, spec, 0, rows, row_bytes,
                                  backends.collective_writes(cfg))
            if cfg.io.write_fsync:
                h.sync()
        return written, int(rows.size)
    for f in np.flatnonzero(owner[::spf] == rank).tolist():
        row_bytes = int(content.sample_sizes(spec, f)[0])
        with _create(cfg, None, data, f, spf, row_bytes, log) as h:
            written += _write_rows(cfg, comm, h, spec, f, np.arange(spf, dtype=np.int64),
                                   row_bytes, False)
            if cfg.io.write_fsync:
                h.sync()
        count += spf
    return written, count

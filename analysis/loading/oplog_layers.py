"""The records and DXT segments an op log's calls make, each file from the lowest layer the op
log observed of it up (dlio_mpi_analysis.loading.oplog's docstring says which module a call lands in and why)."""
import numpy as np
from dlio_mpi.run.oplog_format import IFACE

from dlio_mpi_analysis.loading.loader import CHARACTERIZED_MODULES
from dlio_mpi_analysis.loading.oplog_names import record_id
from dlio_mpi_analysis.loading.oplog_records import CLOSE, MMAP, OPEN, READ, SYNC_OPS, VIEW, WRITE, module_records
from dlio_mpi_analysis.loading.table import Table
from dlio_mpi_analysis.loading.trace_ops import OP_DTYPE, READ_OP, WRITE_OP


def _codes(*names):
    return tuple(IFACE[name] for name in names)


POSIX_IFACES = _codes("posix", "posix_direct", "mmap", "io_uring")
STDIO_IFACES = _codes("stdio")
MPIIO_IFACES = _codes("mpiio_ind", "mpiio_coll")
HDF5_MPIIO_IFACES = _codes("hdf5_ind", "hdf5_coll")
HDF5_IFACES = _codes("hdf5_ind", "hdf5_coll", "hdf5_sec2")
COLLECTIVE_IFACES = _codes("mpiio_coll", "hdf5_coll")
MPIIO_COLL_IFACE = IFACE["mpiio_coll"]
HDF5_COLL_IFACE = IFACE["hdf5_coll"]
MMAP_IFACE = IFACE["mmap"]
HDF5_DATASET = "/records"


def observed_layers(ops, iface):
    """File record id -> the lowest layer the op log observed of it, for the files it did not
    observe at POSIX: "HDF5" for a file read or written through libhdf5's MPI-IO driver,
    "MPI-IO" for one read or written by collective MPI-IO calls (module docstring)."""
    moved = np.isin(ops.op, (READ, WRITE))
    hdf5 = np.unique(ops.id[np.isin(iface, HDF5_MPIIO_IFACES)]).tolist()
    coll = np.unique(ops.id[(iface == MPIIO_COLL_IFACE) & moved]).tolist()
    layers = dict.fromkeys(coll, "MPI-IO")
    layers.update(dict.fromkeys(hdf5, "HDF5"))
    return layers


def layers(ops, iface, names, ids):
    """Records per module and DXT segments per trace, each file from the lowest layer the op
    log observed of it up (see the module docstring), and those layers."""
    coll_call = np.isin(iface, COLLECTIVE_IFACES)
    is_open = ops.op == OPEN
    # an MPI-IO open is collective where several ranks opened the file (the job's
    # communicator: a shared data file, a checkpoint all ranks write), else independent (the
    # rank's own, MPI_COMM_SELF), as Darshan counts an open on a communicator of one
    mpiio_open = is_open & np.isin(iface, MPIIO_IFACES)
    pairs = np.unique(np.stack([ops.id[mpiio_open].astype(np.uint64),
                                ops.rank[mpiio_open].astype(np.uint64)]), axis=1) \
        if mpiio_open.any() else np.zeros((2, 0), np.uint64)
    files, openers = np.unique(pairs[0], return_counts=True)
    shared = np.isin(ops.id, files[openers > 1])
    data_call = np.isin(ops.op, (READ, WRITE))
    sync = np.isin(ops.op, SYNC_OPS)
    observed = observed_layers(ops, iface)
    above_posix = np.isin(ops.id, np.array(list(observed), dtype=np.uint64))
    through_hdf5 = np.isin(ops.id, np.array([f for f, layer in observed.items()
                                             if layer == "HDF5"], dtype=np.uint64))
    # beneath independent MPI-IO: calls that moved bytes, opens and closes; an MPI_File_sync
    # is an fsync beneath
    beneath = (~data_call | (ops.length > 0)) & ~above_posix & (ops.op != VIEW)
    # what Darshan cannot see: the mmap call and the copies out of the mapping
    unseen = (iface == MMAP_IFACE) & np.isin(ops.op, (READ, MMAP))
    # a stream's sync is fflush, then fsync of its descriptor: a flush at STDIO and an fsync
    # beneath at POSIX, as Darshan counts a program's fflush + fsync(fileno(fp))
    posix_mask = (np.isin(iface, POSIX_IFACES) & ~unseen) \
        | (np.isin(iface, MPIIO_IFACES) & beneath) | (np.isin(iface, STDIO_IFACES) & sync)
    posix = ops.select(posix_mask)
    # the open and close beneath an MPI-IO one take a system call's time, not the MPI-IO
    # call's (an MPI_File_open also makes lock tests, reads hints, agrees among ranks): they are
    # given no duration
    modelled = np.isin(iface[posix_mask], MPIIO_IFACES) \
        & ~np.isin(posix.op, (READ, WRITE)) & ~np.isin(posix.op, SYNC_OPS)
    posix.end = np.where(modelled, posix.start, posix.end)
    layers = {
        # HDF5 through sec2: the logging driver records libhdf5's own POSIX calls
        "POSIX": posix,
        "STDIO": ops.select(np.isin(iface, STDIO_IFACES)),
    }
    mpiio = np.isin(iface, MPIIO_IFACES) & ~through_hdf5
    mpi_ops = ops.select(mpiio)
    mpi_ops.collective = (coll_call[mpiio] & ~is_open[mpiio]) | (is_open[mpiio]
                                                                 & shared[mpiio])
    layers["MPI-IO"] = mpi_ops
    hdf5 = np.isin(iface, HDF5_IFACES)
    layers["H5F"] = ops.select(hdf5 & ~np.isin(ops.op, (READ, WRITE)))
    h5d = ops.select(hdf5 & ~sync)  # H5Fflush is a file-level call
    # the op log's open of an HDF5 file is H5Fopen and H5Dopen in one entry: its time is the
    # file's (H5F), the dataset's open is given none
    h5d.end = np.where(np.isin(h5d.op, (OPEN, CLOSE)), h5d.start, h5d.end)
    dataset_names = {}
    if len(h5d):
        by_file = {ids[f]: record_id(names[f] + ":" + HDF5_DATASET) for f in ids}
        file_ids, index = np.unique(h5d.id, return_inverse=True)
        h5d.id = np.array([by_file[int(i)] for i in file_ids],
                          dtype=np.uint64)[index.reshape(-1)]
        dataset_names = {by_file[ids[f]]: names[f] + ":" + HDF5_DATASET for f in ids}
    layers["H5D"] = h5d
    records = {}
    for module in CHARACTERIZED_MODULES:
        part = layers[module]
        if len(part):
            extra = None
            if module == "H5D":
                extra = {"H5D_USE_MPIIO_COLLECTIVE": int((iface == HDF5_COLL_IFACE).any())}
            elif module == "H5F":
                extra = {"H5F_USE_MPIIO": int(np.isin(iface, HDF5_MPIIO_IFACES).any())}
            elif module == "POSIX":
                extra = {"POSIX_MMAPS": -1}     # not kept by Darshan since 3.2
            records[module] = module_records(module, part, extra)
    segments = {}
    # DXT_H5D is no Darshan trace either: the rows' places of each H5Dread, for the order of
    # the reads at HDF5 (dlio_mpi_analysis.characterization.read_order)
    for trace, module in (("DXT_POSIX", "POSIX"), ("DXT_MPIIO", "MPI-IO"),
                          ("DXT_STDIO", "STDIO"), ("DXT_H5D", "H5D")):
        part = layers[module]
        moved = np.isin(part.op, (READ, WRITE))
        if moved.any():
            segments[trace] = _segments(part.select(moved))
    return records, segments, dataset_names, observed


def _segments(ops):
    """A DXT trace Table (loader columns) of read and write calls, ordered by rank then
    start time; offsets the op log does not know (-1) are given as 0."""
    table = Table({
        "rank": ops.rank.astype(np.int64),
        "id": ops.id.astype(np.uint64),
        "op": np.where(ops.op == READ, READ_OP, WRITE_OP).astype(OP_DTYPE),
        "offset": np.maximum(ops.offset, 0).astype(np.int64),
        "length": ops.length.astype(np.int64),
        "start": ops.start,
        "end": ops.end,
    }, length=len(ops))
    return table.sorted_by("rank", "start")

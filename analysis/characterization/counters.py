"""Which Darshan counters hold each characterized quantity, module by module.

Counter names are those of the darshan-util library PyDarshan ships; darshan-util converts
records of older log formats to them on reading. A counter that an older format did not record
comes back as -1, so every sum here counts negative values as 0.
"""

from dataclasses import dataclass, field

import numpy as np

SIZE_BUCKETS = ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M",
                "1M_4M", "4M_10M", "10M_100M", "100M_1G", "1G_PLUS")


@dataclass(frozen=True)
class ModuleSpec:
    """The counters of one Darshan module that the characterization reads.

    ``ops`` maps an operation name to the counters summed for it (for MPI-IO, reads are
    independent + collective + split-collective + nonblocking reads). A quantity the module
    does not record is None (or absent from ``ops``).
    """

    name: str
    ops: dict
    bytes_read: str | None = None
    bytes_written: str | None = None
    read_size_prefix: str | None = None  # + a SIZE_BUCKETS label gives a histogram counter
    write_size_prefix: str | None = None
    seq_reads: str | None = None
    consec_reads: str | None = None
    seq_writes: str | None = None
    consec_writes: str | None = None
    time_counters: tuple = field(default=())  # read, write and metadata time, summed
    slowest_rank_time: str | None = None

    def size_counters(self, op):
        """The ten size-histogram counters of ``op`` ("read" or "write"), or None."""
        prefix = self.read_size_prefix if op == "read" else self.write_size_prefix
        return None if prefix is None else [prefix + bucket for bucket in SIZE_BUCKETS]


def _times(prefix, kinds=("READ", "WRITE", "META")):
    return tuple(f"{prefix}_F_{kind}_TIME" for kind in kinds)


SPECS = {
    "POSIX": ModuleSpec(
        name="POSIX",
        ops={"reads": ("POSIX_READS",), "writes": ("POSIX_WRITES",),
             "opens": ("POSIX_OPENS",), "stats": ("POSIX_STATS",),
             "seeks": ("POSIX_SEEKS",), "syncs": ("POSIX_FSYNCS", "POSIX_FDSYNCS")},
        bytes_read="POSIX_BYTES_READ", bytes_written="POSIX_BYTES_WRITTEN",
        read_size_prefix="POSIX_SIZE_READ_", write_size_prefix="POSIX_SIZE_WRITE_",
        seq_reads="POSIX_SEQ_READS", consec_reads="POSIX_CONSEC_READS",
        seq_writes="POSIX_SEQ_WRITES", consec_writes="POSIX_CONSEC_WRITES",
        time_counters=_times("POSIX"), slowest_rank_time="POSIX_F_SLOWEST_RANK_TIME"),
    "MPI-IO": ModuleSpec(
        name="MPI-IO",
        ops={"reads": ("MPIIO_INDEP_READS", "MPIIO_COLL_READS",
                       "MPIIO_SPLIT_READS", "MPIIO_NB_READS"),
             "writes": ("MPIIO_INDEP_WRITES", "MPIIO_COLL_WRITES",
                        "MPIIO_SPLIT_WRITES", "MPIIO_NB_WRITES"),
             "opens": ("MPIIO_INDEP_OPENS", "MPIIO_COLL_OPENS"),
             "syncs": ("MPIIO_SYNCS",),
             "independent_reads": ("MPIIO_INDEP_READS", "MPIIO_NB_READS"),
             "collective_reads": ("MPIIO_COLL_READS", "MPIIO_SPLIT_READS"),
             "independent_writes": ("MPIIO_INDEP_WRITES", "MPIIO_NB_WRITES"),
             "collective_writes": ("MPIIO_COLL_WRITES", "MPIIO_SPLIT_WRITES")},
        bytes_read="MPIIO_BYTES_READ", bytes_written="MPIIO_BYTES_WRITTEN",
        read_size_prefix="MPIIO_SIZE_READ_AGG_", write_size_prefix="MPIIO_SIZE_WRITE_AGG_",
        time_counters=_times("MPIIO"), slowest_rank_time="MPIIO_F_SLOWEST_RANK_TIME"),
    "STDIO": ModuleSpec(
        name="STDIO",
        ops={"reads": ("STDIO_READS",), "writes": ("STDIO_WRITES",),
             "opens": ("STDIO_OPENS", "STDIO_FDOPENS"), "seeks": ("STDIO_SEEKS",)},
        bytes_read="STDIO_BYTES_READ", bytes_written="STDIO_BYTES_WRITTEN",
        time_counters=_times("STDIO"), slowest_rank_time="STDIO_F_SLOWEST_RANK_TIME"),
    "H5F": ModuleSpec(
        name="H5F",
        ops={"opens": ("H5F_OPENS",)},
        time_counters=_times("H5F", ("META",))),
    "H5D": ModuleSpec(
        name="H5D",
        ops={"reads": ("H5D_READS",), "writes": ("H5D_WRITES",), "opens": ("H5D_OPENS",)},
        bytes_read="H5D_BYTES_READ", bytes_written="H5D_BYTES_WRITTEN",
        read_size_prefix="H5D_SIZE_READ_AGG_", write_size_prefix="H5D_SIZE_WRITE_AGG_",
        time_counters=_times("H5D"), slowest_rank_time="H5D_F_SLOWEST_RANK_TIME"),
}


def counter_totals(frame, names):
    """Each named counter summed over all records, negative values counted as 0 (Python ints).

    Column by column: selecting the columns as one frame first costs more than the sums. The
    counters are integers, whose sums do not depend on the order of the additions."""
    return [int(np.maximum(frame[name], 0).sum()) for name in names]


def counter_sum(frame, names):
    """The named counters summed together over all records, negatives counted as 0."""
    return sum(counter_totals(frame, names))


# each collective counter of MPI-IO and the independent one its calls count as on a file only
# one process opened (a communicator of one: MPI_COMM_SELF)
ALONE_COLLECTIVES = (("MPIIO_COLL_READS", "MPIIO_INDEP_READS"),
                     ("MPIIO_SPLIT_READS", "MPIIO_INDEP_READS"),
                     ("MPIIO_COLL_WRITES", "MPIIO_INDEP_WRITES"),
                     ("MPIIO_SPLIT_WRITES", "MPIIO_INDEP_WRITES"))


def opened_alone(frame):
    """The record ids of the MPI-IO records (a Table or a DataFrame) of files opened by one
    process only (MPIIO_INDEP_OPENS and no MPIIO_COLL_OPENS: a communicator of one,
    MPI_COMM_SELF), whose collective calls are independent I/O (alone_collectives)."""
    alone = _alone(frame)
    return set() if alone is None else {int(i) for i in np.asarray(frame["id"])[alone]}


def _alone(frame):
    """Per MPI-IO record, whether one process alone opened its file (None without the
    counters)."""
    if frame is None or frame.empty or "MPIIO_COLL_OPENS" not in frame \
            or "MPIIO_INDEP_OPENS" not in frame:
        return None
    return (np.asarray(frame["MPIIO_COLL_OPENS"]) <= 0) \
        & (np.asarray(frame["MPIIO_INDEP_OPENS"]) > 0)


def alone_collectives(frame):
    """The MPI-IO records (a Table or a DataFrame) with the collective calls on files each
    opened by one process only (Darshan counts an open on a communicator of one process,
    MPI_COMM_SELF, as independent: MPIIO_INDEP_OPENS, no MPIIO_COLL_OPENS) counted as the
    independent calls they are: no other process takes part in them. The frame itself when
    there are none."""
    alone = _alone(frame)
    if alone is None:
        return frame
    moved = [(c, i) for c, i in ALONE_COLLECTIVES if c in frame and i in frame
             and (alone & (np.asarray(frame[c]) > 0)).any()]
    if not moved:
        return frame
    out = frame.copy()
    for c, i in moved:
        calls = np.where(alone, np.maximum(np.asarray(out[c]), 0), 0)
        out[i] = np.asarray(out[i]) + calls
        out[c] = np.where(alone, 0, np.asarray(out[c]))
    return out

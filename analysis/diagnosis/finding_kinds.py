"""The vocabulary of diagnosis: every kind of finding, by a stable id, with what it is, the
Drishti 0.8 issue codes of the same kind, and the workload change ``advise`` measures for it.

The ids are part of ``analyze diagnose --json`` and of advise's result: an id is never renamed
or reused for another kind. docs/diagnose.md lists them with their thresholds
(:class:`Thresholds`), and says where and why a Drishti code has no finding here.
"""

from dataclasses import dataclass, fields, replace


@dataclass(frozen=True)
class Kind:
    """``title``: what is wrong, in a few words; ``drishti``: the Drishti codes of the same
    kind; ``change``: the workload change advise measures for it (dlio_mpi workload keys), or
    "" when it has none (evidence only)."""

    title: str
    drishti: tuple = ()
    change: str = ""


KINDS = {
    # how the data is read and written (Darshan counters)
    "small_reads": Kind("small reads", ("P05",),
                        "larger reads: reader.transfer_size (a whole sample: 0), "
                        "dataset.chunk_size for HDF5, io.stdio_buffer for STDIO"),
    "small_writes": Kind("small writes", ("P06",),
                         "larger checkpoint writes: checkpoint.transfer_size"),
    "small_reads_shared": Kind("small reads of shared files", ("P15",),
                               "larger reads, or collective I/O that merges them: "
                               "reader.transfer_size, io.interface=mpiio_coll"),
    "small_writes_shared": Kind("small writes to shared files", ("P16",),
                                "a checkpoint file per rank, larger writes: checkpoint.format="
                                "file_per_rank, checkpoint.transfer_size"),
    "misaligned": Kind("accesses off the file alignment", ("P08",),
                       "transfers and samples padded to the alignment: reader.transfer_size, "
                       "dataset.record_length"),
    "misaligned_memory": Kind("buffers off the memory alignment", ("P07",),
                              "aligned buffers: io.interface=posix_direct (O_DIRECT buffers)"),
    "misaligned_direct": Kind("O_DIRECT reads widened to the alignment", (),
                              "buffered reads, or samples padded to the alignment"),
    # re-reading each epoch is what training does: advise measures no change that reads fewer
    # bytes to look faster (io.read_type=memory is proposed only where the input fits the
    # memory easily: dataset_over_memory's rule)
    "redundant_reads": Kind("bytes read more than once", ("P09",), ""),
    "redundant_writes": Kind("bytes written more than once", ("P10",), ""),
    "random_access": Kind("random reads", ("P11",),
                          "files shuffled, not samples: reader.sample_shuffle=off, "
                          "reader.file_shuffle=seed; io.fadvise=random"),
    "random_writes": Kind("random writes", ("P13",), ""),
    "metadata_time": Kind("high metadata time", ("P17",),
                          "fewer opens and stats: reader.reopen=false, fewer larger files"),
    "metadata_heavy": Kind("an open per sample", (),
                           "open each file once: reader.reopen=false"),
    "many_small_files": Kind("many small files", (),
                             "fewer, larger files: dataset.num_files_train, "
                             "dataset.num_samples_per_file"),
    "straggler_bytes": Kind("ranks move unequal bytes of a shared file", ("P18",), ""),
    "straggler_time": Kind("ranks spend unequal time on a shared file", ("P19",), ""),
    "rank_imbalance": Kind("rank imbalance", (), ""),
    "stdio_heavy": Kind("heavy STDIO use", ("S01",),
                        "POSIX reads: io.interface=posix, or a larger io.stdio_buffer"),
    "shared_independent": Kind("shared file read independently", ("M02",),
                               "collective reads: io.interface=mpiio_coll or hdf5_coll, "
                               "io.mpiio_hints"),
    "shared_independent_writes": Kind("shared file written independently", ("M03",),
                                      "collective checkpoint writes: checkpoint.format=mpiio"),
    "blocking_mpiio_reads": Kind("blocking MPI-IO reads", ("M06",),
                                 "reads ahead of the step: reader.read_threads, "
                                 "reader.prefetch_size"),
    "blocking_mpiio_writes": Kind("blocking MPI-IO writes", ("M07",), ""),
    "mpiio_aggregators": Kind("MPI-IO aggregators not one per node", ("M08", "M09"),
                              "io.mpiio_hints cb_nodes"),
    "beyond_page_cache": Kind("dataset larger than the page cache", (),
                              "O_DIRECT reads: io.interface=posix_direct"),
    "compression": Kind("compressed input", (), "dataset.compression"),
    # about training, which Drishti does not see
    "samples_in_pieces": Kind("samples read in pieces", (),
                              "a sample per read: reader.transfer_size=0"),
    "shuffle_defeats_readahead": Kind("shuffled reads defeat read-ahead", (),
                                      "files shuffled, samples in order: reader.sample_shuffle="
                                      "off, reader.file_shuffle=seed"),
    "no_overlap": Kind("I/O not overlapped with compute", (),
                       "read threads: reader.read_threads, reader.prefetch_size"),
    "checkpoint_stalls": Kind("checkpoint stalls", (),
                              "checkpoint.writers=all, checkpoint.format=file_per_rank, "
                              "checkpoint.transfer_size"),
    "workers_misattributed": Kind("data-loader workers' I/O mis-attributed by Darshan", (),
                                  "read threads in the rank instead of forked workers: "
                                  "reader.read_threads"),
    # what a Darshan log cannot show
    # (no change to measure: the job cannot be fitted from what the log does not show)
    "io_not_recorded": Kind("data files opened with no read or write Darshan saw", (), ""),
}


@dataclass(frozen=True)
class Thresholds:
    """The thresholds of the log's counter rules (``analyze diagnose --threshold NAME=VALUE``).
    The defaults are Drishti 0.8's where it has the same rule, so that the two find the same
    things on a log."""

    small_bytes: int = 1 << 20          # a request below this is small (a Darshan bucket edge)
    small_share: float = 0.10           # small requests: more than this share of all ...
    small_count: int = 1000             # ... and more than this many
    misaligned_share: float = 0.10      # requests off the alignment, share of all
    random_share: float = 0.20          # random requests: more than this share of all ...
    random_count: int = 1000            # ... and more than this many
    metadata_seconds: float = 30.0      # metadata time of one rank on one file
    straggler_share: float = 0.15       # |slowest - fastest| over the whole, shared files
    stdio_share: float = 0.10           # STDIO's share of the bytes moved
    collective_count: int = 1000        # independent MPI-IO calls worth collective ones
    pieces_per_sample: float = 4.0      # contiguous reads per run of a sample read in pieces
    checkpoint_share: float = 0.10      # checkpoint writes' share of the run time
    nodes: int = 0                      # compute nodes of the job (0: unknown)

    @classmethod
    def names(cls):
        return [f.name for f in fields(cls)]

    def with_values(self, pairs):
        """A copy with NAME=VALUE strings applied; ValueError names a bad one."""
        types = {f.name: f.type for f in fields(self)}
        values = {}
        for pair in pairs:
            name, sep, text = pair.partition("=")
            name = name.strip()
            if not sep or name not in types:
                raise ValueError(f"threshold {pair!r}: NAME=VALUE with NAME one of "
                                 f"{', '.join(types)}")
            kind = int if types[name] in (int, "int") else float
            try:
                value = kind(text)
            except ValueError:
                raise ValueError(f"threshold {name}={text!r}: not a{'n integer' if kind is int else ' number'}") from None
            if value < 0:
                raise ValueError(f"threshold {name}={text!r}: must be 0 or more")
            values[name] = value
        return replace(self, **values)

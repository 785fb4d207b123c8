"""The memory a run will hold, estimated from its configuration before any I/O (checked
against its host's memory by dlio_mpi.config.memory_check).

One function per allocation, each sized as the code that makes it sizes it (the module named in
its docstring); rank_phases puts them together into the phases of a run (generating the
dataset, writing it first, training), and a rank needs its largest phase. The buffers are
counted whole, as committed memory, though a reader whose reads land at the start of its
buffer touches only part of it: the check is a ceiling that keeps a run from being killed by
the kernel's OOM killer on a shared node, not a prediction of its resident size.

Thread stacks count with what the kernel and the thread make resident (thread_bytes), not the
RLIMIT_STACK bytes of address space glibc maps for each: under Linux's default overcommit
(heuristic) that reservation is not charged against available memory and only touched pages
take memory, and under strict overcommit (vm.overcommit_memory=2) the kernel refuses the
mapping itself, so pthread_create fails with a clear error before anything is killed.

The op log's copies kept per phase with io.keep_oplog grow with the operations done, not with
a buffer the configuration sizes; they are not counted."""
import os
from dataclasses import dataclass

import numpy as np

from dlio_mpi import backends
from dlio_mpi.display import units
from dlio_mpi.data.dataset import Dataset

# the sizes the code uses (the modules named)
READER_PAD = 2 * 65536           # readers.Reader: per sample of the batch buffer
READER_ALIGN = 4096              # readers.Reader: the batch buffer's alignment (a page)
RA_ALIGN = 4096                  # prefetch/pattern_reader: the read-ahead buffers' alignment
RING_MIN = 1 << 16               # pattern_reader._ring: a thread's buffer at least
RING_SLOT_MAX = 8 << 20          # pattern_reader.RING_SLOT_MAX
OPLOG_ENTRY = 4 * 8 + 4 + 1 + 1  # csrc/oplog.c: start, dur, offset, bytes; file; op, iface
CHECKPOINT_CHUNK = 64 << 20      # checkpoint.writer.Checkpointer: chunk (schedule.make's)
H5_CHUNK_CACHE = 1 << 20         # libhdf5's default chunk cache per open dataset (rdcc_nbytes)
CB_BUFFER = 16 << 20             # ROMIO's default cb_buffer_size: collective buffering
# a C thread's resident share: its kernel stack (16 KiB on x86-64), task and scheduler
# structures, and the pages of its user stack and TLS it touches (measured: tests pin it)
THREAD_BYTES = 64 << 10
# what a run holds beside the buffers its configuration sizes: the modules it imports
# (h5py and libhdf5), the content's random block, file indexes, the results' tables (measured
# on this project's small runs: 18-29 MiB above a rank's size before the run)
RUN_OWN = 48 << 20
DEFAULT_BLKSIZE = 4096           # st_blksize where the data folder does not exist yet


@dataclass(frozen=True)
class Need:
    """One allocation: what it is, its bytes on one rank, and the keys that size it."""
    what: str
    bytes: int
    keys: str


def _up(n, align):
    return -(-int(n) // align) * align


def _sample_keys(cfg):
    ds = cfg.dataset
    if ds.volume_shape:
        return f"dataset.crop_shape={list(ds.crop_shape)}"
    text = f"dataset.record_length={ds.record_length}"
    if ds.record_length_stdev:
        text += f" + 8 x dataset.record_length_stdev={ds.record_length_stdev}"
    return text


# readers ------------------------------------------------------------------------------------
def reader_buffer_bytes(data, batch):
    """readers.Reader.buf: batch x (largest sample + 2 x 64 KiB), aligned to a page."""
    return batch * (data.max_sample_bytes() + READER_PAD) + READER_ALIGN


def prefetch_room(cfg, data, batch):
    """prefetch.PrefetchReader: a read-ahead thread's buffer, one transfer (HDF5: a file's
    samples of a batch); O_DIRECT widens a sample by twice the alignment (counted at 4 KiB, the
    usual logical block)."""
    per_file = min(batch, data.spf)
    widen = 2 * RA_ALIGN if backends.of(cfg).direct else 0
    room = per_file * (data.max_sample_bytes() + widen)
    xfer = cfg.reader.transfer_size
    if backends.of(cfg).byte_ranges and xfer > 0:
        room = min(room, xfer)
    return room


def _blksize(cfg):
    """The buffered file's size numpy and image decoders read through (reader.buffer_size, or
    the data folder's st_blksize, as Python's open takes it)."""
    if cfg.reader.buffer_size:
        return cfg.reader.buffer_size
    path = os.path.abspath(cfg.dataset.data_folder)
    while True:
        try:
            return os.stat(path).st_blksize or DEFAULT_BLKSIZE
        except OSError:
            parent = os.path.dirname(path)
            if parent == path:
                return DEFAULT_BLKSIZE
            path = parent


PATTERN_CAP = 4 << 20     # numpy_reads run on members of at most this many bytes (see below)


def _numpy_load(cfg, data):
    """(largest read, bytes read) of one numpy.load of a sample as numpy_reads finds it
    (reader.access=numpy, per-sample NPZ members and shot files), for the largest sample. The
    libraries are run on a member of at most PATTERN_CAP bytes, so that the check never holds a
    large sample: beyond it the data is read in the same requests, only more of them, and each
    byte more is a byte more read; the central directory (a few dozen bytes per member) is
    counted per member beyond the buffer fill that reads it."""
    from dlio_mpi.readers import numpy_reads

    spec, blk = data.spec, _blksize(cfg)
    item = np.dtype(spec.dtype).itemsize
    sample = int(cfg.dataset.record_length + 8 * cfg.dataset.record_length_stdev)
    sample = -(-sample // item) * item
    small = min(sample, -(-PATTERN_CAP // item) * item)
    if spec.npz_layout == "shot":
        _, offs, lens = numpy_reads.shot_reads(small, blk)
    else:
        offs, lens = numpy_reads.sample_reads((small,), 0, spec.dtype, blk)
    directory = 128 * data.spf         # read in buffer fills: more only beyond one
    return (max(int(lens.max()), directory),
            int(lens.sum()) + sample - small + max(0, directory - blk))


def pattern_largest_read(cfg, data):
    """pattern_reader.PatternReader: the largest single read of its plan (dlio_mpi.readers.access,
    dlio_mpi.readers.numpy_reads), or an upper bound of it: a stream's block (reader.transfer_size; a
    whole file with 0), numpy.load's reads (an NPY file's array, a stacked file's x: the file's
    samples; a member's: _numpy_load), an image decoder's header or request."""
    rd, ds = cfg.reader, cfg.dataset
    sample = data.max_sample_bytes()
    whole = data.spf * sample
    if rd.access == "stream":
        return rd.transfer_size if rd.transfer_size > 0 else whole
    blk = _blksize(cfg)
    if rd.access == "image":
        return max(blk, min(rd.transfer_size, whole))
    if rd.access == "buffered":
        return max(blk, sample)
    if rd.access == "file":
        return whole + 1
    if rd.access in ("pickle", "torch"):
        return max(blk, whole)
    if data.traits.numpy_fromfile or ds.npz_layout == "stacked":
        return max(blk, whole)
    return _numpy_load(cfg, data)[0]


def pattern_room(cfg, data):
    """pattern_reader.PatternReader._ring: a thread's buffer, the largest single read, at
    least 64 KiB."""
    return max(pattern_largest_read(cfg, data), RING_MIN)


def pattern_step_bytes(cfg, data, batch):
    """An upper bound of a PatternReader step's reads (access.ReadPlan.max_step_bytes): a
    stream's batch, shuffle buffer and a block of each file it reads at once; a numpy or image
    load's reads per sample."""
    rd = cfg.reader
    sample = data.max_sample_bytes()
    largest = pattern_largest_read(cfg, data)
    if rd.access == "stream":
        lead = rd.shuffle_size if rd.sample_shuffle != "off" else 0
        if rd.stream_pass == "sample":      # each sample its whole file
            return (batch + lead) * (data.spf * sample + (1 + rd.eof_reads) * largest)
        return (batch + lead) * sample + (rd.interleave + rd.eof_reads) * largest
    if rd.access == "numpy" and not data.traits.numpy_fromfile \
            and cfg.dataset.npz_layout != "stacked":
        return batch * _numpy_load(cfg, data)[1]
    return batch * (largest + 2 * _blksize(cfg))


def pattern_buffer_bytes(cfg, data, batch, threads):
    """PatternReader.buf: the Reader's batch buffer, grown to a slot (read ahead) or to a
    step's reads (no threads)."""
    if threads:
        step = pattern_step_bytes(cfg, data, batch)
        need = max(cfg.reader.transfer_size, pattern_largest_read(cfg, data),
                   min(step, RING_SLOT_MAX), RING_MIN)
    else:
        need = pattern_step_bytes(cfg, data, batch)
    return max(reader_buffer_bytes(data, batch), need + READER_ALIGN)


def thread_bytes(threads):
    """Read-ahead threads: each one's resident share (the module's docstring says why not
    its stack's reservation)."""
    return threads * THREAD_BYTES


def reader_needs(cfg, split="train"):
    """The buffers of the reader of split (reader_choice.make_reader) on one rank."""
    from dlio_mpi.readers.prefetch import read_ahead_threads

    data = Dataset(cfg, split)
    batch = cfg.reader.batch_size if split == "train" else cfg.reader.batch_size_eval
    rd = cfg.reader
    threads = read_ahead_threads(cfg)
    name = "" if split == "train" else "evaluation "
    bkeys = (f"reader.batch_size{'_eval' if split != 'train' else ''}={batch} x "
             f"({_sample_keys(cfg)} + 128 KiB)")
    needs = []
    if rd.access != "sample" and not cfg.dataset.volume_shape:
        needs.append(Need(f"{name}read buffer", pattern_buffer_bytes(cfg, data, batch, threads),
                          bkeys))
        room = pattern_room(cfg, data)
        rkeys = (f"the largest read: reader.access={rd.access}, reader.transfer_size="
                 f"{rd.transfer_size}, {_sample_keys(cfg)}")
    else:
        needs.append(Need(f"{name}batch buffer", reader_buffer_bytes(data, batch), bkeys))
        room = prefetch_room(cfg, data, batch)
        rkeys = (f"min(reader.batch_size={batch}, dataset.num_samples_per_file="
                 f"{data.spf}) x {_sample_keys(cfg)}"
                 + (f", at most reader.transfer_size={rd.transfer_size}"
                    if rd.transfer_size > 0 and backends.of(cfg).byte_ranges else ""))
    if cfg.dataset.volume_shape:
        needs.append(Need(f"{name}crop buffer", data.max_sample_bytes() + RA_ALIGN,
                          _sample_keys(cfg)))
    if threads:
        needs.append(Need(f"{name}read-ahead buffers", threads * _up(room, RA_ALIGN),
                          f"reader.read_threads={threads} x {units.size(room)} ({rkeys})"))
        needs.append(Need(f"{name}read-ahead threads", thread_bytes(threads),
                          f"reader.read_threads={threads} x {units.size(THREAD_BYTES)}"))
    needs += _library_needs(cfg, data)
    return needs


def _library_needs(cfg, data):
    """libhdf5's chunk cache (1 MiB per open chunked dataset: the engine keeps the default) and
    ROMIO's collective buffer under the collective interfaces."""
    io, ds = cfg.io, cfg.dataset
    needs = []
    if backends.of(cfg).library == backends.HDF5 and (ds.enable_chunking or ds.compression != "none"
                                            or ds.volumes):
        from dlio_mpi.readers.reader import Reader
        open_files = min(Reader.MAX_OPEN, data.num_files) if io.layout == "multi" else 1
        per_file = max(1, len(ds.volumes))
        needs.append(Need("HDF5 chunk caches", open_files * per_file * H5_CHUNK_CACHE,
                          f"{open_files} open files x {per_file} datasets x 1 MiB "
                          "(dataset.enable_chunking, dataset.compression)"))
    if backends.of(cfg).collective:
        cb = int(dict(io.mpiio_hints).get("cb_buffer_size", CB_BUFFER))
        needs.append(Need("collective buffer", cb, f"io.interface={io.interface}, "
                          f"io.mpiio_hints.cb_buffer_size={cb}"))
    return needs


# the run's own tables ------------------------------------------------------------------------
def oplog_bytes(cfg):
    """csrc/oplog.c: io.oplog_capacity entries of 38 bytes (four int64, an int32, two bytes)."""
    return cfg.io.oplog_capacity * OPLOG_ENTRY


def epoch_plan_bytes(cfg, world):
    """An epoch's plan while it is built (sampler.rank_samples: the epoch's order of every
    sample and its copy; epoch_requests.layout: about a dozen (steps, batch) int64 arrays at
    its peak, and the index tables of the files read; a stream's read plan (access) about as
    many per sample of the rank's files)."""
    from dlio_mpi.data import sampler

    data = Dataset(cfg)
    rd, io = cfg.reader, cfg.io
    n = data.num_samples
    if rd.access == "stream":
        files = -(-data.num_files // world)
        return 8 * 12 * files * data.spf
    steps = sampler.steps_per_epoch(n, world, rd.batch_size, io.remainder, io.layout,
                                    io.read_type)
    per_rank = steps * rd.batch_size
    files_read = min(data.num_files, per_rank)
    return 8 * (2 * max(n, per_rank * (1 if io.layout == "replicated" else world))
                + 12 * per_rank + 2 * files_read * data.spf + 8 * steps)


def checkpoint_bytes(cfg, world, rank):
    """checkpoint.writer.Checkpointer: its reused buffer of the largest engine call (a 64 MiB
    chunk rounded up to checkpoint.transfer_size, checkpoint.collective_transfer_size for the
    shared formats, at most the rank's share; four_files: its
    largest file), a second one to verify reads, the content's 1 MiB tile; ROMIO's
    collective buffer for the shared formats."""
    from dlio_mpi.checkpoint import schedule
    from dlio_mpi.checkpoint.common import FOUR_FILES
    from dlio_mpi.checkpoint.size import PAGE, TILE

    ck = cfg.checkpoint
    size = schedule.size_of(cfg, world)
    if ck.format == "four_files":
        largest = max(s for _, s in FOUR_FILES)
    else:
        share = size.rank_bytes(rank) if hasattr(size, "rank_bytes") else int(size)
        if ck.format in ("file_per_rank", "model_optimizer"):
            chunk = _up(CHECKPOINT_CHUNK, ck.transfer_size)
        else:
            chunk = ck.collective_transfer_size
        largest = min(chunk, share)
    buffers = 2 if ck.verify and not cfg.workflow.train else 1
    total = buffers * (max(largest, 1) + PAGE) + TILE
    if ck.format in ("mpiio", "hdf5"):
        total += CB_BUFFER
    return total


def generation_bytes(cfg):
    """datagen.generate: what writing one file holds (formats.write_memory), the largest split."""
    from dlio_mpi import formats
    from dlio_mpi.data import generation as datagen

    return max(formats.write_memory(d.spec) for d in datagen.splits(cfg))


def write_first_bytes(cfg):
    """write_phase.write_dataset: a piece of content (at least a sample, at most 64 MiB, a file's
    samples; twice under io.write_order=shuffled, which packs it again in its order) and the
    samples' owners."""
    from dlio_mpi.data.write_phase import CHUNK

    data = Dataset(cfg)
    big = data.max_sample_bytes()
    copies = 2 if cfg.io.write_order == "shuffled" else 1
    return copies * max(big, min(data.spf * big, CHUNK)) + 16 * data.num_samples


def memory_load_bytes(cfg, world):
    """pipeline.load_into_memory (io.read_type=memory): the largest extent read at once, a file
    (or with one shared file a rank's share of it)."""
    data = Dataset(cfg)
    sample = data.max_sample_bytes()
    if cfg.io.layout == "multi":
        return data.spf * sample + RA_ALIGN
    share = data.num_samples if cfg.io.layout == "replicated" else -(-data.num_samples // world)
    return share * sample + RA_ALIGN


# phases ---------------------------------------------------------------------------------------
def rank_phases(cfg, world, rank, generating=False):
    """{phase: [Need, ...]} of one rank: what it holds at once in each phase of the run."""
    ds = cfg.dataset
    phases = {}
    own = Need("the run's own work", RUN_OWN, "fixed: modules, indexes, results")
    if generating:
        phases["generating the dataset"] = [own, Need(
            "a file being written", generation_bytes(cfg),
            f"dataset.format={ds.format}, dataset.num_samples_per_file="
            f"{ds.num_samples_per_file}, {_sample_keys(cfg)}")]
    log = Need("op log", oplog_bytes(cfg),
               f"io.oplog_capacity={cfg.io.oplog_capacity} x {OPLOG_ENTRY} bytes")
    ckpt = []
    if cfg.workflow.checkpoint:
        ck = cfg.checkpoint
        ckpt = [Need("checkpoint buffers", checkpoint_bytes(cfg, world, rank),
                     f"checkpoint.format={ck.format}, checkpoint.transfer_size="
                     f"{ck.transfer_size}, the rank's share of the checkpoint"
                     + (", checkpoint.verify" if ck.verify else ""))]
    if not cfg.workflow.train:
        phases["checkpoints"] = [own, log] + ckpt
        return phases
    if cfg.io.write_first:
        phases["writing the dataset"] = [own, log, Need(
            "content being written", write_first_bytes(cfg),
            f"dataset.num_samples_per_file={ds.num_samples_per_file}, {_sample_keys(cfg)}")]
    train = [own, log] + reader_needs(cfg) + ckpt
    train.append(Need("epoch plan", epoch_plan_bytes(cfg, world),
                      f"dataset.num_files_train={ds.num_files_train} x "
                      f"dataset.num_samples_per_file={ds.num_samples_per_file} samples, "
                      f"reader.batch_size={cfg.reader.batch_size}"))
    if cfg.io.read_type == "memory":
        train.append(Need("input read into memory", memory_load_bytes(cfg, world),
                          f"io.read_type=memory, io.layout={cfg.io.layout}, "
                          f"dataset.num_samples_per_file={ds.num_samples_per_file} x "
                          f"{_sample_keys(cfg)}"))
    if cfg.workflow.evaluation and ds.num_files_eval > 0:
        train += reader_needs(cfg, "valid")     # opened while the training reader is
    phases["training"] = train
    return phases


def rank_need(cfg, world, rank, generating=False):
    """(bytes, phase, needs): a rank's largest phase."""
    phases = rank_phases(cfg, world, rank, generating)
    phase, needs = max(phases.items(), key=lambda kv: sum(n.bytes for n in kv[1]))
    return sum(n.bytes for n in needs), phase, needs

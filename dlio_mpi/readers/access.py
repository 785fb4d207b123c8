"""Access patterns: which reads a rank issues for its samples, as pure functions (no I/O).

reader.access chooses how the application's input library reaches the file system:

- sample (the default): each sample's byte range, cut into reader.transfer_size pieces, as a
  map-style data loader reading records by index does. Samples are sharded and shuffled by
  dlio_mpi.data.sampler (a permutation of all samples, or of files).
- stream: a rank reads its files front to back in reader.transfer_size blocks regardless of
  record boundaries, as TensorFlow's TFRecord reader (a 256 KiB buffered input stream) and
  pandas' CSV reader (256 KiB chunks) do. Files are split among ranks (file i of an epoch's
  file order goes to rank i mod ranks; reader.file_shuffle permutes the order every epoch);
  samples are consumed in file order; with reader.sample_shuffle they pass through a shuffle
  buffer of reader.shuffle_size samples, so the reads run that many samples ahead of the
  training step (the buffer is filled before the first step, as tf.data's shuffle does).
  A block is read when the stream first needs a byte of it; the bytes of a file after its last
  sample are read when the stream moves on to the next file.
  With reader.stream_pass=sample each sample is a pass over its whole file instead
  (sample_passes), as a reader that loads the file for every sample it takes.
- numpy: NPZ files as numpy.load issues the reads through Python's buffered file object (see
  dlio_mpi.readers.numpy_reads): the zip directory at open, then per sample its member's local header
  and its data in numpy's read sizes.

A plan of reads for an epoch is a ReadPlan: per step, the (file, offset, length) reads in the
order they are issued."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ReadPlan:
    """Reads of an epoch: reads first[k]:first[k+1] belong to step k, in issue order."""
    first: np.ndarray       # (steps + 1,) int64
    file: np.ndarray        # (reads,) int64, file index in the split
    offset: np.ndarray      # (reads,) int64
    length: np.ndarray      # (reads,) int64
    opens: np.ndarray | None = None     # (reads,) bool: the file is opened anew at this read

    @property
    def steps(self):
        return len(self.first) - 1

    def step(self, k):
        """(file, offset, length) arrays of step k's reads."""
        a, b = int(self.first[k]), int(self.first[k + 1])
        return self.file[a:b], self.offset[a:b], self.length[a:b]

    def groups(self, k):
        """Step k's reads as runs of one file and one open: [(file, offsets, lengths, opens),
        ...] in order; opens is True where the run starts with a new open of its file."""
        f, o, n = self.step(k)
        if len(f) == 0:
            return []
        a = int(self.first[k])
        new = np.zeros(len(f), bool) if self.opens is None else self.opens[a:a + len(f)]
        cut = np.flatnonzero((np.diff(f) != 0) | new[1:]) + 1
        return [(int(ff[0]), oo, nn, bool(ww[0])) for ff, oo, nn, ww in
                zip(np.split(f, cut), np.split(o, cut), np.split(n, cut), np.split(new, cut))]

    def max_step_bytes(self):
        if len(self.length) == 0:
            return 0
        sums = np.add.reduceat(self.length, self.first[:-1].clip(max=len(self.length) - 1))
        sums[self.first[:-1] == self.first[1:]] = 0
        return int(sums.max()) if len(sums) else 0

    def total_bytes(self):
        return int(self.length.sum())


def stream_files(num_files, ranks, rank, epoch, seed, file_shuffle):
    """The files rank streams in an epoch, in order: file i of the epoch's file order (a
    seeded permutation with file_shuffle, else 0..num_files-1) goes to rank i mod ranks."""
    order = np.arange(num_files, dtype=np.int64)
    if file_shuffle:
        order = np.random.default_rng([seed, epoch, 2]).permutation(order)
    return order[rank::ranks]


def stream_steps(num_files, samples_per_file, ranks, batch):
    """Steps every rank can run when files are split among ranks: the smallest share, in whole
    batches (ranks with one file more leave its samples unread)."""
    return (num_files // ranks) * samples_per_file // batch


def interleave(counts, cycle=1):
    """Where each sample lies in the order a stream consumes them, when it reads `cycle` files
    at once and takes one sample from each in turn (tf.data's interleave, as TFRecordDataset's
    num_parallel_reads makes it: a file that ends gives its place in the cycle to the next
    file when its turn comes): a list, per file (counts[i] samples), of the positions of its
    samples, in file order. cycle 1: file after file."""
    counts = [int(c) for c in counts]
    cycle = max(1, int(cycle))
    base = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    if cycle == 1:
        return [np.arange(base[i], base[i + 1], dtype=np.int64) for i in range(len(counts))]
    out = [np.zeros(c, np.int64) for c in counts]
    if len(set(counts)) <= 1:       # equal files: groups of `cycle`, taken in turn
        for g in range(0, len(counts), cycle):
            m = min(cycle, len(counts) - g)
            for a in range(m):
                out[g + a] = base[g] + np.arange(counts[g + a], dtype=np.int64) * m + a
        return out
    slots, taken, nxt, at, p = [None] * cycle, [0] * len(counts), 0, 0, 0
    while True:
        f = slots[at]
        if f is None:
            if nxt < len(counts):
                slots[at], nxt = nxt, nxt + 1       # opened, and read at this turn
                continue
            if all(x is None for x in slots):
                return out
        elif taken[f] < counts[f]:
            out[f][taken[f]] = p
            taken[f], p = taken[f] + 1, p + 1
        else:
            slots[at] = None                        # ended: its place goes to the next file
        at = (at + 1) % cycle


def stream_plan(files, samples_per_file, steps, batch, cycle=1):
    """The samples a rank consumes, shape (steps, batch): its files' samples in file order,
    `cycle` files at a time taken in turn (interleave)."""
    files = np.asarray(files, dtype=np.int64)
    ids = (files[:, None] * samples_per_file + np.arange(samples_per_file)).reshape(-1)
    order = np.empty_like(ids)
    if len(ids):
        order[np.concatenate(interleave([samples_per_file] * len(files), cycle))] = ids
    return order[:steps * batch].reshape(steps, batch)



def stream_reads(files, file_sizes, sample_ends, steps, batch, lead, xfer, align=1, eof=0,
                 cycle=1):
    """The ReadPlan of a rank streaming `files` (in order, `cycle` of them at a time, their
    samples taken in turn: interleave) for `steps` steps of `batch` samples, reading `lead`
    samples ahead (a shuffle buffer), in blocks of xfer bytes.

    file_sizes[i] is the size of files[i]; sample_ends[i] the end offset of each of its samples
    (in file order). By the end of step k the stream must hold its first (k+1)*batch+lead
    samples (capped at all of them): each file's reader has read every block that starts
    before the end of its last sample among them, each block at the first step that needs it;
    the bytes of a file after its last sample are read when the sample after that one is
    needed (with cycle 1, the next file's first). eof reads of xfer bytes (the file's size
    with xfer 0) at each file's end follow its last block: they return nothing, as a reader's
    reads to the end do once it is there. A step's reads are its files' in stream order."""
    files = np.asarray(files, dtype=np.int64)
    sizes = np.asarray(file_sizes, dtype=np.int64)
    ends = [np.asarray(e, np.int64) for e in sample_ends]
    total = sum(len(e) for e in ends)
    if steps <= 0 or total == 0:
        return ReadPlan(np.zeros(max(steps, 0) + 1, np.int64), *(np.zeros(0, np.int64),) * 3)
    pos = interleave([len(e) for e in ends], cycle)
    k = np.arange(steps, dtype=np.int64)
    upto = np.minimum((k + 1) * batch + lead, total) - 1     # last sample held by step k
    live = np.flatnonzero([len(e) > 0 for e in ends])
    counts = np.array([len(ends[i]) for i in live], np.int64)
    size = sizes[live]
    # need points, file after file: (position, bytes held once it is consumed), its samples,
    # then the whole file; the bytes shifted per file so that they ascend over all files
    n_pts = counts + 1
    at_term = np.cumsum(n_pts) - 1
    at_samp = np.arange(int(counts.sum()), dtype=np.int64) + np.repeat(
        np.arange(len(live), dtype=np.int64), counts)
    p_all = np.empty(int(n_pts.sum()), np.int64)
    b_all = np.empty_like(p_all)
    flat_pos = np.concatenate([pos[i] for i in live])
    p_all[at_samp] = flat_pos
    b_all[at_samp] = np.concatenate([ends[i] for i in live])
    p_all[at_term] = flat_pos[np.cumsum(counts) - 1] + 1
    b_all[at_term] = size
    base = np.cumsum(size + 1) - (size + 1)
    b_all += np.repeat(base, n_pts)
    # each file's blocks, then its reads at the end
    step = np.where(size > 0, xfer if xfer > 0 else size, 1)
    nblk = np.where(size > 0, -(-size // step), 0)
    nread = nblk + np.where(size > 0, eof, 0)
    fi = np.repeat(np.arange(len(live), dtype=np.int64), nread)
    k = np.arange(int(nread.sum()), dtype=np.int64) - np.repeat(np.cumsum(nread) - nread, nread)
    blk = k < nblk[fi]
    offs = np.where(blk, k * step[fi], size[fi])
    lens = np.where(blk, np.minimum(step[fi], size[fi] - offs), step[fi])
    if align > 1:
        lens = np.where(blk, -(-lens // align) * align, lens)
    # a block is read when the first need point holding a byte of it is consumed (a read at
    # a file's end with its last block)
    j = np.searchsorted(b_all, np.minimum(offs, size[fi] - 1) + base[fi], side="right")
    step_of = np.searchsorted(upto, p_all[j], side="left")
    keep = step_of < steps
    fi, offs, lens, step_of = fi[keep], offs[keep], lens[keep], step_of[keep]
    srt = np.argsort(step_of, kind="stable")
    step_of, fi, offs, lens = step_of[srt], fi[srt], offs[srt], lens[srt]
    first = np.searchsorted(step_of, np.arange(steps + 1), side="left").astype(np.int64)
    return ReadPlan(first, files[live[fi]], offs, lens)


def sample_passes(files, file_sizes, counts, steps, batch, lead, xfer, align=1, eof=0):
    """The ReadPlan of a rank streaming `files` (in order, counts[i] samples in files[i]) for
    `steps` steps of `batch` samples, each sample a pass over its whole file from a new open:
    the file's blocks of xfer bytes and its eof reads at the end, when the sample is needed
    (`lead` samples ahead), as a reader that loads the whole file for every sample it takes
    (pandas.read_csv in the DLIO benchmark's CSV reader). The passes are stream_reads' of
    files of one sample each, the same file repeated counts[i] times."""
    files = np.asarray(files, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    sizes = np.repeat(np.asarray(file_sizes, dtype=np.int64), counts)
    plan = stream_reads(np.repeat(files, counts), sizes, [[s] for s in sizes.tolist()],
                        steps, batch, lead, xfer, align, eof)
    # a pass starts with its block at offset 0 (an eof read is at the file's end)
    opens = (plan.offset == 0) & (plan.length > 0)
    return ReadPlan(plan.first, plan.file, plan.offset, plan.length, opens)


def sample_reads(plan_samples, spf, ranges_of, per_sample=False, per_file=False):
    """The ReadPlan of reads by sample: per step, each file's sample ranges in the batch's
    order of first appearance (ranges_of(file, local_samples) -> (offsets, lengths)), one read
    per range (the engines cut ranges into the transfer size). With per_sample, every sample
    is read on its own, in the batch's order, from a new open of its file (numpy.load of a
    member, a loader that opens a file per sample). With per_file, each file a step reads is
    opened anew for its reads (pyarrow's ParquetFile per batch)."""
    first, fi, offs, lens, opens = [0], [], [], [], []
    for batch in plan_samples:
        f, loc = np.divmod(np.asarray(batch, np.int64), spf)
        if per_sample:
            parts = [(int(ff), np.array([ll])) for ff, ll in zip(f.tolist(), loc.tolist())]
        else:
            _, at = np.unique(f, return_index=True)
            parts = [(int(f[j]), loc[f == f[j]]) for j in sorted(at.tolist())]
        n = 0
        for ff, sel in parts:
            o, ln = ranges_of(ff, sel)
            fi.append(np.full(len(o), ff, np.int64))
            offs.append(np.asarray(o, np.int64))
            lens.append(np.asarray(ln, np.int64))
            w = np.zeros(len(o), bool)
            w[:1] = per_sample or per_file
            opens.append(w)
            n += len(o)
        first.append(first[-1] + n)
    cat = (lambda parts, t=np.int64: np.concatenate(parts) if parts else np.zeros(0, t))
    return ReadPlan(np.asarray(first, np.int64), cat(fi), cat(offs), cat(lens),
                    cat(opens, bool) if per_sample or per_file else None)


def pieces(offs, lens, xfer):
    """Ranges cut into transfer-size pieces, in order: (offsets, lengths); xfer <= 0 leaves
    them whole."""
    offs, lens = np.asarray(offs, np.int64), np.asarray(lens, np.int64)
    if xfer <= 0:
        return offs, lens
    count = -(-lens // xfer)
    which = np.repeat(np.arange(len(offs)), count)
    first = np.cumsum(count) - count
    k = np.arange(len(which), dtype=np.int64) - first[which]
    po = offs[which] + k * xfer
    return po, np.minimum(xfer, offs[which] + lens[which] - po)

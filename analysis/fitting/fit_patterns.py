"""The input library's access pattern, recognised in a DXT trace of the data files' reads, for
dlio_mpi_analysis.fitting.fit: what a log shows of how a program read its samples, beyond sizes and counts.

- numpy.load of .npy files (``npy_loads``): every load reads a buffer's fill at offset 0
  through POSIX (the header) and the array through STDIO (numpy.fromfile's fread).
- numpy.load of NPZ files (``numpy_loads``): every load reads the zip end record, 22 bytes
  ending at the file's end (after a first read of a buffer's size at offset 0); the number of
  such reads is the number of loads, the first read's length the buffered file's size.
- A stream (``stream_block``): every rank reads each of its files front to back in blocks of
  one size B (the last one shorter), regardless of what the records are, as TensorFlow's
  TFRecord reader and pandas do, each epoch anew; B is the block size, the reads that return
  nothing at a file's end (pandas makes 2) are ``reader.eof_reads``, and the files a rank
  reads at once (TFRecordDataset's num_parallel_reads) ``reader.interleave``.
- The order in which a rank takes its files (``file_order_ascending``): the files' first reads,
  rank by rank, in time order, against the files' names in sorted order; for a stream of C
  files at once, the ends of the files' first passes, C files to a turn (a reader that opens
  its next files ahead reads their first block early, out of the turns' order).
- HDF5 samples (``h5d_bytes_per_read``): the bytes of one H5Dread (H5D_BYTES_READ / H5D_READS
  over the data files' datasets), or a row when the H5Dread calls select scattered rows of a
  contiguous dataset (``h5d_scattered_share``: a batch's rows in one union, each row read on
  its own beneath); the file format from the superblock read (``hdf5_libver``);
  a chunked dataset from reads of one size other than a sample's (``hdf5_chunk``).
- A stream that loads a file whole for each of its samples (``pass_runs``): a rank's passes
  over its files come in runs of one file, the file read whole again as soon as it was read
  (the DLIO benchmark's CSV reader: pandas.read_csv of the file for every sample): a run's
  length is the samples in the file, where a stream read once an epoch moves on to its next
  file.
- Whole-file loads (``whole_file_loads``): each file read by one rank, every pass over it (an
  open) from its start to (nearly) its end in blocks of one size: the sample is the file.
- An image decoder (``image_pattern``) and IOR's interleaved segments (``round_robin``).
- Files read whole by Python's f.read() (``python_reads_whole``): the file in one read, then
  a read at its end that returns nothing.
- Files loaded whole by torch.load (``torch_loads``): the zip's end record read, then the
  file's directory, its start and each tensor in one call.
- Files loaded whole by pickle.load through Python's buffered file (``pickle_loads``): a
  buffer fill at offset 0, the rest in whole buffers read straight in, a fill of the tail.
- Samples read by seek and read through Python's buffered file (``buffered_samples``): reads
  of one size (the buffer) at multiples of a smaller record size, which divides the files.
- A step's samples read in an order of the reader's own (``batch_order``): every step takes
  its samples (one read each) in one fixed order that is not the file's (h5bench reads a
  timestep's datasets x y z id_1 id_2 px py pz, written x y z px py pz id_1 id_2).
``library_pattern`` turns what is recognised into the fitted workload's values.
"""

import os
import re

import numpy as np

EOCD = 22           # bytes of the zip end-of-central-directory record (no comment)
# the share of a rank's steps that must take their samples in one order for batch_order
BATCH_ORDER_SHARE = 0.75


def traits(fmt):
    """What the fit asks of a dataset format (dlio_mpi.formats' traits), never its name."""
    from dlio_mpi import formats
    return formats.TRAITS[fmt]


def framing(fmt):
    """Bytes a format's files hold per sample beyond the sample's own."""
    return traits(fmt).framing


def whole_fields(fmt, record):
    """record rounded down to a whole number of the format's fields (at least one)."""
    unit = traits(fmt).field_bytes
    return max(unit, record - record % unit) if unit > 1 else record
STREAM_SHARE = 0.9  # share of the (rank, file) pairs that must read front to back in blocks
WHOLE_SHARE = 0.9   # share of a file's bytes a pass reads for a load of the whole file
# the opens over the reads at which each read has an open of its own
OPEN_EACH_READ = 0.9
# how far from a whole number a file's loads an epoch may be and still be its samples
LOADS_SLACK = 0.05
SPREAD_SHARE = 0.1  # relative spread of the files' arrays above which they vary in size
# a rank's files nearly in their names' order: the share of steps up, over at least so many
NEARLY_ASCENDING = 0.8
MIN_NEARLY = 8
SEED_TRIES = 2000   # seeds tried for drawn file sizes that total the real files' bytes
SEED_CLOSE = 0.005  # relative difference of the totals at which the search stops
PIL_BLOCK = 65536   # the block a PIL decoder asks its file for (ImageFile's MAXBLOCK)
MIN_RECORD = 16     # the smallest record a buffered file's fills are told apart by
SHUFFLED_FORWARD = 0.8  # forward share of jumps under which samples are read at random


def numpy_loads(trace, sizes):
    """(loads, buffer size) of numpy.load calls in a trace of NPZ files (rows: id, rank,
    offset, length, start), or None when the trace does not show them. sizes: file id ->
    size in bytes."""
    size = trace["id"].map(sizes).to_numpy()
    off = trace["offset"].to_numpy()
    length = trace["length"].to_numpy()
    eocd = (length == EOCD) & (off + EOCD == size)
    if not eocd.any():
        return None
    firsts = length[(off == 0) & (length > 0)]
    if len(firsts) == 0:
        return None
    values, counts = np.unique(firsts, return_counts=True)
    return int(eocd.sum()), int(values[np.argmax(counts)])


def _passes(off, ln):
    """A (rank, file) pair's reads in time order, cut where one begins before the end of the
    one before it: each part a pass over the file (an epoch, or a reader's read-ahead into
    the next). Returns the index ranges (a, b)."""
    edges = np.concatenate([[0], np.flatnonzero(off[1:] < (off + ln)[:-1]) + 1, [len(off)]])
    return list(zip(edges[:-1].tolist(), edges[1:].tolist()))


def _at_once(spans):
    """The median over passes (rank, start, end) of the passes of the same rank under way at
    a pass's midpoint (itself included). A pass starts at its second read (stream_block):
    tf.data's parallel interleave opens its next files ahead of their turn and reads their
    first block then (its prefetched input elements), so a first read tells when a file was
    opened, not when it was read."""
    counts = []
    for rank in {r for r, _, _ in spans}:
        t0 = np.array([a for r, a, _ in spans if r == rank])
        t1 = np.array([b for r, _, b in spans if r == rank])
        mid = (t0 + t1) / 2
        counts += (np.searchsorted(np.sort(t0), mid, side="right")
                   - np.searchsorted(np.sort(t1), mid, side="left")).tolist()
    return max(1, int(round(float(np.median(counts)))))


def stream_block(trace, sizes):
    """(B, E, C) when at least STREAM_SHARE of the (rank, file) pairs read their file front to
    back in B-byte reads (the last one up to the file's end, possibly shorter), every pass over
    it (an epoch; a pass may stop early), one of them to its end; E the median number of reads
    that returned nothing at the end of a pass, C the files a rank reads at once (_at_once:
    tf.data's interleave); else None. A file read whole in one read tells no block size."""
    blocks, whole, eofs, spans, pairs, streamed = [], [], [], [], 0, 0
    for (rank, fid), reads in trace.groupby(["rank", "id"], sort=False):
        pairs += 1
        reads = reads.sort_values("start", kind="stable")
        off, ln = reads["offset"].to_numpy(), reads["length"].to_numpy()
        t0, t1 = reads["start"].to_numpy(), reads["end"].to_numpy()
        if int((ln > 0).sum()) < 2:
            continue
        found, tails, mine = set(), [], []
        for a, b in _passes(off, ln):
            o, n = off[a:b][ln[a:b] > 0], ln[a:b][ln[a:b] > 0]
            mine.append((rank, float(t0[min(a + 1, b - 1)]), float(t1[b - 1])))
            if len(n) == 0:
                continue
            found.add(int(n[0]))
            if not (np.array_equal(o, np.arange(len(o)) * n[0]) and (n[:-1] == n[0]).all()
                    and n[-1] <= n[0]):
                found.add(-1)           # not front to back in blocks
            if o[-1] + n[-1] >= sizes.get(int(fid), 0):
                tails.append(int(((ln[a:b] == 0) & (off[a:b] >= o[-1] + n[-1])).sum()))
        if len(found) != 1 or not tails:
            continue
        streamed += 1
        blocks.append(found.pop())
        whole.append(blocks[-1] >= sizes.get(int(fid), 0) > 0)
        eofs += tails
        spans += mine
    if not pairs or streamed < STREAM_SHARE * pairs or not blocks:
        return None
    if all(whole):
        # every pass one read of its whole file (TensorFlow's reader on files of their own
        # sizes): a read as large as the largest file holds each
        return max(blocks), int(round(float(np.median(eofs)))), _at_once(spans)
    values, counts = np.unique(blocks, return_counts=True)
    return (int(values[np.argmax(counts)]), int(round(float(np.median(eofs)))),
            _at_once(spans))


def pass_runs(trace, sizes):
    """(run, passes, visits): the median number of whole passes (WHOLE_SHARE of the file's
    bytes or more) a process makes over one file in a row, before it reads another, over the
    processes that read two files or more (with one file a run cannot be told from epochs);
    the whole passes over all files; and the median number of such runs a process made of a
    file it read (its visits: one an epoch by a process that lives through the job). A rank's
    worker processes are each a process of their own (a loader's workers may read one file at
    once, each a batch of its samples). Run 1 when no process read two files."""
    runs, visits, passes = [], [], 0
    by = ["rank", "process"] if "process" in trace else ["rank"]
    for _, mine in trace.groupby(by, sort=False):
        found = []
        for fid, reads in mine.groupby("id", sort=False):
            reads = reads.sort_values("start", kind="stable")
            off, ln = reads["offset"].to_numpy(), reads["length"].to_numpy()
            t0 = reads["start"].to_numpy()
            for a, b in _passes(off, ln):
                if int(ln[a:b].sum()) >= WHOLE_SHARE * sizes.get(int(fid), 0) > 0:
                    found.append((float(t0[a]), int(fid)))
        passes += len(found)
        ids = np.array([f for _, f in sorted(found)], np.uint64)
        if len(set(ids.tolist())) < 2:
            continue
        cut = np.flatnonzero(ids[1:] != ids[:-1]) + 1
        runs += np.diff(np.concatenate([[0], cut, [len(ids)]])).tolist()
        firsts = ids[np.concatenate([[0], cut])]
        visits += np.unique(firsts, return_counts=True)[1].tolist()
    if not runs:
        return 1, passes, 0
    return int(round(float(np.median(runs)))), passes, int(round(float(np.median(visits))))


def whole_file_loads(trace, sizes):
    """(loads, B, E) when the files are loaded whole: a stream of B-byte blocks (stream_block)
    one file at a time, each file read by one rank only, and at least STREAM_SHARE of the
    passes over a file reading WHOLE_SHARE of its bytes or more; loads: the passes, E the
    reads that returned nothing at a pass's end (median). Else None."""
    if trace["id"].nunique() < 1 or (trace.groupby("id")["rank"].nunique() > 1).any():
        return None
    stream = stream_block(trace, sizes)
    if stream is None or stream[2] != 1:
        return None
    loads = whole = 0
    spans = []
    for (rank, fid), reads in trace.groupby(["rank", "id"], sort=False):
        reads = reads.sort_values("start", kind="stable")
        off, ln = reads["offset"].to_numpy(), reads["length"].to_numpy()
        t0, t1 = reads["start"].to_numpy(), reads["end"].to_numpy()
        for a, b in _passes(off, ln):
            if not (ln[a:b] > 0).any():
                continue
            loads += 1
            whole += int(ln[a:b].sum()) >= WHOLE_SHARE * sizes.get(int(fid), 0)
            spans.append((int(rank), float(t0[a]), float(t1[b - 1]),
                          np.diff(t0[a:b]) if b - a > 1 else np.zeros(0)))
    if not loads or whole < STREAM_SHARE * loads or not _loads_apart(spans):
        return None
    return loads, stream[0], stream[1]


def _loads_apart(spans):
    """True when a load is one piece of work: the pauses between a rank's loads (passes:
    rank, start, end, the gaps between their reads' starts) are longer than those inside a
    load (median against median), and a load's longest pause (median over the loads) is less
    than half of those between loads. A single pass over a file read step by step is a stream
    of samples, not a load; nor is a pass that the steps' compute pauses cut into pieces (a
    file's samples read in order, a batch at a time)."""
    between, inside, longest = [], [], []
    for rank in {r for r, _, _, _ in spans}:
        mine = sorted((a, b) for r, a, b, _ in spans if r == rank)
        between += [a2 - b1 for (_, b1), (a2, _) in zip(mine[:-1], mine[1:])]
    for _, _, _, gaps in spans:
        inside += gaps.tolist()
        if len(gaps):
            longest.append(float(gaps.max()))
    if not between:
        return False
    apart = float(np.median(between))
    if longest and float(np.median(longest)) >= 0.5 * apart:
        return False
    return not inside or apart > float(np.median(inside))


def size_seed(files, per_file, total, spread, mean, stdev, start=123, stacked=False):
    """(train.seed, relative difference of the totals) for a raw dataset of ``files`` files of
    ``per_file`` samples drawn with mean and stdev (dlio_mpi.formats.content.sample_sizes): a
    few hundred draws can total a few percent from the real samples' bytes (``total``), so the
    seed is the first from ``start`` whose draws total within SEED_CLOSE of them and spread
    (standard deviation) within a tenth of ``spread``, else the closest of SEED_TRIES. With
    ``stacked``, the files are stacked NPZ files, a size drawn a file for all its samples."""
    from dlio_mpi.formats.content import sample_sizes
    from dlio_mpi.formats.spec import FormatSpec

    total, spread = float(total), float(spread)
    best = (float("inf"), start, 0.0)
    for seed in range(start, start + SEED_TRIES):
        spec = FormatSpec(format="npz" if stacked else "raw", samples_per_file=per_file,
                          record_length=int(mean), record_length_stdev=float(stdev), seed=seed,
                          **({"npz_layout": "stacked"} if stacked else {}))
        drawn = np.concatenate([sample_sizes(spec, i) for i in range(files)]).astype(np.float64)
        off = abs(drawn.sum() - total) / total
        spread_off = abs(drawn.std() - spread) / spread if spread else 0.0
        if off <= SEED_CLOSE and spread_off <= 0.1:
            return seed, off
        if off + 0.1 * spread_off < best[0]:
            best = (off + 0.1 * spread_off, seed, off)
    return best[1], best[2]


def worker_generations(workers):
    """The generations of a rank's loader workers (job.workers: rank -> their processes'
    spans): groups of workers alive together, the next starting once every worker of the
    group before has ended (a data loader's workers made new every epoch), the median over
    the ranks with workers; 0 without workers."""
    counts = []
    for spans in (workers or {}).values():
        groups, end = 0, None
        for a, b in sorted(spans):
            if end is None or a >= end:
                groups += 1
                end = b
            else:
                end = max(end, b)
        counts.append(groups)
    return int(round(float(np.median(counts)))) if counts else 0


def balanced_passes(starts):
    """The epochs of a job whose samples each load a whole file, from the loads (``starts``:
    each load's first read, a DXT frame): the most equal parts of each rank's loads, in time
    order, in each of which every file of the rank was loaded as often (a shuffled epoch
    draws every sample once; a quarter of it does not load every file a quarter as often),
    the median over the ranks; 0 without loads."""
    found = []
    for _, mine in starts.groupby("rank", sort=False):
        ids = mine.sort_values("start", kind="stable")["id"].to_numpy()
        files = len(np.unique(ids))
        if not len(ids) or len(ids) % files:
            continue
        per = len(ids) // files
        best = 1
        for parts in range(per, 1, -1):
            if per % parts:
                continue
            size = len(ids) // parts
            if all(len(set(np.unique(ids[k:k + size], return_counts=True)[1].tolist())) == 1
                   and len(np.unique(ids[k:k + size])) == files
                   for k in range(0, len(ids), size)):
                best = parts
                break
        found.append(best)
    return int(round(float(np.median(found)))) if found else 0


def python_reads_whole(trace, sizes):
    """The loads when at least STREAM_SHARE of the (rank, file) pairs read their file whole as
    Python's f.read() does (the whole file in one read from offset 0, then a read at its end
    that returns nothing), once per load; else None."""
    pairs = loads = 0
    matched = 0
    for (_, fid), reads in trace.groupby(["rank", "id"], sort=False):
        pairs += 1
        reads = reads.sort_values("start", kind="stable")
        size = sizes.get(int(fid))
        seen = list(zip(reads["offset"].tolist(), reads["length"].tolist()))
        one = [(0, size), (size, 0)]
        if size and len(seen) % 2 == 0 and seen == one * (len(seen) // 2):
            matched += 1
            loads += len(seen) // 2
    if not pairs or matched < STREAM_SHARE * pairs:
        return None
    return loads


def _file_sizes(data, evidence):
    """(the data files' sizes, their standard deviation in whole bytes) for a fit of a file a
    sample; with a spread, its record_length_stdev and the seed whose draws total the files'
    bytes go to evidence."""
    size = data["size"].to_numpy()
    spread = int(round(float(size.std())))
    if spread:
        evidence["record_length_stdev"] = spread
        seed, off = size_seed(len(size), 1, float(size.sum()), float(size.std()),
                              float(size.mean()), spread)
        evidence["size_seed"] = {"seed": seed, "total_difference": off}
    return size, spread


# the frames pickle's protocol 4 and 5 write an object of many parts in (pickle's own target)
PICKLE_FRAME = 64 * 1024


def pickle_loads(trace, sizes):
    """(loads, buffer size, tail, frame) when at least STREAM_SHARE of the (rank, file) pairs
    read their file whole as pickle.load does through Python's buffered file (a buffer fill at
    offset 0, the rest asked for at once: whole buffers read straight in, then a fill of the
    tail; or, a pickle of many objects, its 64 KiB frames asked for in turn;
    numpy_reads.pickle_reads), once per load; else None."""
    from dlio_mpi.readers.numpy_reads import pickle_reads

    pairs = loads = matched = 0
    found = []
    for (_, fid), reads in trace.groupby(["rank", "id"], sort=False):
        pairs += 1
        reads = reads.sort_values("start", kind="stable")
        size = sizes.get(int(fid))
        off, ln = reads["offset"].to_numpy(), reads["length"].to_numpy()
        if not size or len(off) < 2 or off[0] != 0 or not 0 < ln[0] < size:
            continue
        seen = list(zip(off.tolist(), ln.tolist()))
        # one frame, or a large object outside the frames and a last frame of `tail` bytes
        tails = [0] + ([int(size - off[2])] if len(off) > 2 and 0 < size - off[2] < ln[0]
                       else [])
        # frames only where the buffer is smaller than a frame: each frame is then a fill and
        # a straight read (a buffer as large reads any file front to back alike)
        shapes = [(tail, 0) for tail in tails] \
            + ([(0, PICKLE_FRAME)] if 0 < ln[0] < PICKLE_FRAME else [])
        for tail, frame in shapes:
            o, n = pickle_reads(size, int(ln[0]), tail=tail, frame=frame)
            one = list(zip(o.tolist(), np.clip(np.minimum(o + n, size) - o, 0, None).tolist()))
            if len(one) > 1 and len(seen) % len(one) == 0 \
                    and seen == one * (len(seen) // len(one)):
                matched += 1
                loads += len(seen) // len(one)
                found.append((int(ln[0]), tail, frame))
                break
    if not pairs or matched < STREAM_SHARE * pairs:
        return None
    values, counts = np.unique(np.array(found), axis=0, return_counts=True)
    buffer, tail, frame = (int(x) for x in values[np.argmax(counts)])
    return loads, buffer, tail, frame


def torch_loads(trace, sizes):
    """(loads, tensors) when at least STREAM_SHARE of the (rank, file) pairs read their file
    as torch.load reads the zip torch.save makes: every load reads the end-of-central-directory
    record (22 bytes ending at the file's end) and the file's start; loads: those end reads;
    tensors: a load's reads longer than torch.load's 4 KiB buffer that end before the file's
    end (a tensor's data in one call; the median per load, at least 1). Else None."""
    from dlio_mpi.checkpoint.zip_reads import BUFFER, END_RECORDS

    pairs = matched = loads = 0
    per_load = []
    for (_, fid), reads in trace.groupby(["rank", "id"], sort=False):
        pairs += 1
        size = sizes.get(int(fid))
        if not size:
            continue
        off, ln = reads["offset"].to_numpy(), reads["length"].to_numpy()
        ends = int(((ln == END_RECORDS[0]) & (off + ln == size)).sum())
        starts = int(((off == 0) & (ln > 0)).sum())
        if ends < 1 or starts < ends:
            continue
        matched += 1
        loads += ends
        per_load.append(int(((ln > BUFFER) & (off + ln < size)).sum()) / ends)
    if not pairs or matched < STREAM_SHARE * pairs:
        return None
    return loads, max(1, int(round(float(np.median(per_load)))))


def buffered_samples(trace, sizes):
    """(record, buffer) when the reads are a buffered file's fills at samples' offsets: at
    least STREAM_SHARE of the reads of one length B (the others shorter, at a file's end), each
    at a multiple of a record size R smaller than B (the offsets' greatest common divisor, at
    least MIN_RECORD) that divides every file's size (records back to back), but those that go
    on from the previous fill of the file (a sample partly in the buffer); else None."""
    reads = trace[trace["length"] > 0]
    if len(reads) < 2:
        return None
    lengths = reads["length"].to_numpy()
    values, counts = np.unique(lengths, return_counts=True)
    buffer = int(values[np.argmax(counts)])
    if counts.max() < STREAM_SHARE * len(lengths) or (lengths > buffer).any():
        return None
    reads = reads.sort_values(["rank", "id", "start"], kind="stable")
    offsets = reads["offset"].to_numpy(np.int64)
    lengths = reads["length"].to_numpy()
    # a fill that goes on from the previous one (a sample partly in the buffer) starts at no
    # sample's offset
    key = reads["rank"].to_numpy().astype(np.int64) * (1 << 32) \
        + reads["id"].rank(method="dense").to_numpy().astype(np.int64)
    goes_on = np.zeros(len(offsets), bool)
    goes_on[1:] = (key[1:] == key[:-1]) & (offsets[1:] == offsets[:-1] + lengths[:-1])
    starts = offsets[~goes_on]
    record = int(np.gcd.reduce(np.concatenate([starts[starts > 0],
                                               [sizes.get(int(i), 0) for i in
                                                reads["id"].unique()]])))
    if not MIN_RECORD <= record < buffer:
        return None
    short = lengths < buffer
    ends = offsets[short] + lengths[short]
    at_end = np.array([sizes.get(int(i), -1) for i in reads["id"].to_numpy()[short]])
    if not (ends == at_end).all():
        return None
    return record, buffer


def first_opens(job, data):
    """A trace-like frame (rank, id, start, end, offset, length) of each data file's first
    open by each rank (POSIX_F_OPEN_START_TIMESTAMP), for a job whose reads no trace holds
    (C stdio's: numpy.fromfile): None unless every data file has a rank's own POSIX record
    with an open time."""
    import pandas as pd

    posix = job.records.get("POSIX")
    if posix is None or posix.empty or "POSIX_F_OPEN_START_TIMESTAMP" not in posix:
        return None
    rows = posix[posix["id"].isin(list(data.index))]
    if rows.empty or (rows["rank"] < 0).any() or rows["id"].nunique() < len(data):
        return None
    start = np.asarray(rows["POSIX_F_OPEN_START_TIMESTAMP"], dtype=np.float64)
    if (start <= 0).any():
        return None
    return pd.DataFrame({"rank": np.asarray(rows["rank"]), "id": np.asarray(rows["id"]),
                         "start": start, "end": start, "offset": 0,
                         "length": np.ones(len(start), np.int64)})


def file_order_ascending(trace, names, at_once=1):
    """True when every rank (every process, where a rank's worker processes read) takes its
    files in the ascending order of their names (each file's first read, in time order), None
    without at least two files on some rank. With ``at_once`` files read at once (a stream's
    interleave), a rank takes them in turns of ``at_once``: the files ordered by the end of
    their first pass must come in the turns of their names' order (the order within a turn,
    and a first block read ahead of the turn, tell nothing). A name's order is its path's, or
    its base name's (the DLIO benchmark sorts a dataset of subfolders by base name, and the
    emulator numbers its files so), or its path's with numbers taken as numbers (zarr's
    chunk files): any of them, the same on every rank."""
    orders = [order for order in _rank_file_orders(trace, names, at_once) if order]
    if not orders:
        return None
    keys = (lambda name: name, os.path.basename, _natural)
    return any(all(_in_turns(order, at_once, key) for order in orders) for key in keys) \
        or any(all(_nearly_ascending(order, key) for order in orders) for key in keys)


def _nearly_ascending(order, key):
    """Whether NEARLY_ASCENDING of the pairs of files of ``order`` come in ``key``'s order,
    over MIN_NEARLY files or more: a reader that opens its first few files together (tf.data's
    prefetch and interleave at the start of a pass) takes them out of turn and the rest in
    order (4 files of 8 taken 0, 3, 2, 1: 25 pairs of 28 in order, where the steps from a
    file to the next go up 5 times of 7), and a shuffle orders half of the pairs."""
    if len(order) < MIN_NEARLY:
        return False
    ranks = [key(name) for name in order]
    n = len(ranks)
    up = sum(1 for i in range(n) for j in range(i + 1, n) if ranks[i] < ranks[j])
    return up >= NEARLY_ASCENDING * n * (n - 1) / 2


def _natural(name):
    """A path's order with its numbers as numbers (zarr's chunk files c/2/0/0 before
    c/10/0/0)."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part)
            for part in re.split(r"(\d+)", name)]


def _rank_file_orders(trace, names, at_once):
    """The names of each process's (or rank's) files in the order it took them (see
    file_order_ascending); the lists of processes with fewer than two files are empty, and
    those of processes that read no data (a loader's main process reading each file's
    metadata to build its index before its workers read the samples)."""
    out = []
    middle = middle_byte_size(trace["length"].to_numpy())
    for _, reads in trace.groupby("process" if "process" in trace else "rank", sort=False):
        if middle is not None and int(reads["length"].max()) < 0.5 * middle:
            out.append([])
            continue
        reads = reads.sort_values("start", kind="stable")
        if at_once > 1:
            ends = {}
            for fid, mine in reads.groupby("id", sort=False):
                off, ln = mine["offset"].to_numpy(), mine["length"].to_numpy()
                a, b = _passes(off, ln)[0]
                ends[int(fid)] = float(mine["end"].to_numpy()[b - 1])
            ids = sorted(ends, key=ends.get)
        else:
            ids = [int(i) for i in reads.drop_duplicates("id")["id"]]
            seq = reads["id"].to_numpy()
            firsts = seq[np.r_[True, seq[1:] != seq[:-1]]] if len(seq) else seq
            runs = len(firsts)
            if runs >= HOPS_PER_FILE * len(ids) and len(seq) < HOP_RUN * runs \
                    and not _whole_passes(firsts, len(ids)):
                # the reads hop from file to file, a sample or two at a time (files opened
                # together at the start, samples drawn over all of them): the order of the
                # files' first reads is that of their opens, no order the samples took
                out.append([])
                continue
        order = [names.get(i, "") for i in ids]
        out.append(order if len(order) >= 2 else [])
    return out


def _whole_passes(firsts, files):
    """Whether a process's runs of reads of one file (``firsts``: each run's file, in time
    order) are whole passes over its ``files`` files, each file once a pass (epochs, not
    reads hopping between files within one)."""
    if not files or len(firsts) % files:
        return False
    return all(len(set(firsts[k:k + files].tolist())) == files
               for k in range(0, len(firsts), files))


# a process's reads hop between files when its runs of reads of one file number this many a
# file or more, each of fewer than HOP_RUN reads on average
HOPS_PER_FILE = 4
HOP_RUN = 4


def _in_turns(order, at_once, key):
    """Whether the names of ``order`` come in turns of ``at_once`` of their order by ``key``."""
    turn = {name: k // at_once for k, name in enumerate(sorted(order, key=lambda n: (key(n), n)))}
    turns = [turn[name] for name in order]
    return turns == sorted(turns)


def batch_order(trace, sample_bytes, batch):
    """The order of a step's sample reads, as positions in the file's order (a permutation of
    0 .. batch-1), when at least BATCH_ORDER_SHARE of every rank's full steps take their
    samples in that one order and it is not the file's; else None. A rank's reads of
    ``sample_bytes`` (a sample each), in time order, cut into steps of ``batch``."""
    if batch < 2:
        return None
    found = []
    for _, reads in trace[trace["length"] == sample_bytes].groupby("rank", sort=False):
        off = reads.sort_values("start", kind="stable")["offset"].to_numpy()
        steps = len(off) // batch
        if steps == 0:
            return None
        orders = [tuple(np.argsort(np.argsort(off[k * batch:(k + 1) * batch],
                                              kind="stable")).tolist())
                  for k in range(steps)]
        values, counts = np.unique(np.array(orders), axis=0, return_counts=True)
        best = int(np.argmax(counts))
        if counts[best] < BATCH_ORDER_SHARE * steps:
            return None
        found.append(tuple(int(x) for x in values[best]))
    if not found or len(set(found)) != 1 or found[0] == tuple(range(batch)) \
            or sum(len(r) // batch for _, r in trace.groupby("rank")) < 2:
        return None
    return list(found[0])


def h5dread_calls(job, trace, data_names, sample_bytes):
    """The data reads of ``trace`` taken back to the H5Dread calls they served, when libhdf5
    made the same number of data reads for each (a strided selection read a block at a time:
    the file's data-sized reads over its datasets' H5D_READS, a whole number above 1): one
    row a call, its rank, start and lowest offset, ``sample_bytes`` long; else None."""
    per_dataset = h5d_datasets(job, data_names)
    calls = sum(r for r, _, _ in per_dataset.values()) if per_dataset else 0
    reads = data_reads(trace) if trace is not None else None
    if not calls or reads is None or reads.empty or len(reads) % calls \
            or len(reads) // calls < 2:
        return None
    import pandas as pd     # (diagnose imports this module without pandas)

    per = len(reads) // calls
    rows = []
    for rank, mine in reads.groupby("rank", sort=False):
        mine = mine.sort_values("start", kind="stable")
        if len(mine) % per:
            return None
        off = mine["offset"].to_numpy().reshape(-1, per).min(axis=1)
        start = mine["start"].to_numpy().reshape(-1, per)[:, 0]
        rows.append(pd.DataFrame({"rank": rank, "start": start, "offset": off,
                                  "length": sample_bytes}))
    return pd.concat(rows, ignore_index=True)


def hdf5_chunk(trace, per_read):
    """The chunk's bytes of a chunked HDF5 dataset: the read size that moves at least
    STREAM_SHARE of the data files' bytes when it differs from a sample's (per_read, the bytes
    of one H5Dread) and one holds a whole number of the other (libhdf5 reads a sample a chunk
    at a time, or a chunk of several samples at once); else None (contiguous)."""
    moved = trace.groupby("length")["length"].sum()
    moved = moved[moved.index > 0]
    if moved.empty:
        return None
    size = int(moved.idxmax())
    if moved.max() < STREAM_SHARE * moved.sum() or size == per_read:
        return None
    if (size < per_read and per_read % size) or (size > per_read and size % per_read):
        return None
    return size


def own_files_each_pass(trace):
    """Whether several ranks read each its own files, pass after pass: every file read by one
    rank only, and at least two passes over it (reads at its start) on average."""
    if trace is None or trace["rank"].nunique() < 2:
        return False
    if (trace.groupby("id")["rank"].nunique() > 1).any():
        return False
    starts = trace[trace["offset"].to_numpy() == 0].groupby("id").size()
    return len(starts) > 0 and float(starts.mean()) >= 2


def read_in_chunks(trace, chunk):
    """Whether the read size that moves the most bytes is the chunk's (a chunked dataset's
    chunks read whole, one a call)."""
    if trace is None or not len(trace):
        return False
    moved = trace.groupby("length")["length"].sum()
    return int(moved.idxmax()) == int(chunk)


def h5d_chunk_bytes(job, data_names):
    """The bytes of a chunk of the data files' datasets from Darshan's H5D record (the chunk's
    dimensions, H5D_CHUNK_SIZE_D1..D5, times H5D_DATATYPE_SIZE), the largest over them; None
    without H5D records that give chunk dimensions, 0 when they say the datasets are
    contiguous (every chunk dimension 0)."""
    h5d = job.records.get("H5D")
    dims = [f"H5D_CHUNK_SIZE_D{k}" for k in range(1, 6)]
    if h5d is None or h5d.empty or not all(d in h5d for d in dims + ["H5D_DATATYPE_SIZE"]):
        return None
    names = [job.names.get(int(i), "") for i in h5d["id"]]
    mine = h5d[[n.split(":", 1)[0] in data_names for n in names]]
    best = 0
    for _, row in mine.iterrows():
        sizes = [int(row[d]) for d in dims if int(row[d]) > 0]
        if sizes:
            best = max(best, int(np.prod(sizes)) * max(1, int(row["H5D_DATATYPE_SIZE"])))
    return best if len(mine) else None


def _wrote_data(job, ids):
    """Whether the job wrote bytes to any of the files ``ids`` (POSIX or MPI-IO records)."""
    for module, column in (("POSIX", "POSIX_BYTES_WRITTEN"), ("MPI-IO", "MPIIO_BYTES_WRITTEN")):
        frame = job.records.get(module)
        if frame is not None and not frame.empty and column in frame:
            mine = np.isin(np.asarray(frame["id"]), np.array(sorted(ids), dtype=np.uint64))
            if (np.asarray(frame[column])[mine] > 0).any():
                return True
    return False


def compressed_chunks(trace, chunk):
    """Whether the data reads of a chunked dataset are of other sizes than its chunks: the
    read size that moves the most bytes neither the chunk's bytes nor a multiple of them (a
    filter such as gzip stores each chunk in its own size)."""
    moved = trace.groupby("length")["length"].sum()
    moved = moved[moved.index > 0]
    if moved.empty:
        return False
    size = int(moved.idxmax())
    return size % chunk != 0 and chunk % size != 0


def run_starts(reads):
    """Per read (in the reads' order), True where a process's run of reads of one file
    begins at the file's start: a load's first read, where a load reads its file's start
    again within itself (torch.load reads offset 0 three times a file)."""
    who = reads["process"].to_numpy() if "process" in reads else reads["rank"].to_numpy()
    order = np.lexsort((reads["start"].to_numpy(), who))
    ids, by = reads["id"].to_numpy()[order], who[order]
    first = np.r_[True, (ids[1:] != ids[:-1]) | (by[1:] != by[:-1])]
    out = np.zeros(len(order), bool)
    out[order] = first & (reads["offset"].to_numpy()[order] == 0) \
        & (reads["length"].to_numpy()[order] > 0)
    return out


def open_starts(reads):
    """Per read (in the reads' order), True where a file's reads come back to its start after
    reading elsewhere in it, or begin there: a new open's first read (libhdf5 reads its
    superblock from offset 0, in two reads there)."""
    offset = reads["offset"].to_numpy()
    out = np.zeros(len(offset), bool)
    order = np.lexsort((reads["start"].to_numpy(), reads["id"].to_numpy()))
    ids, offs = reads["id"].to_numpy()[order], offset[order]
    first = np.r_[True, ids[1:] != ids[:-1]]
    back = np.r_[True, offs[:-1] != 0]
    out[order] = (offs == 0) & (first | back)
    return out


def compressed_share(trace, chunk):
    """The share of a chunk's bytes its stored (compressed) form takes: the size of the chunk
    reads that moves the middle byte (a library's small metadata reads, many but of few bytes,
    weigh nothing) over the chunk's bytes, of reads up to a chunk's; None without them."""
    lengths = trace["length"].to_numpy()
    middle = middle_byte_size(lengths[lengths <= 1.1 * chunk])
    return None if middle is None else min(1.0, middle / chunk)


def h5d_bytes_per_read(job, data_names):
    """Bytes of a sample's H5Dread calls over the datasets of the data files (None without H5D
    records): one H5Dread's bytes, or, where a file's datasets were all read as many times,
    each read of its own size (a sample's image and its label, each a dataset of as many
    rows), the sum of one read of each (see h5d_datasets)."""
    per_dataset = h5d_datasets(job, data_names)
    if not per_dataset:
        return None
    reads = sum(r for r, _, _ in per_dataset.values())
    nbytes = sum(b for _, b, _ in per_dataset.values())
    by_file = {}
    for name, (r, b, _) in per_dataset.items():
        by_file.setdefault(name.split(":", 1)[0], []).append((r, b))
    # a sample's fields: datasets read as many times each, together (an image and its
    # label; the DLIO benchmark's records_0..n of a sample), not one after another (IOR's
    # segments)
    if all(len(v) > 1 and len({r for r, _ in v}) == 1 and v[0][0] > 0
           for v in by_file.values()) and datasets_read_together(job, data_names):
        sums = [sum(b / r for r, b in v) for v in by_file.values()]
        return int(round(float(np.median(sums))))
    return int(round(nbytes / reads)) if reads else None


def record_elements(job, data_names):
    """The element's bytes (H5D_DATATYPE_SIZE) of the data datasets when they are all of one
    dimension (a table of records, a compound type's) and of one element size; else None."""
    h5d = job.records.get("H5D")
    if h5d is None or h5d.empty or "H5D_DATASPACE_NDIMS" not in h5d \
            or "H5D_DATATYPE_SIZE" not in h5d:
        return None
    names = [job.names.get(int(i), "").split(":", 1)[0] for i in h5d["id"]]
    mine = h5d[[n in data_names for n in names] & (np.asarray(h5d["H5D_READS"]) > 0)]
    if mine.empty or (np.asarray(mine["H5D_DATASPACE_NDIMS"]) != 1).any():
        return None
    sizes = set(np.asarray(mine["H5D_DATATYPE_SIZE"]).tolist())
    size = int(sizes.pop()) if len(sizes) == 1 else 0
    return size if size > 1 else None


def rows_bytes_per_read(job, data_names):
    """Bytes an H5Dread of the rows' own dataset moved, where the data files' datasets were
    read together as a sample's fields (_read_together: the one moving the most bytes); None
    otherwise."""
    sets, windows = _h5d_sets(job, data_names)
    main = _read_together(sets, windows)
    if main is None or not sets[main]["reads"]:
        return None
    return int(round(sets[main]["bytes"] / sets[main]["reads"]))


def h5d_file_reads(job, data_names):
    """File path -> the H5Dread calls of its samples (its most read dataset's, the ranks'
    records summed)."""
    most = {}
    for name, (reads, _, _) in h5d_datasets(job, data_names).items():
        path = name.split(":", 1)[0]
        most[path] = max(most.get(path, 0), reads)
    return most


def named_count(names):
    """The files of the dataset their names count (the DLIO benchmark's and this project's
    generators name a file ``..._<i>_of_<n>.<ext>``): n where every name says the same n,
    and each its own i below n; else None."""
    counts, indices = set(), set()
    for name in names:
        m = re.search(r"_(\d+)_of_(\d+)\.[^/]*$", str(name))
        if m is None:
            return None
        indices.add(int(m.group(1)))
        counts.add(int(m.group(2)))
    if len(counts) != 1 or len(indices) != len(list(names)):
        return None
    n = counts.pop()
    return n if max(indices) < n else None


def named_prefixes(files_by_rank, count):
    """The files each rank read of its share when the dataset's files are named by their
    number (named_count: ``count`` of them) and dealt to the ranks in contiguous shares of
    count / ranks: k when every rank read the first k of its share (the same k, fewer than
    the share: each stopped there, every epoch); else None. ``files_by_rank``: rank -> the
    names of the files it read."""
    ranks = len(files_by_rank)
    if not ranks or count % ranks:
        return None
    share = count // ranks
    reached = set()
    for rank, names in files_by_rank.items():
        index = sorted(int(re.search(r"_(\d+)_of_\d+\.[^/]*$", str(n)).group(1))
                       for n in names)
        first = int(rank) * share
        if index != list(range(first, first + len(index))):
            return None
        reached.add(len(index))
    if len(reached) != 1:
        return None
    k = reached.pop()
    return k if 0 < k < share else None


def capped_epochs(reads, spf, ranks):
    """(epochs, samples read an epoch) when every epoch read the same share of the data,
    stopping short of its end (a step limit in each epoch, the DLIO benchmark's
    total_training_steps): the files read most read spf samples each epoch (their reads a
    multiple of spf, two epochs or more), every file's reads a multiple of the epochs (the
    same samples each epoch), and a file a rank at most read in part (where each rank's
    share stopped); else None. ``reads``: each file's sample reads."""
    reads = np.asarray(sorted(reads), np.int64)
    if not len(reads) or spf < 1:
        return None
    epochs = int(reads[-1]) // spf
    if epochs < 2 or int(reads[-1]) != epochs * spf or (reads % epochs).any():
        return None
    partial = int((reads < epochs * spf).sum())
    if not partial or partial > ranks:
        return None
    return epochs, int(reads.sum()) // epochs


def h5d_sample_reads(job, data_names):
    """The H5Dread calls of the samples: each data file's most read dataset's, summed (a
    sample's further fields read with it not counted again); 0 without H5D records."""
    most = {}
    for name, (reads, _, _) in h5d_datasets(job, data_names).items():
        path = name.split(":", 1)[0]
        most[path] = max(most.get(path, 0), reads)
    return sum(most.values())


# an H5Dread's bytes are a variable-length dataset's descriptors (hvl_t, 16 bytes a row)
# where its file moved this many times more bytes beneath it (the sequences, from the heap)
VLEN_DESCRIPTOR = 16
VLEN_HEAP_RATIO = 32
# a sequence's read from libhdf5's global heap begins with one of this size (the collection's
# first block), the rest of the collection read right after it
HEAP_BLOCK = 4096


def h5d_vlen(job, trace, data_names):
    """Samples of a variable-length dataset (h5py.vlen_dtype: encoded images in one file),
    or None: a 1-D data dataset of 16-byte elements (libhdf5's sequence descriptors, what its
    H5Dread calls move and Darshan counts) whose files moved VLEN_HEAP_RATIO times more bytes
    beneath them, the sequences read out of libhdf5's global heap. Returns (dataset, rows a
    file, rows read, heap bytes a row and their spread): a sequence's read is a heap block
    and the rest of its collection right after it, in the trace; without one, the files'
    bytes over the rows read."""
    h5d, posix = job.records.get("H5D"), job.records.get("POSIX")
    if h5d is None or h5d.empty or posix is None or "H5D_DATATYPE_SIZE" not in h5d \
            or "H5D_DATASPACE_NDIMS" not in h5d:
        return None
    found = {}
    for k, i in enumerate(np.asarray(h5d["id"]).tolist()):
        name = job.names.get(int(i), "")
        path = name.split(":", 1)[0]
        if path not in data_names or int(h5d["H5D_DATATYPE_SIZE"][k]) != VLEN_DESCRIPTOR \
                or int(h5d["H5D_DATASPACE_NDIMS"][k]) != 1 or int(h5d["H5D_READS"][k]) <= 0:
            continue
        rows, points, _ = found.get(name, (0, 0, path))
        found[name] = (rows + max(0, int(h5d["H5D_BYTES_READ"][k])) // VLEN_DESCRIPTOR,
                       max(points, int(h5d["H5D_DATASPACE_NPOINTS"][k])), path)
    if len(found) != 1:
        return None
    (dataset, (rows, points, _)), = found.items()
    paths = {p for _, _, p in found.values()}
    ids = [int(i) for i, n in job.names.items() if n in paths]
    moved = int(posix[posix["id"].isin(ids)]["POSIX_BYTES_READ"].clip(lower=0).sum())
    if rows <= 0 or moved < VLEN_HEAP_RATIO * rows * VLEN_DESCRIPTOR:
        return None
    # a heap collection holds one sequence or a few (libhdf5 packs small ones into one
    # collection), and a read of a sequence reads its whole collection: the collections
    # read, each once, hold the sequences read
    collections = {}
    if trace is not None:
        for _, reads in trace[trace["id"].isin(ids)].groupby("rank", sort=False):
            reads = reads.sort_values("start", kind="stable")
            fid = reads["id"].to_numpy()
            off, length = reads["offset"].to_numpy(), reads["length"].to_numpy()
            for j in np.flatnonzero(length[:-1] == HEAP_BLOCK):
                if off[j + 1] == off[j] + HEAP_BLOCK and fid[j + 1] == fid[j]:
                    collections[(int(fid[j]), int(off[j]))] = HEAP_BLOCK + int(length[j + 1])
    held = min(rows, points) if points else rows
    if len(collections) >= held // 4:
        sizes = np.asarray(list(collections.values()), np.float64)
        mean, spread = float(sizes.sum()) / held, float(sizes.std())
    else:
        mean, spread = moved / rows, 0.0
    return {"dataset": dataset.split(":", 1)[1].lstrip("/"), "rows": points, "read": rows,
            "bytes": int(round(mean)), "spread": int(round(spread)),
            "collections": len(collections)}


def _rows(job, data_names, sample_bytes, file_size):
    """Samples a file holds: its datasets' bytes (Darshan's H5D records) over a sample's, the
    median over the files; without them, the file's size over a sample's (libhdf5's metadata
    counted in)."""
    by_file = {}
    for name, (_, _, held) in h5d_datasets(job, data_names).items():
        by_file[name.split(":", 1)[0]] = by_file.get(name.split(":", 1)[0], 0) + held
    rows = [held // sample_bytes for held in by_file.values() if held >= sample_bytes]
    return int(np.median(rows)) if rows else max(1, file_size // sample_bytes)


def h5d_bytes_per_write(job, data_names):
    """Bytes an H5Dwrite call of the data datasets moved (H5D_BYTES_WRITTEN over H5D_WRITES
    over their records that wrote), or None."""
    h5d = job.records.get("H5D")
    if h5d is None or h5d.empty or "H5D_WRITES" not in h5d or "H5D_BYTES_WRITTEN" not in h5d:
        return None
    names = [job.names.get(int(i), "").split(":", 1)[0] for i in h5d["id"]]
    mine = h5d[[n in data_names for n in names] & (np.asarray(h5d["H5D_WRITES"]) > 0)]
    writes = int(mine["H5D_WRITES"].sum())
    return int(mine["H5D_BYTES_WRITTEN"].clip(lower=0).sum()) // writes if writes else None


# a dataset read in blocks of rows holds at least this many blocks (a batch loop), where one
# read per rank of a half or a quarter of it is a slab (h5bench), not a batch
ROW_BLOCKS_LEAST = 8


def h5d_row_blocks(job, data_names):
    """(row bytes, rows a read) when the data datasets, of two dimensions or more, were read
    in blocks of several whole rows: most H5Dread calls one regular hyperslab
    (H5D_REGULAR_HYPERSLAB_SELECTS) of the same size (H5D_ACCESS1), H5D_ACCESS1_LENGTH_D5
    rows along the first dimension (Darshan keeps a selection's dimensions last first, D5
    the first), the other dimensions' lengths dividing the dataset's points, each dataset
    holding ROW_BLOCKS_LEAST such blocks or more and read that often: a batch's rows read as
    one slice (ds[i:i + n]), a row the sample (the dataset's first dimension indexes its
    samples, as the DLIO benchmark's HDF5 files are laid out). None otherwise, and for a job
    whose reads a data loader's worker processes made: there each H5Dread is an item of the
    loader's dataset (its __getitem__ returning the slice), the sample."""
    if job.workers:
        return None
    h5d = job.records.get("H5D")
    need = ("H5D_ACCESS1_LENGTH_D5", "H5D_DATASPACE_NDIMS", "H5D_ACCESS1_ACCESS",
            "H5D_ACCESS1_COUNT", "H5D_REGULAR_HYPERSLAB_SELECTS", "H5D_DATASPACE_NPOINTS",
            "H5D_DATATYPE_SIZE")
    if h5d is None or h5d.empty or any(c not in h5d for c in need):
        return None
    names = [job.names.get(int(i), "").split(":", 1)[0] for i in h5d["id"]]
    mine = h5d[[n in data_names for n in names] & (np.asarray(h5d["H5D_READS"]) > 0)]
    # a sample's fields read with its rows (a label's dataset): the rows' own dataset's
    # blocks alone
    main = _read_together(*_h5d_sets(job, data_names))
    if main is not None:
        mine = mine[[job.names.get(int(i), "").partition(":")[2].lstrip("/") == main
                     for i in mine["id"]]]
    if mine.empty:
        return None
    mine = mine.reset_index(drop=True)
    found = set()
    for k in range(len(mine)):
        ndims, n = int(mine["H5D_DATASPACE_NDIMS"][k]), int(mine["H5D_ACCESS1_LENGTH_D5"][k])
        reads, size = int(mine["H5D_READS"][k]), int(mine["H5D_DATATYPE_SIZE"][k])
        if ndims < 2 or n < 2 or size < 1 \
                or int(mine["H5D_REGULAR_HYPERSLAB_SELECTS"][k]) < STREAM_SHARE * reads \
                or int(mine["H5D_ACCESS1_COUNT"][k]) < STREAM_SHARE * reads:
            return None
        row_points = 1
        for d in range(5 - ndims + 1, 5):
            row_points *= max(0, int(mine[f"H5D_ACCESS1_LENGTH_D{d}"][k]))
        points = int(mine["H5D_DATASPACE_NPOINTS"][k])
        access = int(mine["H5D_ACCESS1_ACCESS"][k])
        if row_points < 1 or points % row_points or access != n * row_points * size:
            return None
        rows = points // row_points
        if rows < ROW_BLOCKS_LEAST * n or reads < ROW_BLOCKS_LEAST:
            return None
        found.add((row_points * size, n))
    return found.pop() if len(found) == 1 else None


# the H5D counters a dataset's boxes are told from (h5d_boxes)
BOX_COUNTERS = ("H5D_ACCESS1_LENGTH_D5", "H5D_DATASPACE_NDIMS", "H5D_ACCESS1_COUNT",
                "H5D_READS", "H5D_REGULAR_HYPERSLAB_SELECTS", "H5D_DATASPACE_NPOINTS",
                "H5D_DATATYPE_SIZE", "H5D_CHUNK_SIZE_D1")


def h5d_boxes(job, data_names):
    """The box every H5Dread of each data dataset selected, of datasets of 2 to 5 dimensions
    read by one regular hyperslab of one shape at least STREAM_SHARE of the time: a list of
    (dataset name, reads, box, chunk, points, itemsize) per H5D record, the box and chunk
    first dimension first (Darshan keeps a selection's lengths last first, D5 the first, and
    a chunk's first first); None when a record's reads are not such boxes, or without H5D
    records giving them."""
    h5d = job.records.get("H5D")
    if h5d is None or h5d.empty or any(c not in h5d for c in BOX_COUNTERS):
        return None
    col = {c: np.asarray(h5d[c]) for c in h5d if c == "id" or str(c).startswith("H5D_")}
    out = []
    for k in range(len(col["id"])):
        path, _, name = job.names.get(int(col["id"][k]), "").partition(":")
        reads = int(col["H5D_READS"][k])
        if path not in data_names or reads <= 0 or not name:
            continue
        nd = int(col["H5D_DATASPACE_NDIMS"][k])
        if not 2 <= nd <= 5 or int(col["H5D_ACCESS1_COUNT"][k]) < STREAM_SHARE * reads \
                or int(col["H5D_REGULAR_HYPERSLAB_SELECTS"][k]) < STREAM_SHARE * reads:
            return None
        out.append((name.lstrip("/"), reads,
                    [int(col[f"H5D_ACCESS1_LENGTH_D{5 - d}"][k]) for d in range(nd)],
                    [int(col[f"H5D_CHUNK_SIZE_D{nd - d}"][k]) for d in range(nd)],
                    int(col["H5D_DATASPACE_NPOINTS"][k]),
                    max(1, int(col["H5D_DATATYPE_SIZE"][k]))))
    return out


def h5d_chunk_boxes(job, data_names):
    """A chunk's bytes when every data dataset, of two dimensions or more and chunked, was read
    one whole chunk an H5Dread: its box (h5d_boxes) the chunk's, smaller than the dataset;
    None otherwise."""
    found = set()
    for _, _, box, chunk, points, itemsize in h5d_boxes(job, data_names) or ():
        if box != chunk or min(chunk) < 1 or int(np.prod(chunk)) >= points:
            return None
        found.add(int(np.prod(chunk)) * itemsize)
    return found.pop() if len(found) == 1 else None


def h5d_opens_per_read(job, data_names):
    """The data datasets' H5Dopen calls per H5Dread (H5D_OPENS over H5D_READS over their
    records that read), or None without H5D records: 1 or more when the program opened the
    dataset for each read (h5py's f["x"][i])."""
    h5d = job.records.get("H5D")
    if h5d is None or h5d.empty or "H5D_OPENS" not in h5d or "H5D_READS" not in h5d:
        return None
    names = [job.names.get(int(i), "").split(":", 1)[0] for i in h5d["id"]]
    mine = h5d[[n in data_names for n in names] & (np.asarray(h5d["H5D_READS"]) > 0)]
    reads = int(mine["H5D_READS"].sum())
    return int(mine["H5D_OPENS"].clip(lower=0).sum()) / reads if reads else None


def h5d_datasets(job, data_names):
    """Dataset name -> (H5Dread calls, bytes read, bytes the dataset holds) over the data
    files' H5D records that read (the ranks' records summed; the bytes held from
    H5D_DATASPACE_NPOINTS times H5D_DATATYPE_SIZE)."""
    h5d = job.records.get("H5D")
    if h5d is None or h5d.empty or "H5D_READS" not in h5d:
        return {}
    n = len(h5d)
    column = (lambda c: np.asarray(h5d[c]) if c in h5d else np.zeros(n, np.int64))
    points, size = column("H5D_DATASPACE_NPOINTS"), column("H5D_DATATYPE_SIZE")
    out = {}
    for i, reads, nbytes, p, t in zip(np.asarray(h5d["id"]).tolist(),
                                      column("H5D_READS").tolist(),
                                      column("H5D_BYTES_READ").tolist(), points.tolist(),
                                      size.tolist()):
        name = job.names.get(int(i), "")
        if name.split(":", 1)[0] not in data_names or int(reads) <= 0:
            continue
        r, b, h = out.get(name, (0, 0, 0))
        out[name] = (r + int(reads), b + max(0, int(nbytes)), max(h, int(p) * max(1, int(t))))
    return out


# a compressed chunk stored in less than this share of its bytes: content that compresses
# (dataset.content_fill); above it the emulator's random content is near enough
CONTENT_FILL_LEAST = 0.9
ROUND_ROBIN_BLOCK = 64


def data_reads(trace):
    """The reads of at least half the size that moves the middle byte read: a library's
    small metadata reads (libhdf5's superblock and object headers, which every rank makes
    at the same places, more of them than of the data's reads) left out."""
    lengths = trace["length"].to_numpy()
    middle = middle_byte_size(lengths)
    return trace if middle is None else trace[lengths >= 0.5 * middle]


def middle_byte_size(lengths):
    """The size of the reads that moves the middle byte of those of ``lengths`` (reads of
    few bytes, however many, weigh little), or None without a read of a byte."""
    moved = np.sort(np.asarray(lengths)[np.asarray(lengths) > 0])
    if not len(moved):
        return None
    total = np.cumsum(moved)
    return float(moved[int(np.searchsorted(total, total[-1] / 2))])     # the most samples in a block of block-cyclic sharding tried


def round_robin(trace, record, ranks, block=1):
    """True when the ranks read a shared file's samples (record bytes each) round robin,
    `block` samples at a time: every rank's blocks fall in one residue class modulo the rank
    count, a different one per rank (IOR's segments interleave the ranks' blocks), and a rank
    reads each of its blocks whole."""
    if ranks < 2 or record <= 0:
        return False
    residues = set()
    for _, reads in trace.groupby("rank", sort=False):
        ids = np.unique(reads["offset"].to_numpy() // record)
        blocks = np.unique(ids // block)
        res = np.unique(blocks % ranks)
        if len(blocks) < 2 or len(res) != 1 or (block > 1 and len(ids) != len(blocks) * block):
            return False
        residues.add(int(res[0]))
    return len(residues) == trace["rank"].nunique() == ranks


def round_robin_block(trace, record, ranks):
    """The samples of a turn when the ranks read a shared file round robin (round_robin), the
    fewest that show it (1: sample by sample; k: IOR's block of k transfers), else 0. Of the
    data's reads: a library's small metadata reads, which every rank makes in the same
    places (libhdf5's object headers), are no rank's turn."""
    trace = data_reads(trace)
    for k in range(1, ROUND_ROBIN_BLOCK + 1):
        if round_robin(trace, record, ranks, k):
            return k
    return 0


def round_robin_shift(trace, record, ranks, block):
    """When the ranks read a shared file round robin, `block` samples a turn (round_robin):
    the k for which every rank r read the turns of rank (r + k) mod n, the same k for all
    (IOR's -C and -Z read another task's blocks); 0 when each read its own or the ranks'
    places are no one shift."""
    shifts = set()
    for rank, reads in data_reads(trace).groupby("rank", sort=False):
        turns = np.unique(reads["offset"].to_numpy() // record // block % ranks)
        if len(turns) != 1 or int(rank) < 0:
            return 0
        shifts.add(int(turns[0] - int(rank)) % ranks)
    return shifts.pop() if len(shifts) == 1 else 0


def footer_reads(trace, sizes):
    """Per read, whether it ends at its file's end: pyarrow opens a Parquet file by reading
    its end (formats/parquet.footer_reads)."""
    size = trace["id"].map(lambda i: sizes.get(int(i), -1)).to_numpy()
    return (trace["offset"] + trace["length"]).to_numpy() == size


def parquet_footer_reads(trace, sizes):
    """(footer reads, other reads) of Parquet files' data reads (footer_reads)."""
    footer = footer_reads(trace, sizes)
    return int(footer.sum()), int((~footer).sum())


def hdf5_libver(trace):
    """The HDF5 file format from the superblock read at an open: libhdf5 1.10 reads the
    signature, then the rest of the superblock from offset 16: 32 bytes for versions 2 and 3
    (h5py's libver="latest"), 80 for version 0 (the default); libhdf5 2.0 reads a version 2
    or 3 superblock whole, 48 bytes from offset 0. None when neither shows."""
    at16 = trace.loc[trace["offset"] == 16, "length"]
    if (at16 == 32).any():
        return "latest"
    if (at16 == 80).any():
        return "earliest"
    if (trace.loc[trace["offset"] == 0, "length"] == 48).any():
        return "latest"
    return None


def image_pattern(trace, sizes, decoder=None):
    """(buffer size, request size) when at least STREAM_SHARE of the (rank, file) pairs read
    their file as an image decoder does through Python's buffered file (PIL: the header's
    buffer fill at offset 0, then requests of one size to the end, and the end-of-file probe;
    for a PNG file (decoder "png"), its IDAT chunks one after another as Pillow writes them;
    once per open; a file smaller than the buffer is its fill alone, read whole in one read,
    which says nothing of the sizes but agrees with them), else None."""
    from dlio_mpi.formats import png
    from dlio_mpi.readers.numpy_reads import image_reads, png_reads

    found, pairs, whole = [], 0, 0
    for (_, fid), reads in trace.groupby(["rank", "id"], sort=False):
        pairs += 1
        reads = reads.sort_values("start", kind="stable")
        off, ln = reads["offset"].to_numpy(), reads["length"].to_numpy()
        size = sizes.get(int(fid))
        if size is not None and len(off) and (off == 0).all() and (ln == size).all():
            whole += 1          # the buffer's fill held the file
            continue
        if size is None or len(off) < 2 or off[0] != 0 or off[1] != ln[0]:
            continue
        buffer, request = int(ln[0]), int(ln[0] + ln[1])
        if decoder == "png":
            request = max(request, PIL_BLOCK)
            try:
                o, n = png_reads(size, tuple(png.idat_chunks(size)), buffer, request)
            except ValueError:      # not chunked as Pillow chunks a file
                continue
        else:
            if off[1] + ln[1] >= size:
                # the file's rest in one read: PIL asked for more than there was
                request = max(request, PIL_BLOCK)
            o, n = image_reads(size, buffer, request)
        got = np.clip(np.minimum(o + n, size) - o, 0, None)
        one = list(zip(o.tolist(), got.tolist()))
        seen = list(zip(off.tolist(), ln.tolist()))
        if one and len(seen) % len(one) == 0 and seen == one * (len(seen) // len(one)):
            found.append((buffer, request))
    if not found or len(found) + whole < STREAM_SHARE * pairs:
        return None
    values, counts = np.unique(np.array(found), axis=0, return_counts=True)
    return tuple(int(x) for x in values[np.argmax(counts)])


def library_pattern(job, trace, data, fmt, layout, read_type, file_size, notes, evidence):
    """(record, samples per file, transfer size, reader keys, epochs or None, files taken in
    ascending order or None) when the trace shows how the input library read (see
    dlio_mpi_analysis.fitting.fit_patterns), else None."""
    if trace is None or read_type != "on_demand":
        return None
    sizes = {int(i): int(v) for i, v in data["size"].items()}
    names = {int(i): n for i, n in data["name"].items()}
    ascending = file_order_ascending(trace, names)
    evidence["files_in_name_order"] = ascending
    files, total = len(data), int(data["bytes_read"].sum())
    t = traits(fmt)
    if t.numpy_load and not t.numpy_fromfile:
        loads = numpy_loads(trace, sizes)
        if loads is not None:
            count, buffer = loads
            evidence["numpy_loads"] = {"loads": count, "buffer_size": buffer}
            per_load = total / max(count, 1)
            extra = {"access": "numpy", "buffer_size": buffer}
            if per_load >= 0.9 * file_size:
                run = load_runs(trace, sizes)
                evidence["loads_in_a_row"] = run
                if run > 1:
                    # each of a file's samples loads all of it, one after another: the
                    # samples of one stacked array (the DLIO benchmark's NPZ files)
                    spf, epochs = run, max(1, int(round(count / (files * run))))
                    record = _stacked_sample_bytes(file_size, run)
                    evidence["npz_layout"] = "stacked"
                    notes.append(f"each file was loaded whole {run} times in a row: {run} "
                                 "samples of one stacked array (dataset.npz_layout=stacked)")
                    columns = np.array([_stacked_sample_bytes(v, run) for v in
                                        data["size"].to_numpy().tolist()], np.float64)
                    mean, spread = float(columns.mean()), float(columns.std())
                    if spread > SPREAD_SHARE * mean:
                        # files of arrays of their own sizes, a file's samples one size (the
                        # DLIO benchmark's record_length_bytes_stdev over stacked samples)
                        record, stdev = int(round(mean)), int(round(spread))
                        evidence["record_length_stdev"] = stdev
                        seed, off = size_seed(len(columns), run, float(columns.sum()) * run,
                                              spread, mean, stdev, stacked=True)
                        evidence["size_seed"] = {"seed": seed, "total_difference": off}
                        notes.append(f"the files' arrays differ in size, a file's {run} "
                                     f"samples one size: dataset.record_length {record} their "
                                     f"mean, record_length_stdev {stdev} their spread; "
                                     f"train.seed {seed} draws sizes that total the arrays' "
                                     f"bytes within {off:.1%}")
                else:
                    spf, epochs = 1, max(1, int(round(count / files)))
                    member = _npz_member_bytes
                    if _stacked_one(trace, data, file_size):
                        # the load's reads at the places a stacked file of one sample has
                        # them (x and its labels y: a longer zip directory), not those of
                        # one member alone
                        member = (lambda v: _stacked_sample_bytes(v, 1))
                        evidence["npz_layout"] = "stacked"
                        notes.append("each load read the zip's directory where a file of "
                                     "two members has it (x and its labels y, as the DLIO "
                                     "benchmark saves a file of one sample): "
                                     "dataset.npz_layout=stacked")
                    record = member(file_size)
                    members = np.array([member(v) for v in
                                        data["size"].to_numpy().tolist()], np.float64)
                    mean, spread = float(members.mean()), float(members.std())
                    if spread > SPREAD_SHARE * mean:
                        # files of arrays of their own sizes (the DLIO benchmark's
                        # record_length_bytes_stdev): their mean and spread
                        record, stdev = int(round(mean)), int(round(spread))
                        evidence["record_length_stdev"] = stdev
                        seed, off = size_seed(len(members), 1, float(members.sum()), spread,
                                              mean, stdev)
                        evidence["size_seed"] = {"seed": seed, "total_difference": off}
                        notes.append(f"the files' arrays differ in size: dataset.record_length "
                                     f"{record} their mean, record_length_stdev {stdev} "
                                     f"their spread; train.seed {seed} draws sizes that total "
                                     f"the arrays' bytes within {off:.1%}")
                return record, spf, 0, extra, epochs, ascending
            else:
                spf = max(1, int(round(file_size / per_load)))
                record = _npz_member_bytes(per_load)
                epochs = max(1, int(round(count / (files * spf))))
            return (record, spf, 0, {"access": "numpy", "buffer_size": buffer}, epochs,
                    ascending)
    if t.numpy_fromfile:
        loads = npy_loads(job, trace, data)
        if loads is not None:
            count, buffer, array = loads
            evidence["npy_loads"] = {"loads": count, "buffer_size": buffer,
                                     "array_bytes": array}
            heads = (lambda r: (r["offset"].to_numpy() == 0) & (r["length"].to_numpy() > 0))
            run = start_runs(trace, heads)
            evidence["loads_in_a_row"] = run
            arrays = npy_arrays(job, data)
            if arrays is not None:
                # files of arrays of their own sizes (the DLIO benchmark's
                # record_length_bytes_stdev): their samples' mean and spread, a file's
                # samples one size
                columns = arrays / run
                mean, spread = float(columns.mean()), float(columns.std())
                if spread > SPREAD_SHARE * mean:
                    array, stdev = int(round(mean)) * run, int(round(spread))
                    evidence["record_length_stdev"] = stdev
                    seed, off = size_seed(len(columns), run, float(arrays.sum()), spread, mean,
                                          stdev, stacked=run > 1)
                    evidence["size_seed"] = {"seed": seed, "total_difference": off}
                    notes.append(f"the files' arrays differ in size (each file's by its "
                                 f"freads): dataset.record_length {int(round(mean))} their "
                                 f"samples' mean, record_length_stdev {stdev} their spread; "
                                 f"train.seed {seed} draws sizes that total the arrays' bytes "
                                 f"within {off:.1%}")
            if run > 1:
                # each of a file's samples loads all of it, one after another (the DLIO
                # benchmark's NPY reader: np.load of the file for every sample it takes)
                notes.append(f"numpy.load of .npy files: the header through a buffered file, "
                             f"the array through C stdio; each file was loaded whole {run} "
                             f"times in a row before its rank loaded another: {run} samples "
                             "a file, each loading the whole array")
                return (max(1, array // run), run, 0,
                        {"access": "numpy", "buffer_size": buffer},
                        max(1, int(round(count / (files * run)))), ascending)
            notes.append("numpy.load of .npy files: the header through a buffered file, the "
                         "array through C stdio; a load reads the whole array, so the samples "
                         "in it cannot be told apart: one sample per file")
            return (array, 1, 0, {"access": "numpy", "buffer_size": buffer},
                    max(1, int(round(count / files))), ascending)
    if t.opaque and t.decoder is None and not t.companions and layout == "multi":
        loads = python_reads_whole(trace, sizes)
        if loads is not None:
            size, spread = _file_sizes(data, evidence)
            evidence["python_whole_reads"] = {"loads": loads}
            generations = worker_generations(job.workers)
            passes = balanced_passes(trace[(trace["offset"] == 0) & (trace["length"] > 0)])
            epochs = generations if generations >= 2 else passes
            per_file = loads / files / max(epochs, 1)
            if epochs >= 2 and not spread and round(per_file) >= 2 \
                    and abs(per_file - round(per_file)) <= LOADS_SLACK * round(per_file):
                # every epoch each file read whole several times, in no run: each of its
                # samples loads the whole file (a chunk of a zarr array read for each row it
                # holds). The epochs: a loader's worker generations (new every epoch), else
                # the passes in which every file was loaded as often
                spf = int(round(per_file))
                evidence["worker_generations"] = generations
                evidence["balanced_passes"] = passes
                notes.append((f"the loader's workers came in {generations} generations (new "
                              f"every epoch: {generations} epochs)" if generations >= 2 else
                              f"the loads fall in {passes} passes in each of which every file "
                              f"was loaded as often ({passes} epochs)")
                             + f", each reading every file whole {spf} times: {spf} samples a "
                             "file, each read loading the whole file (reader.access=file)")
                return (max(1, int(round(float(size.mean()))) // spf), spf, 0,
                        {"access": "file"}, epochs, ascending)
            notes.append("each file read whole by Python's f.read() (the file in one read, "
                         "then a read at its end that returns nothing), opened for it: a "
                         "sample a file (reader.access=file; dataset.record_length the mean "
                         f"file size, record_length_stdev {spread} their spread)")
            # a sample a file: the samples' order is the files'
            return (int(round(float(size.mean()))), 1, 0, {"access": "file"},
                    max(1, int(round(loads / files))), ascending)
    if t.opaque and t.decoder is None and not t.companions and layout == "multi":
        found = torch_loads(trace, sizes)
        if found is not None:
            loads, tensors = found
            size, spread = _file_sizes(data, evidence)
            evidence["torch_loads"] = {"loads": loads, "tensors": tensors}
            notes.append(f"each file loaded whole as torch.load reads the zip torch.save "
                         f"makes (its end records and directory from the end, then each "
                         f"tensor in one call), opened for it: a sample a file of {tensors} "
                         f"tensor(s) (reader.access=torch, reader.torch_tensors {tensors}; "
                         f"dataset.record_length the mean file size, record_length_stdev "
                         f"{spread} their spread)")
            return (int(round(float(size.mean()))), 1, 0,
                    {"access": "torch", **({"torch_tensors": tensors} if tensors > 1 else {})},
                    max(1, int(round(loads / files))), ascending)
        found = pickle_loads(trace, sizes)
        if found is not None:
            loads, buffer, tail, frame = found
            size, spread = _file_sizes(data, evidence)
            evidence["pickle_loads"] = {"loads": loads, "buffer_size": buffer, "tail": tail,
                                        "frame": frame}
            notes.append(f"each file loaded whole as pickle.load reads it through a buffered "
                         f"file of {buffer} bytes (a fill at its start, the rest asked for at "
                         "once: whole buffers read straight in, then a fill of the tail), "
                         "opened for it: a sample a file (reader.access=pickle; "
                         f"dataset.record_length the mean file size, record_length_stdev "
                         f"{spread} their spread)")
            if tail:
                notes.append(f"a large object outside the pickle's frames, read straight in, "
                             f"then its last frame of {tail} bytes (reader.pickle_tail)")
            if frame:
                notes.append(f"a pickle of many objects, its frames of {frame} bytes asked "
                             "for in turn, each a buffer fill and the rest straight in "
                             "(reader.pickle_frame; the objects inside cannot be seen: a "
                             "sample is the file)")
            return (int(round(float(size.mean()))), 1, 0,
                    {"access": "pickle", "buffer_size": buffer,
                     **({"pickle_tail": tail} if tail else {}),
                     **({"pickle_frame": frame} if frame else {})},
                    max(1, int(round(loads / files))), ascending)
    if t.opaque and not t.companions and layout == "multi":
        decoder = t.decoder
        image = image_pattern(trace, sizes, decoder)
        if image is not None:
            buffer, request = image
            evidence["image_reads"] = {"buffer_size": buffer, "request": request}
            loads = files * max(1, int(round(total / max(int(data["size"].sum()), 1))))
            record = file_size
            if decoder is not None:
                # the format's record length is the decoded image's pixels: those of the
                # image whose file the format's own encoder makes of the files' median size
                from dlio_mpi import formats
                module = formats.get(fmt)
                fill = 1.0
                if hasattr(module, "image_for"):
                    # a lossless format's file size is set to the byte by its content's fill
                    record, fill = module.image_for(file_size)
                else:
                    record = module.record_length_for(file_size)
                evidence["image_pixels"] = record
                if fill < 1.0:
                    evidence["content_fill"] = fill
                    notes.append(f"the image's content {fill:.2%} random (dataset."
                                 f"content_fill {fill}): its {fmt} file {file_size} B to "
                                 "within a few bytes, as the reads of a buffered file split "
                                 "at its size")
                notes.append(f"{fmt} files read whole as PIL reads them: one image per file; "
                             f"dataset.record_length {record} is the pixels of the square "
                             f"greyscale image whose {fmt} file has the files' median size "
                             f"({file_size} B), as this emulator's encoder writes it (the "
                             "real images' pixels cannot be seen)")
            else:
                notes.append("files read whole as an image decoder reads them (PIL): one "
                             "sample per file")
            return (record, 1, request, {"access": "image", "buffer_size": buffer},
                    max(1, int(round(loads / files))), ascending)
    if t.opaque and t.decoder is None and not t.companions and layout == "multi":
        whole = whole_file_loads(trace, sizes)
        # (every read an open of its own: a sample each, its file opened for it, the
        # DLIO benchmark's indexed binary reader's, not one load of the whole file)
        if whole is not None and _opens(job, data) < OPEN_EACH_READ * int(
                (trace["length"].to_numpy() > 0).sum()):
            loads, block, eof = whole
            size, spread = _file_sizes(data, evidence)
            evidence["whole_file_loads"] = {"loads": loads, "block": block, "eof_reads": eof}
            epochs = max(1, int(round(loads / files)))
            notes.append(f"each file was read whole by one rank, {loads / files:.3g} times "
                         f"(an open each), in {block}-byte reads: a sample is the whole file "
                         f"(dataset.record_length the mean file size, record_length_stdev "
                         f"{spread} their spread"
                         + (f", train.seed {evidence['size_seed']['seed']} draws sizes "
                            f"that total the files' bytes within "
                            f"{evidence['size_seed']['total_difference']:.1%}" if spread
                            else "") + f"), {epochs} epochs")
            if ascending is False:
                notes.append("a rank takes its own files in an order of its own each epoch: "
                             "the emulator keeps each file on its rank and reads them in "
                             "name order (the counters of each file are the same)")
            extra = {"access": "stream", "eof_reads": eof} if eof else {}
            return (int(round(float(size.mean()))), 1, block, extra, epochs, True)
    if t.opaque and t.decoder is None and not t.companions:
        found = buffered_samples(trace, sizes)
        if found is not None:
            record, buffer = found
            evidence["buffered_reads"] = {"record": record, "buffer_size": buffer}
            spf = max(1, file_size // record)
            shuffled = (evidence.get("forward_jump_share") or 1.0) < SHUFFLED_FORWARD
            per_epoch = files * spf if shuffled else files * -(-file_size // buffer)
            epochs = max(1, int(round(len(trace) / per_epoch)))
            notes.append(f"reads of {buffer} bytes at multiples of {record} bytes: samples of "
                         f"{record} bytes read by seek and read through a buffered file of "
                         f"{buffer} bytes (reader.access=buffered), each read a buffer fill "
                         "from a sample's offset")
            return (record, spf, 0, {"access": "buffered", "buffer_size": buffer}, epochs,
                    None)
    stream = stream_block(trace, sizes) if layout == "multi" and (
        t.streamed or (t.opaque and t.decoder is None and not t.companions)) else None
    if stream is not None and not t.streamed and stream[2] < 2:
        # files of no streamed format read front to back one at a time: samples in file
        # order are the same I/O, fitted as such below
        stream = None
    if stream is not None:
        # the formats whose readers stream, and files of any other read front to back
        # several at once, a block from each in turn (tf.data's interleave over files whose
        # names tell no format: GZIP TFRecords, ImageNet's train-00000-of-01024)
        block, eof, at_once = stream
        evidence["stream_block"] = block
        evidence["stream_files_at_once"] = at_once
        extra = {"access": "stream", **({"eof_reads": eof} if eof else {}),
                 **({"interleave": at_once} if at_once > 1 else {})}
        if at_once > 1:
            notes.append(f"a rank reads {at_once} of its files at once, a sample from "
                         "each in turn (reader.interleave; tf.data's num_parallel_reads "
                         "may be more, a rank with fewer files cannot show it)")
        run, passes, visits = pass_runs(trace, sizes) if at_once == 1 else (1, 0, 0)
        evidence["passes_in_a_row"] = run
        ascending = file_order_ascending(trace, names, at_once)
        evidence["files_in_name_order"] = ascending
        if ascending is False and own_files_each_pass(trace):
            # a file shuffle would deal the files to other ranks every epoch: the job
            # kept each file on its rank, pass after pass, only its order its own
            ascending = None
            notes.append("a rank takes its files out of their names' order but keeps "
                         "the same files every pass (each file read by one rank only): "
                         "no file shuffle, which would move files between ranks; the "
                         "emulator reads a rank's files in name order")
        if ascending is False:
            extra["file_shuffle"] = "seed"
            notes.append("a rank takes its files out of their names' order: "
                         "reader.file_shuffle seed")
        if run > 1:
            # each sample loads its whole file, the file's samples one after another
            extra["stream_pass"] = "sample"
            epochs = max(1, int(round(passes / (files * run))))
            spf = run
            if job.workers and visits:
                # a loader's workers each visit a file once an epoch (a new generation
                # of workers each epoch, or the same workers epoch after epoch), several
                # of them at once where a file's samples fill several batches: the
                # file's samples are its loads in an epoch
                by_visits = visits * max(1, worker_generations(job.workers))
                samples = int(round(passes / (files * by_visits)))
                if samples > run:
                    epochs, spf = by_visits, samples
                    evidence["worker_visits"] = {"visits": visits, "run": run}
            notes.append(f"each file was read whole {run} times in a row, from a new open "
                         f"each time, before the process reading it read another"
                         + (f" (and as often by its sibling workers at once: {spf} loads "
                            "a file an epoch)" if spf != run else "")
                         + f": {spf} samples a file, each loading the whole file "
                         "(reader.stream_pass=sample, as pandas.read_csv in the DLIO "
                         f"benchmark's CSV reader), {epochs} epochs")
            record = whole_fields(fmt, max(1, file_size // spf - framing(fmt)))
            return record, spf, block, extra, epochs, True
        # samples of about one block, as many as keep the file its real size
        spf = max(1, int(round(file_size / block)))
        sizes_seen = data["size"].to_numpy()
        if spf == 1 and float(sizes_seen.std()) > SPREAD_SHARE * float(sizes_seen.mean()):
            # files of about a block or less, of sizes far apart (a record a file, as
            # the DLIO benchmark's cosmoflow writes them): a file's one sample, its size
            # the file's, the mean and spread of the files'; a file of more than a block
            # reads its tail apart, as the job's did
            size, spread = _file_sizes(data, evidence)
            notes.append("files read front to back in fixed blocks: a stream, a record a "
                         "file of the files' sizes (dataset.record_length their mean, "
                         f"record_length_stdev {spread}); a shuffle buffer cannot be "
                         "seen: reader.sample_shuffle off")
            record = whole_fields(fmt, max(1, int(round(float(size.mean())))
                                           - framing(fmt)))
            return record, 1, block, extra, None, True
        notes.append("files read front to back in fixed blocks: a stream; its records "
                     "cannot be seen, samples of about one block are chosen, as many "
                     "as keep the files their size; nor can a shuffle buffer: "
                     "reader.sample_shuffle off")
        record = whole_fields(fmt, max(1, file_size // spf - framing(fmt)))
        return record, spf, block, extra, None, True
    if t.rows:
        libver = hdf5_libver(trace)
        if libver is not None:
            evidence["hdf5_libver"] = libver
        vlen = h5d_vlen(job, trace, set(names.values()))
        if vlen is not None:
            # the H5Dread calls moved the rows' descriptors; the samples are the sequences
            evidence["hdf5_vlen"] = True
            evidence["hdf5_vlen_reads"] = vlen
            if vlen["spread"] > SPREAD_SHARE * vlen["bytes"]:
                evidence["record_length_stdev"] = vlen["spread"]
            notes.append(f"dataset {vlen['dataset']} is of variable-length sequences (its "
                         f"H5Dread calls moved {VLEN_DESCRIPTOR}-byte descriptors a row, the "
                         "file far more beneath them): a sample is a sequence of "
                         f"{vlen['bytes']} bytes (spread {vlen['spread']}) read from "
                         "libhdf5's global heap (dataset.hdf5_vlen), an H5Dread a sample")
            return (vlen["bytes"], vlen["rows"], 0, {"hdf5_reads": "sample"}, None, ascending)
        per_read = h5d_bytes_per_read(job, set(names.values()))
        if per_read:
            evidence["h5d_bytes_per_read"] = per_read
            chunk = hdf5_chunk(trace, per_read)
            recorded = h5d_chunk_bytes(job, set(names.values()))
            scattered = h5d_scattered_share(job, set(names.values()))
            # a sample's fields read with its rows (an image's and its label's datasets): the
            # rows' own dataset's H5Dread holds the rows libhdf5 read one by one
            own = rows_bytes_per_read(job, set(names.values())) or per_read
            rows_chunk = hdf5_chunk(trace, own) if own != per_read else chunk
            element = record_elements(job, set(names.values()))
            if not recorded and element and element < own and own % element == 0 \
                    and scattered >= STREAM_SHARE and (rows_chunk is None or rows_chunk > own):
                # scattered records of a 1-D dataset of compound elements, libhdf5's sieve
                # buffer filling 64 KiB from each it does not hold: a record is the row
                rows_chunk = element
            if not recorded and rows_chunk is not None and rows_chunk < own \
                    and scattered >= STREAM_SHARE:
                # each H5Dread selected scattered rows of a contiguous dataset (a batch's
                # rows by index, h5py's dset[[i, j, ...]]): libhdf5 read each row on its own,
                # and a row is the sample (with its fields' share); the H5Dread is a batch's
                # union of rows
                rows = own // rows_chunk
                record = int(round(per_read / rows))
                evidence["h5d_scattered_rows"] = {"row": rows_chunk, "rows": rows,
                                                  "share": scattered}
                notes.append(f"{scattered:.0%} of the H5Dread calls selected scattered rows "
                             "(an irregular hyperslab), "
                             + (f"each read by libhdf5 on its own in {rows_chunk}-byte pieces"
                                if rows_chunk != element else
                                f"records of {element} bytes of a 1-D dataset (its "
                                "elements), libhdf5's sieve buffer filling from each it did "
                                "not hold")
                             + f": a sample is a row of {record} bytes "
                             + (f"(its fields' counted) " if record != rows_chunk else "")
                             + f"and an H5Dread a batch's {rows} rows in one union "
                             "(reader.hdf5_reads batch)")
                return (record, _rows(job, set(names.values()), record, file_size), 0, {},
                        None, ascending)
            if recorded and recorded < per_read and _wrote_data(job, set(names)):
                # the job wrote its rows in chunks smaller than a row (IOR's HDF5 datasets,
                # chunked by transfer): the emulator writes whole rows a chunk
                notes.append(f"Darshan's H5D record gives chunks of {recorded} bytes, less "
                             f"than a row ({per_read} bytes) of files the job wrote: fitted "
                             "contiguous")
                recorded = None
            if recorded and (recorded != per_read or compressed_chunks(trace, recorded)
                             or read_in_chunks(trace, recorded)):
                # (a chunk a sample is still a chunked dataset when its chunks were read
                # through a filter, in sizes of their own, or read a chunk a call: a
                # contiguous one is read in libhdf5's sieve buffer's fills)
                evidence["hdf5_chunk"] = recorded
                notes.append(f"Darshan's H5D record gives the datasets' chunks: "
                             f"{recorded} bytes (dataset.chunk_size={recorded})")
                if compressed_chunks(trace, recorded):
                    evidence["compression"] = "gzip"
                    notes.append("the chunks were read in sizes of their own, not "
                                 f"{recorded} bytes: stored through a filter; Darshan does "
                                 "not record which, gzip is taken (dataset.compression gzip)")
                    share = compressed_share(trace, recorded)
                    if share is not None and share < CONTENT_FILL_LEAST:
                        evidence["content_fill"] = round(share, 3)
                        notes.append(f"a chunk was stored in {share:.0%} of its {recorded} "
                                     "bytes (the median chunk read): the content compresses "
                                     f"as much (dataset.content_fill {share:.3f}: that share "
                                     "of each page random, the rest zeros)")
            elif chunk is not None and recorded is None:
                # (a dataset Darshan records as contiguous is read in libhdf5's sieve
                # buffer's fills, not in chunks)
                evidence["hdf5_chunk"] = chunk
                notes.append(f"libhdf5 read the samples in {chunk}-byte pieces: a chunked "
                             f"dataset (dataset.chunk_size={chunk}; the chunk's shape cannot "
                             "be seen, its bytes are kept)")
            sample = per_read
            boxes = h5d_chunk_boxes(job, set(names.values()))
            blocks = h5d_row_blocks(job, set(names.values())) if boxes is None else None
            if boxes is not None:
                # each H5Dread selected one whole chunk of an N-D dataset, at its place (a
                # column slice x[:, j:j + c] along the chunks): the chunk is the sample, the
                # emulator's a row of that many bytes, a chunk each
                sample = boxes
                evidence["hdf5_chunk"] = boxes
                evidence["h5d_chunk_boxes"] = boxes
                notes.append(f"each H5Dread selected one whole chunk's box of an N-D dataset "
                             f"(Darshan's H5D_ACCESS1 lengths those of H5D_CHUNK_SIZE): a "
                             f"sample is a chunk of {boxes} bytes (dataset.chunk_size "
                             f"{boxes}, a chunk a sample)")
            if blocks is not None:
                # each H5Dread selected a block of whole rows (a batch read as one slice,
                # ds[i:i + n]): a row is the sample (its fields' share counted), the H5Dread a
                # batch's rows
                sample, n = blocks
                if rows_bytes_per_read(job, set(names.values())):
                    sample = max(sample, per_read // n)
                evidence["h5d_row_blocks"] = {"row": sample, "rows": n}
                notes.append(f"the H5Dread calls each selected {n} whole rows of {sample} "
                             "bytes in one block (Darshan's H5D_ACCESS1 lengths, a regular "
                             "hyperslab): a sample is a row, an H5Dread a batch's rows read "
                             "as one slice")
            extra = {}
            opens = hdf5_opens(job, data)
            reads = _h5d_reads(job, set(names.values()))
            if opens and reads and opens >= 0.9 * reads and layout == "multi":
                extra["reopen"] = True
                evidence["opens_per_h5d_read"] = opens / reads
            return (sample, _rows(job, set(names.values()), sample, file_size), 0, extra,
                    None, ascending)
    return None if ascending is None else (None, None, None, {}, None, ascending)


def npy_loads(job, trace, data):
    """(loads, buffer size, array bytes) of numpy.load calls on .npy files: every load reads
    one buffer's fill at offset 0 through POSIX (the header) and the array through STDIO (one
    fread by numpy.fromfile); None when the job does not show that (at least STREAM_SHARE of
    the traced bytes in those header reads, and about as many of them as freads)."""
    stdio = job.records.get("STDIO")
    if stdio is None or stdio.empty:
        return None
    rows = stdio[stdio["id"].isin(list(data.index))]
    freads = int(rows["STDIO_READS"].clip(lower=0).sum())
    fbytes = int(rows["STDIO_BYTES_READ"].clip(lower=0).sum())
    moved = int(trace["length"].sum())
    heads = trace[(trace["length"] > 0) & (trace["offset"] == 0)]
    if not freads or heads.empty or int(heads["length"].sum()) < STREAM_SHARE * moved \
            or len(heads) < STREAM_SHARE * freads:
        return None
    values, counts = np.unique(heads["length"].to_numpy(), return_counts=True)
    return len(heads), int(values[np.argmax(counts)]), int(round(fbytes / freads))


def npy_arrays(job, data):
    """Per data file read by numpy.load, its array's bytes (a load's fread: the file's STDIO
    bytes over its freads); None without them."""
    stdio = job.records.get("STDIO")
    if stdio is None or stdio.empty:
        return None
    rows = stdio[stdio["id"].isin(list(data.index))]
    per = rows.groupby("id")[["STDIO_BYTES_READ", "STDIO_READS"]].sum()
    per = per[(per["STDIO_READS"] > 0) & (per["STDIO_BYTES_READ"] > 0)]
    if per.empty:
        return None
    return (per["STDIO_BYTES_READ"] / per["STDIO_READS"]).to_numpy(np.float64)


def load_starts(reads, sizes):
    """True for the reads (a DXT frame) that are a numpy.load's zip end-record read."""
    size = reads["id"].map(sizes).to_numpy()
    return (reads["length"].to_numpy() == EOCD) & (reads["offset"].to_numpy() + EOCD == size)


def start_runs(trace, starts):
    """The median number of loads of one file in a row by a rank (a load begins at a read
    starts(reads) marks, in time order), over the ranks that loaded two files or more (with
    one file a run cannot be told from epochs); 1 without such ranks."""
    runs = []
    for _, reads in trace.groupby("rank", sort=False):
        reads = reads.sort_values("start", kind="stable")
        ids = reads["id"].to_numpy()[starts(reads)]
        if len(set(ids.tolist())) < 2:
            continue
        cut = np.flatnonzero(ids[1:] != ids[:-1]) + 1
        runs += np.diff(np.concatenate([[0], cut, [len(ids)]])).tolist()
    return int(round(float(np.median(runs)))) if runs else 1


def load_runs(trace, sizes):
    """The median number of loads of one file in a row by a rank (loads found by their zip
    end-record reads, in time order)."""
    runs = []
    for _, reads in trace.groupby("rank", sort=False):
        reads = reads.sort_values("start", kind="stable")
        size = reads["id"].map(sizes).to_numpy()
        eocd = (reads["length"].to_numpy() == EOCD) & (reads["offset"].to_numpy() + EOCD
                                                         == size)
        ids = reads["id"].to_numpy()[eocd]
        if len(ids) == 0:
            continue
        cut = np.flatnonzero(ids[1:] != ids[:-1]) + 1
        runs += np.diff(np.concatenate([[0], cut, [len(ids)]])).tolist()
    return int(round(float(np.median(runs)))) if runs else 1


def _stacked_sample_bytes(file_bytes, spf):
    """A sample's bytes in a stacked NPZ file of about file_bytes holding spf samples."""
    from dlio_mpi.readers.numpy_reads import stacked_reads

    guess = max(1, int(file_bytes) // spf)
    overhead = stacked_reads(guess, spf)[0] - guess * spf
    return max(1, (int(file_bytes) - overhead) // spf)


def _stacked_one(trace, data, file_size):
    """Whether the reads of the data file nearest file_size bytes (the median) fall where
    np.load reads a stacked NPZ file of one sample (x and y) and not where it reads a file of
    one member: the offsets of each layout's open reads, the directory's among them, against
    the reads' own."""
    from dlio_mpi.readers.numpy_reads import npz_reads, stacked_reads

    sizes = {int(i): int(v) for i, v in data["size"].items()}
    if not sizes:
        return False
    fid = min(sizes, key=lambda i: (abs(sizes[i] - file_size), i))      # the median's file
    size = sizes[fid]
    seen = set(trace.loc[trace["id"] == fid, "offset"].astype(int).tolist())
    stacked = stacked_reads(_stacked_sample_bytes(size, 1), 1)
    one = npz_reads((_npz_member_bytes(size),))
    if stacked[0] != size:
        return False
    return set(stacked[1].tolist()) <= seen and not set(one[1][0].tolist()) <= seen


def _npz_member_bytes(file_bytes):
    """The data bytes of the one member of an NPZ file of about file_bytes (numpy.savez's
    zip and .npy headers taken off)."""
    from dlio_mpi.readers.numpy_reads import npz_reads

    guess = max(1, int(file_bytes))
    overhead = npz_reads((guess,))[0] - guess
    return max(1, int(file_bytes) - overhead)


def hdf5_opens(job, data):
    """The data files' H5Fopen calls (H5F_OPENS of their H5F records): the program's opens,
    not the POSIX opens beneath (libhdf5's MPI-IO driver opens a file more than once at each
    H5Fopen); the POSIX opens without H5F records."""
    h5f = job.records.get("H5F")
    if h5f is not None and not h5f.empty and "H5F_OPENS" in h5f:
        names = set(data["name"])
        mine = h5f[[job.names.get(int(i), "") in names for i in h5f["id"]]]
        if not mine.empty:
            return int(mine["H5F_OPENS"].clip(lower=0).sum())
    return _opens(job, data)


def _opens(job, data):
    posix = job.records.get("POSIX")
    if posix is None:
        return 0
    rows = posix[posix["id"].isin(list(data.index))]
    return int(rows["POSIX_OPENS"].clip(lower=0).sum())


def h5d_scattered_share(job, data_names):
    """The share of the data datasets' H5Dread calls whose selection was scattered: an
    irregular hyperslab (a union of separate blocks, as h5py's dset[[i, j, ...]] makes) or a
    point selection; 0 without H5D records."""
    h5d = job.records.get("H5D")
    if h5d is None or h5d.empty or "H5D_IRREGULAR_HYPERSLAB_SELECTS" not in h5d:
        return 0.0
    names = [job.names.get(int(i), "") for i in h5d["id"]]
    mine = h5d[[n.split(":", 1)[0] in data_names for n in names]]
    reads = int(mine["H5D_READS"].clip(lower=0).sum())
    scattered = int(mine["H5D_IRREGULAR_HYPERSLAB_SELECTS"].clip(lower=0).sum())
    if "H5D_POINT_SELECTS" in mine:
        scattered += int(mine["H5D_POINT_SELECTS"].clip(lower=0).sum())
    return min(1.0, scattered / reads) if reads else 0.0


def union_forward_share(trace, unions):
    """The share of the H5Dread unions (``unions`` of them over the job) that begin past where
    the one before began, when libhdf5 reads them in buffer fills of its own (a sieve buffer's
    64 KiB from each row it does not hold): each union's fills climb through the file, so a
    union drawn at random begins behind the last one's end (a read going back) about every
    time, one in order never; None without unions."""
    if not unions or trace is None or not len(trace):
        return None
    backs = 0
    for _, reads in trace.groupby("rank", sort=False):
        off = reads.sort_values("start", kind="stable")["offset"].to_numpy()
        backs += int((off[1:] < off[:-1]).sum())
    return max(0.0, 1.0 - backs / unions)


def batch_forward_share(trace, per_batch):
    """The share of a rank's batches (its reads in time order, per_batch at a time: a union's
    rows, read in the file's order within it) that begin past where the batch before began,
    over the ranks: about a half for batches drawn at random, 1 in order."""
    forward, pairs = 0, 0
    for _, reads in trace.groupby("rank", sort=False):
        off = reads.sort_values("start", kind="stable")["offset"].to_numpy()
        firsts = np.array([off[a:a + per_batch].min()
                           for a in range(0, len(off) - per_batch + 1, per_batch)])
        if len(firsts) > 1:
            forward += int((np.diff(firsts) > 0).sum())
            pairs += len(firsts) - 1
    return forward / pairs if pairs else None


def _h5d_reads(job, data_names):
    h5d = job.records.get("H5D")
    if h5d is None or h5d.empty:
        return 0
    names = [job.names.get(int(i), "") for i in h5d["id"]]
    mine = h5d[[n.split(":", 1)[0] in data_names for n in names]]
    return int(mine["H5D_READS"].clip(lower=0).sum())


# element types by size for a field's dataset (Darshan keeps a type's size, not its kind)
FIELD_DTYPES = {1: "uint8", 2: "int16", 4: "int32", 8: "int64"}
# how far apart two datasets' H5Dread counts may be and still be read once a sample each
FIELD_READS_SPREAD = 0.02
# how much the read windows of a sample's fields coincide at least (overlap over union): a
# field is read with every row, from the first sample's to the last's
FIELD_WINDOW_SHARE = 0.8


def _h5d_sets(job, data_names):
    """The data files' datasets that were read: name -> their H5D counters summed over the
    files and ranks, and (file, rank) -> (name, first read, last read) of each record."""
    h5d = job.records.get("H5D")
    need = ("H5D_READS", "H5D_BYTES_READ", "H5D_DATASPACE_NPOINTS", "H5D_DATATYPE_SIZE",
            "H5D_DATASPACE_NDIMS")
    if h5d is None or h5d.empty or any(c not in h5d for c in need):
        return {}, {}
    col = {c: np.asarray(h5d[c]) for c in h5d if c == "id" or c == "rank"
           or str(c).startswith("H5D_")}
    sets, windows = {}, {}
    for k in range(len(col["id"])):
        full = job.names.get(int(col["id"][k]), "")
        path, _, name = full.partition(":")
        reads = int(col["H5D_READS"][k])
        if path not in data_names or reads <= 0 or not name:
            continue
        chunk = [int(col[f"H5D_CHUNK_SIZE_D{d}"][k]) if f"H5D_CHUNK_SIZE_D{d}" in col
                 else 0 for d in range(1, 6)]
        s = sets.setdefault(name.lstrip("/"), {"reads": 0, "bytes": 0, "points": set(),
                                               "size": 1, "ndims": 1, "chunk": chunk})
        s["reads"] += reads
        s["bytes"] += max(0, int(col["H5D_BYTES_READ"][k]))
        s["points"].add(int(col["H5D_DATASPACE_NPOINTS"][k]))
        s["size"] = max(1, int(col["H5D_DATATYPE_SIZE"][k]))
        s["ndims"] = max(1, int(col["H5D_DATASPACE_NDIMS"][k]))
        if "H5D_F_READ_START_TIMESTAMP" in col and "H5D_F_READ_END_TIMESTAMP" in col:
            windows.setdefault((path, int(col["rank"][k])), []).append(
                (name.lstrip("/"), float(col["H5D_F_READ_START_TIMESTAMP"][k]),
                 float(col["H5D_F_READ_END_TIMESTAMP"][k])))
    return sets, windows


def _read_together(sets, windows):
    """The dataset whose rows the others' reads accompany (the most bytes read), or None:
    every other dataset read as often, and in each process over the same time as it (its
    read window, H5D_F_READ_START/END_TIMESTAMP, coinciding with one of the rows' dataset
    in the same file and rank for FIELD_WINDOW_SHARE of their span; the records of one rank
    may be of several processes, a loader's workers; a shared file's record spans all
    ranks). A file's datasets read one after another (IOR's segments: one window after the
    other in a process, skewed by the ranks' pace in a shared record) are no fields."""
    if len(sets) < 2:
        return None
    main = max(sets, key=lambda n: sets[n]["bytes"])
    m = sets[main]
    if any(abs(s["reads"] - m["reads"]) > FIELD_READS_SPREAD * m["reads"]
           for s in sets.values()):
        return None
    for spans in windows.values():
        rows = [(a, b) for n, a, b in spans if n == main]
        if any(n != main and max((_coincide(a, b, ra, rb) for ra, rb in rows), default=0)
               < FIELD_WINDOW_SHARE for n, a, b in spans):
            return None
    return main


def _coincide(a, b, c, d):
    """How much two time windows [a, b] and [c, d] coincide: their overlap over their union."""
    union = max(b, d) - min(a, c)
    return max(0.0, min(b, d) - max(a, c)) / union if union > 0 else 1.0


def datasets_read_together(job, data_names):
    """Whether the data files' datasets were read as fields of one sample (_read_together)."""
    return _read_together(*_h5d_sets(job, data_names)) is not None


def h5d_fields(job, data_names, record, vlen=False):
    """The samples' further fields (dataset.hdf5_fields) when the data files hold several
    datasets read together (_read_together: a program reading x[i] then y[i] for each
    sample, an image and its label), with as many rows; a field's row bytes are its share of
    the H5Dread bytes of a sample of ``record`` bytes (the fields counted in it), in whole
    elements of its type. [] for one dataset, None when the datasets are read unlike fields
    of one sample. With ``vlen`` (the rows' dataset of variable-length sequences, its H5Dread
    bytes their descriptors), a field's row bytes are its H5Dread bytes over a descriptor's."""
    sets, windows = _h5d_sets(job, data_names)
    if len(sets) < 2:
        return []
    main = _read_together(sets, windows)
    if main is None:
        return None
    total = sum(s["bytes"] for s in sets.values())
    m = sets[main]
    if not total or not m["bytes"] or len(m["points"]) != 1:
        return None
    if vlen:
        rows = next(iter(m["points"]))
        share = (lambda s: VLEN_DESCRIPTOR * s["bytes"] / m["bytes"])
    else:
        main_row = record * m["bytes"] / total
        rows = next(iter(m["points"])) * m["size"] / main_row if main_row else 0
        share = (lambda s: record * s["bytes"] / total)
    fields = []
    for name, s in sets.items():
        if name == main:
            continue
        if len(s["points"]) != 1 or s["size"] not in FIELD_DTYPES:
            return None
        row = max(1, int(round(share(s) / s["size"]))) * s["size"]
        if abs(next(iter(s["points"])) * s["size"] / row - rows) > 0.02 * rows:
            return None         # not a row for each of the samples' rows
        nd = s["ndims"]
        chunk_rows = s["chunk"][nd - 1] if any(s["chunk"]) and nd <= 5 else 0
        fields.append({"name": name, "bytes": row, "dtype": FIELD_DTYPES[s["size"]],
                       **({"chunk_rows": chunk_rows} if chunk_rows else {})})
    return sorted(fields, key=lambda f: f["name"])


def epoch_overrun(trace):
    """(epochs, files) when each rank's passes over its files end in a few files of the next
    pass read ahead and dropped (a prefetching input pipeline over a repeated dataset, such
    as tf.data's, reads on past an epoch's end before its iterator is dropped; the next epoch
    reads those files again), else None. A pass is a rank's run of file starts (reads at
    offset 0) in time order until a file starts again; the full passes (all the rank's files)
    are the epochs, and a short pass must follow each of them, each but a rank's last made of
    the files the following pass starts with. How far a pipeline reads ahead depends on its
    threads' pace: ``files`` is the short passes' median, each of them within half of it."""
    if trace is None or not len(trace):
        return None
    starts = trace[(trace["offset"].to_numpy() == 0) & (trace["length"].to_numpy() > 0)]
    epochs, extra = set(), []
    for _, reads in starts.groupby("rank", sort=False):
        order = reads.sort_values("start", kind="stable")["id"].tolist()
        passes, cur = [], []
        for f in order:
            if f in cur:
                passes.append(cur)
                cur = []
            cur.append(f)
        passes.append(cur)
        full = max(len(p) for p in passes)
        if len(passes) < 2 or len(passes) % 2 or full < 2:
            return None
        for k in range(0, len(passes), 2):
            whole, short = passes[k], passes[k + 1]
            if len(whole) != full or not 0 < len(short) < full:
                return None
            nxt = passes[k + 2] if k + 2 < len(passes) else None
            if nxt is not None and set(nxt[:len(short)]) != set(short):
                return None
            extra.append(len(short))
        epochs.add(len(passes) // 2)
    if len(epochs) != 1:
        return None
    files = int(round(float(np.median(extra))))
    if files < 1 or any(abs(n - files) > max(1.0, 0.5 * files) for n in extra):
        return None
    return epochs.pop(), files


def whole_file_record(trace, sizes, fmt):
    """The sample's bytes when every read of a file of format ``fmt`` (one that keeps its
    samples after a header: NPY) is the whole file in one call from its start, all files of
    one size: that size less the header this emulator's file of such a sample has (the
    header's length depends on the array's shape, so it is found by trying). None otherwise
    (formats without a header, reads that are parts of a file)."""
    from dlio_mpi import formats

    if not len(trace) or fmt not in formats.TRAITS or traits(fmt).opaque \
            or traits(fmt).decoder is not None or traits(fmt).rows:
        return None
    lengths = trace["length"].to_numpy()
    own = np.array([sizes.get(int(i), -1) for i in trace["id"]])
    whole = (trace["offset"].to_numpy() == 0) & (lengths == own)
    if not whole[lengths > 0].all() or len(set(own.tolist())) != 1:
        return None
    size = int(own[0])
    record = size
    for _ in range(3):
        spec = formats.FormatSpec(format=fmt, samples_per_file=1, record_length=max(1, record))
        try:
            made = formats.get(fmt).layout(spec, 0)
        except (AttributeError, ValueError):
            return None
        if made.file_size == size:
            return record if made.offsets[0] > 0 else None
        record -= made.file_size - size
        if record < 1:
            return None
    return None


def shuffle_window(trace, record, ranks, samples):
    """The window (in samples) when every rank read a shared file's samples (record bytes
    each, ``samples`` of them) window by window in order, within each window the same list
    of positions in the same order, not ascending: a shuffle repeated in every window (IOR's
    -z on a shared file of several segments: a segment's transfers dealt to the tasks at
    random, a task's list shuffled once and used in every segment). The smallest such window
    that the rank count divides and that leaves two windows at least; None otherwise."""
    if trace is None or not len(trace) or record <= 0 or ranks < 1 or samples < 4:
        return None
    lists = []
    for _, reads in trace.groupby("rank", sort=False):
        reads = reads[reads["length"].to_numpy() > 0].sort_values("start", kind="stable")
        ids = reads["offset"].to_numpy() // record
        if len(ids) < 4:
            return None
        lists.append(ids)
    for n in range(samples // (2 * ranks), 1, -1):
        if samples % n or (samples // n) % ranks:
            continue
        window = samples // n
        if all(_repeated_in_windows(ids, window, n) for ids in lists):
            return window
    return None


def _repeated_in_windows(ids, window, n):
    """Whether ``ids`` go window by window through n windows of ``window`` samples, in order,
    with the same positions in the same order in each, and those not in ascending order."""
    if len(ids) % n:
        return False
    per = len(ids) // n
    parts = ids.reshape(n, per)
    if not (parts // window == np.arange(n)[:, None]).all():
        return False
    inside = parts % window
    return bool((inside == inside[0]).all() and (np.diff(inside[0]) < 0).any())


def nonblocking_share(job, ids):
    """The share of the MPI-IO reads of the files ``ids`` that were nonblocking
    (MPIIO_NB_READS over all MPI-IO reads), 0 without MPI-IO records."""
    mpiio = job.records.get("MPI-IO")
    if mpiio is None or mpiio.empty or "MPIIO_NB_READS" not in mpiio:
        return 0.0
    mine = mpiio[mpiio["id"].isin(list(ids))]
    total = sum(int(mine[c].clip(lower=0).sum()) for c in
                ("MPIIO_NB_READS", "MPIIO_INDEP_READS", "MPIIO_COLL_READS", "MPIIO_SPLIT_READS")
                if c in mine)
    return int(mine["MPIIO_NB_READS"].clip(lower=0).sum()) / total if total else 0.0


# the share of a rank's chunk reads that another rank read too, at most, for the crops to be
# each rank's own parts of the volume (random crops of different ranks meet in many chunks)
PART_OVERLAP = 0.05


def crop_parts(crops, trace, ranks):
    """(parts a sample, shuffled) when the crops are the ranks' own parts of each sample's
    volume, a domain decomposition: a crop of one index along the first dimension (the
    sample) whose tiling of the other dimensions makes as many parts as ranks, each rank's
    chunk reads (the data's reads beneath the crops, their file offsets) met by no other
    rank's; shuffled when a rank's reads go back more often than its passes can explain (the
    samples in a shuffled order). Else None."""
    shape, crop = np.asarray(crops["shape"]), np.asarray(crops["crop"])
    if len(crop) < 2 or crop[0] != 1 or ranks < 2 or trace is None:
        return None
    parts = int(np.prod(shape[1:] // crop[1:]))
    if parts != ranks:
        return None
    reads = data_reads(trace)
    owned = {int(r): set(zip(g["id"].tolist(), g["offset"].tolist()))
             for r, g in reads.groupby("rank")}
    if len(owned) != ranks:
        return None
    for r, mine in owned.items():
        others = set().union(*(v for q, v in owned.items() if q != r))
        if len(mine & others) > PART_OVERLAP * len(mine):
            return None
    passes = max(1, int(round(crops["reads"] / max(shape[0] * parts, 1))))
    back = max(int((np.diff(g.sort_values("start")["offset"].to_numpy()) < 0).sum())
               for _, g in reads.groupby(["rank", "id"]))
    return parts, back > 2 * passes


def h5d_crops(job, data_names):
    """The data files' N-D datasets read as crops (dataset.volumes): every H5Dread one
    regular hyperslab of one shape (H5D_ACCESS1, Darshan's lengths last dimension first: D5
    the first) smaller than the dataset along a dimension after the first (a box, not whole
    rows), the dataset chunked (H5D_CHUNK_SIZE_D1.., the last dimension first) and a cube
    (its shape from H5D_DATASPACE_NPOINTS: Darshan keeps no dimensions). Returns {"shape",
    "crop", "volumes": [(name, itemsize, chunks)], "reads"} (first dimension first; the
    volumes those read as often as the most read, each crop of each one read), or None."""
    boxes = h5d_boxes(job, data_names)
    if boxes is None:
        return None
    found = {}
    for name, reads, crop, chunks, points, itemsize in boxes:
        nd = len(crop)
        side = int(round(points ** (1.0 / nd)))
        if side ** nd != points or min(crop) < 1 or min(chunks) < 1 \
                or max(crop) > side or max(chunks) > side \
                or all(c == side for c in crop[1:]) or crop == chunks:
            # (a box that is a chunk's is a chunk read at its place: h5d_chunk_boxes)
            return None
        entry = found.setdefault(name, {"reads": 0, "shape": [side] * nd, "crop": crop,
                                        "chunks": chunks, "itemsize": itemsize})
        if entry["crop"] != crop or entry["chunks"] != chunks or entry["shape"] != [side] * nd:
            return None
        entry["reads"] += reads
    if not found:
        return None
    most = max(v["reads"] for v in found.values())
    vols = {n: v for n, v in found.items() if v["reads"] == most}
    first = next(iter(vols.values()))
    if any(v["shape"] != first["shape"] or v["crop"] != first["crop"] for v in vols.values()):
        return None
    return {"shape": first["shape"], "crop": first["crop"], "reads": most,
            "volumes": [(n, v["itemsize"], v["chunks"]) for n, v in sorted(vols.items())]}

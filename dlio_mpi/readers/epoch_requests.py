"""An epoch's read-ahead requests, built at once with numpy before its first step: each step's
batch grouped by file in the order files first appear in the batch (as readers.by_file groups
it, the order a loop over the samples reads them), one segment per file, its samples' byte
ranges from the file's index. The arrays are those engines.EpochRequests takes."""
from dataclasses import dataclass

import numpy as np

from dlio_mpi import engines, formats


@dataclass
class Layout:
    """Where an epoch's samples lie in its requests (all int64 arrays).

    files      the files the epoch reads, one per slot (sorted)
    step_seg   segments of step s: step_seg[s]:step_seg[s+1]
    seg_slot   the slot of each segment's file
    seg_range  ranges of segment g: seg_range[g]:seg_range[g+1]
    range_at   each range's entry in the per-slot tables: slot * spf + sample within the file
    order      the steps' samples in request order, (steps, batch)"""
    files: np.ndarray
    step_seg: np.ndarray
    seg_slot: np.ndarray
    seg_range: np.ndarray
    range_at: np.ndarray
    order: np.ndarray

    def first_steps(self):
        """The step that first reads each slot."""
        slots, first_seg = np.unique(self.seg_slot, return_index=True)
        out = np.zeros(len(self.files), dtype=np.int64)
        out[slots] = np.searchsorted(self.step_seg, first_seg, side="right") - 1
        return out

    def step_segments(self, step):
        """(slots, first range, range count) of each segment of a step."""
        g0, g1 = int(self.step_seg[step]), int(self.step_seg[step + 1])
        first = self.seg_range[g0:g1]
        return self.seg_slot[g0:g1], first, self.seg_range[g0 + 1:g1 + 1] - first


def group_by_file(plan, spf):
    """Each row of plan (steps, batch) reordered so that a file's samples follow each other,
    files in the order they first appear in the row, samples of a file in their order."""
    plan = np.asarray(plan, dtype=np.int64)
    steps, batch = plan.shape
    files = plan // spf
    srt = np.argsort(files, axis=1, kind="stable")
    fs = np.take_along_axis(files, srt, 1)
    start = np.ones(fs.shape, dtype=bool)
    start[:, 1:] = fs[:, 1:] != fs[:, :-1]
    # each sorted sample's group start, then the column where its file first appears
    at = np.maximum.accumulate(np.where(start, np.arange(batch), 0), axis=1)
    first = np.take_along_axis(srt, at, 1)
    cols = np.take_along_axis(srt, np.argsort(first * batch + srt, axis=1, kind="stable"), 1)
    return np.take_along_axis(plan, cols, 1)


def layout(plan, spf):
    """The Layout of an epoch's plan (steps, batch) of global sample numbers."""
    order = group_by_file(plan, spf)
    steps, batch = order.shape
    files = order // spf
    new = np.ones(files.shape, dtype=bool)
    new[:, 1:] = files[:, 1:] != files[:, :-1]
    flat_new = new.reshape(-1)
    seg_first = np.flatnonzero(flat_new)
    uniq, slot = np.unique(files.reshape(-1), return_inverse=True)
    slot = slot.reshape(-1).astype(np.int64)
    step_seg = np.zeros(steps + 1, dtype=np.int64)
    np.cumsum(new.sum(axis=1), out=step_seg[1:])
    return Layout(files=uniq.astype(np.int64), step_seg=step_seg,
                  seg_slot=slot[seg_first],
                  seg_range=np.append(seg_first, steps * batch).astype(np.int64),
                  range_at=slot * spf + (order.reshape(-1) % spf), order=order)


def stream_layout(reads):
    """The Layout of a stream's epoch (an access.ReadPlan): a step's run of reads of one file
    is a segment; range r is read r of the plan (range_at is the identity: the plan's offsets
    and lengths are the tables). A step that reads nothing (its samples are in blocks read
    before) has one segment of no ranges, of the file read last (the first one read, before
    any): its request is done at once. order is None: a stream consumes samples it does not
    read one by one."""
    steps = reads.steps
    first = np.asarray(reads.first, dtype=np.int64)
    f = np.asarray(reads.file, dtype=np.int64)
    uniq, slot = np.unique(f, return_inverse=True)
    slot = slot.reshape(-1).astype(np.int64)
    step_of = np.repeat(np.arange(steps, dtype=np.int64), np.diff(first))
    new = np.ones(len(f), dtype=bool)
    new[1:] = (f[1:] != f[:-1]) | (step_of[1:] != step_of[:-1])
    starts = np.flatnonzero(new).astype(np.int64)
    seg_step, seg_slot = step_of[starts], slot[starts]
    empty = np.flatnonzero(np.diff(first) == 0)
    if len(empty) and len(f):
        at = first[empty]
        starts = np.concatenate([starts, at])
        seg_step = np.concatenate([seg_step, empty])
        seg_slot = np.concatenate([seg_slot, slot[np.clip(at - 1, 0, len(f) - 1)]])
        srt = np.lexsort((seg_step, starts))
        starts, seg_step, seg_slot = starts[srt], seg_step[srt], seg_slot[srt]
    step_seg = np.searchsorted(seg_step, np.arange(steps + 1), side="left").astype(np.int64)
    return Layout(files=uniq.astype(np.int64), step_seg=step_seg, seg_slot=seg_slot,
                  seg_range=np.append(starts, len(f)).astype(np.int64),
                  range_at=np.arange(len(f), dtype=np.int64), order=None)


def segment_busy(lay, draws):
    """Per segment, the preprocessing in ns of its samples: draws (steps, batch) are the
    seconds drawn per sample in request order (as a loader draws them for its samples)."""
    flat = np.asarray(draws, dtype=np.float64).reshape(-1)
    if flat.size == 0:
        return np.zeros(0, dtype=np.int64)
    return (np.add.reduceat(flat, lay.seg_range[:-1]) * 1e9).astype(np.int64)


def indexed_without_io(data):
    """Whether a file's index is computed (no I/O), or every index of the split stays in the
    dataset's cache once read (so that it is read once, whenever it is first asked for)."""
    try:
        formats.layout(data.spec, 0)
        return True
    except ValueError:
        return data.num_files <= data.CACHE_FILES and data.num_samples <= data.CACHE_SAMPLES


def files_in_flight(lay, window):
    """The most files any `window` consecutive steps of the layout read. With `ahead` steps
    queued at most, a step is queued once the one consumed before it is released: the steps
    in flight and the one being queued are `ahead` steps, whose files are held open at
    once."""
    n = len(lay.step_seg) - 1
    if n <= 0 or len(lay.seg_slot) == 0:
        return 0
    steps = np.repeat(np.arange(n, dtype=np.int64), np.diff(lay.step_seg))
    use = np.unique(lay.seg_slot * (n + 1) + steps)     # (slot, step) pairs, by slot then step
    slot, t = use // (n + 1), use % (n + 1)
    prev = np.full(len(use), -n - 2, dtype=np.int64)
    same = slot[1:] == slot[:-1]
    prev[1:][same] = t[:-1][same]
    # the windows [w, w + window) that this use brings the file into (the earlier use's did
    # not)
    lo = np.maximum(np.maximum(t - window + 1, prev + 1), 0)
    count = np.zeros(n + 1, dtype=np.int64)
    np.add.at(count, lo, 1)
    np.add.at(count, t + 1, -1)
    return int(np.cumsum(count[:n]).max())


class EpochQueue:
    """A PrefetchReader's epoch of requests built at once (engines.EpochRequests), and what
    Python still does for it, as queueing batch by batch does: before the first step reading a
    file is queued, the file's index (read from its headers where the format needs it) and
    handle (Reader._open, under the reader's open-file policy); the open files' order of use,
    brought up to date before any file is opened and at the epoch's end. A step that needs
    this is flagged (EpochRequests.prepare): steps reading a file first, and, when the policy
    closes a file (told through OpenFiles.watch), the next step reading it. The policy may
    keep the files of the steps in flight open: the reader's max_open is raised to one more
    than the most files any `ahead` consecutive steps read."""

    def __init__(self, owner, inner, plan, stream=None, sizes=None):
        """owner: the reader reading ahead (its read-ahead `ra`, `xfer`, `ahead`, `pre`,
        `data`); inner: the readers.Reader whose open-file policy opens the files (the owner
        itself, or the reader it reads ahead for). plan: the epoch's (steps, batch) samples;
        or, with stream (an access.ReadPlan of the files' own reads, known before the epoch: a
        stream's blocks), those reads, read one after another per file (ordered), a read at a
        file's end expecting none of its bytes (sizes: file -> its size, where the caller has
        them; else from the index)."""
        data = owner.data
        self.inner, self.data = inner, data
        spf = data.spf
        busy = wants = None
        if stream is not None:
            self.lay = lay = stream_layout(stream)
            self.offs = np.ascontiguousarray(stream.offset, dtype=np.int64)
            self.lens = np.ascontiguousarray(stream.length, dtype=np.int64)
            size = np.array([sizes[f] if sizes is not None else data.index(f).file_size
                             for f in lay.files.tolist()], np.int64)
            end = size[lay.seg_slot.repeat(np.diff(lay.seg_range))]
            wants = np.clip(np.minimum(self.offs + self.lens, end) - self.offs, 0, None)
        else:
            self.lay = lay = layout(plan, spf)
            if owner.pre.active:    # drawn per batch, in order, as batch-by-batch queueing does
                busy = segment_busy(lay, [owner.pre.draw(plan.shape[1])
                                          for _ in range(len(plan))])
            self.offs = np.zeros(len(lay.files) * spf, dtype=np.int64)
            self.lens = np.zeros_like(self.offs)
        self.wants = self.lens if wants is None else wants
        self.ep = ep = engines.EpochRequests(owner.ra, lay.step_seg, lay.seg_slot, lay.seg_range,
                                             lay.range_at, self.offs, self.lens, busy,
                                             xfer=owner.xfer, ahead=owner.ahead, wants=wants,
                                             ordered=stream is not None)
        inner.max_open = max(inner.max_open, files_in_flight(lay, owner.ahead) + 1)
        # index entries filled (a stream's reads are its tables)
        self.ready = np.full(len(lay.files), stream is not None, dtype=bool)
        self.synced = 0     # segments whose use the open files' order holds
        opened = np.zeros(len(lay.files), dtype=bool)
        for slot, f in enumerate(lay.files.tolist()):
            h = inner.files.get(f)
            if h is not None:
                ep.set_handle(slot, h)
                opened[slot] = True
            if stream is None and (h is not None or f in data._indexes):
                self._fill_index(slot, f)
        ep.prepare[lay.first_steps()[~(self.ready & opened)]] = 1
        # each slot's steps, sorted, to find the next step reading a closed file
        n = len(lay.step_seg) - 1
        steps = np.repeat(np.arange(n, dtype=np.int64), np.diff(lay.step_seg))
        self.use_key = np.unique(lay.seg_slot * (n + 1) + steps)
        inner.files.watch(self._closed)

    def _fill_index(self, slot, f):
        spf = self.data.spf
        offs, lens = self.inner.data_ranges(f, np.arange(spf))
        self.offs[slot * spf:(slot + 1) * spf] = offs
        self.lens[slot * spf:(slot + 1) * spf] = lens
        self.ready[slot] = True

    def _touch(self, end):
        """The open files' order of use after segments synced:end were queued."""
        seq = self.lay.seg_slot[self.synced:end][::-1]
        if len(seq):
            slots, at = np.unique(seq, return_index=True)
            files = self.inner.files
            for f in self.lay.files[slots[np.argsort(-at, kind="stable")]].tolist():
                files.mark_used(f)
        self.synced = max(self.synced, end)

    def _closed(self, f):
        """The policy closes file f: its slot loses its handle, and the next step reading it
        not yet queued is flagged (the steps queued hold reads of it: the policy does not
        close it while they are in flight)."""
        at = int(np.searchsorted(self.lay.files, f))
        if at >= len(self.lay.files) or self.lay.files[at] != f or not self.ep.has_handle(at):
            return
        self.ep.clear_handle(at)
        n = len(self.lay.step_seg)      # steps + 1
        k = np.searchsorted(self.use_key, at * n + self.ep.nsub)
        if k < len(self.use_key) and self.use_key[k] // n == at:
            self.ep.prepare[int(self.use_key[k] % n)] = 1

    def detach(self):
        """Stop watching the reader's closes (the epoch is over)."""
        self.inner.files.unwatch(self._closed)

    def prepare(self, step):
        """Before step `step` is queued: its files' indexes and handles, in the order the
        batch reads them."""
        lay, ep, inner = self.lay, self.ep, self.inner
        g0, g1 = int(lay.step_seg[step]), int(lay.step_seg[step + 1])
        self._touch(g0)
        slots = lay.seg_slot[g0:g1]
        keep = set(lay.files[slots].tolist())      # the step's files: none closed for another
        for slot in slots.tolist():
            f = int(lay.files[slot])
            if not self.ready[slot]:
                self._fill_index(slot, f)
            if ep.has_handle(slot):
                inner.files.mark_used(f)
            else:
                ep.set_handle(slot, inner._open(f, keep))
        self.synced = g1
        ep.prepare[step] = 0

    def fill(self, ahead):
        """Queue the next steps (each prepared first where it must be) until `ahead` are
        queued and not consumed, or the epoch's last is."""
        ep = self.ep
        while ep.nsub < ep.nsteps and ep.nsub - ep.step < ahead:
            if ep.prepare[ep.nsub]:
                self.prepare(ep.nsub)
            ep.submit_next()

    def read_next(self, ra, ahead):
        """The next step's batch (queued first if it is not): waits for it, returns its bytes;
        a short batch raises its error (short_batch)."""
        ep = self.ep
        if ep.step >= ep.nsub:
            self.fill(ahead)
        step = ep.step
        got = ep.wait_next()
        if got < ep.want[step]:
            raise self.short_batch(ra, step)
        return got

    def drain(self, ra):
        """Wait for and release the queued steps not consumed."""
        self.detach()
        ep = self.ep
        for t in range(ep.ticket0 + ep.step, ep.ticket0 + ep.nsub):
            try:
                ra.wait(t)
            except engines.EngineError:
                continue        # released by wait
            ra.release(t)

    def settle(self):
        """At the epoch's end: the open files' order of use after all its steps."""
        self.detach()
        self._touch(len(self.lay.seg_slot))

    def short_batch(self, ra, step):
        """The error of a step whose batch came short (held by the read-ahead, released here):
        names the first short file, what it wanted from which offset, and what it got."""
        ep, lay = self.ep, self.lay
        t = ep.ticket0 + step
        slots, first, count = lay.step_segments(step)
        per = ra.segment_bytes(t, len(slots)).tolist()
        ra.release(t)
        for k, (slot, a, n) in enumerate(zip(slots.tolist(), first.tolist(), count.tolist())):
            at = lay.range_at[a:a + n]
            want = int(self.wants[at].sum())
            if per[k] < want:
                return engines.end_of_file(
                    self.data.path(int(lay.files[slot])),
                    f"wanted {want} bytes from offset {int(self.offs[at[0]])}, got {per[k]}")
        return engines.end_of_file(self.data.path(int(lay.files[slots[0]])),
                                   f"wanted {int(ep.want[step])} bytes, got less")

"""PatternReader: a rank's reads as the input library issues them (reader.access=stream,
numpy, image, parquet or buffered), planned per epoch by dlio_mpi.readers.access and issued by the native engines, one engine call
per run of reads of one file (no Python per read).

With reader.access=numpy every sample's file is opened for its reads and closed after, as
numpy.load does (read-ahead keeps a file open while its requests are queued). numpy.load of a
.npy file (dataset.format=npy) reads the header through Python's buffered file (one buffer's
fill at offset 0, through io.interface) and the array through numpy.fromfile, which reads it
with C stdio (fread of the whole array after the header, on a stream of its own): each load
is these two reads, the second through a STDIO stream opened for it.

With reader.access=file a sample is its file, opened for it and read whole by Python's f.read()
(the file and one byte more asked for, then a read at its end that returns nothing).

With reader.access=buffered a sample is read by seek and read through Python's buffered file
of the sample's file, opened once and kept with its buffer (dlio_mpi.readers.numpy_reads.
BufferedSamples): a sample shorter than the buffer fills it from the sample's offset.

With reader.read_threads >= 1 (every interface a pattern reads through: POSIX, STDIO,
independent MPI-IO), C read-ahead threads run the epoch's reads ahead
of the training step, as a data pipeline's prefetch does: requests of up to a slot's bytes (a
step's reads of one file, at most 8 MiB or one read; whole reads, in issue order) are queued up
to (reader.prefetch_size + 1) steps' worth ahead, each thread reading into its own reused
buffer, and a step waits only for its own. A file has at most one request in flight, so
that its reads reach the file system in order, as a reader of one file issues them (threads
overlap reads of different files, and reads with compute).

A stream read ahead (byte-range reads, no O_DIRECT, no emulated preprocessing) has its epoch's
requests built before the epoch (epoch_requests.EpochQueue with the stream's plan: a step is
one request, a segment per file it reads), so that its steps run in the C step loop
(dlio_mpi.run.steploop) as a batch's samples do; a file's segments are read one after another,
in order, by whichever thread takes them."""
from __future__ import annotations

import os
from collections import deque

import numpy as np

from dlio_mpi import engines, formats
from dlio_mpi.readers import access
from dlio_mpi.readers import epoch_requests
from dlio_mpi.readers import numpy_reads
from dlio_mpi.formats import parquet, png
from dlio_mpi.checkpoint import zip_reads
from dlio_mpi.readers.prefetch import read_ahead_threads
from dlio_mpi.readers.reader import Reader


RING_SLOT_MAX = 8 << 20      # a read-ahead request holds at most this much (or one read)


class PatternReader(Reader):
    def __init__(self, cfg, comm, log, split="train"):
        super().__init__(cfg, comm, log, split)
        self.access = cfg.reader.access
        self.reads = None
        self.k = 0
        self._blksize = None
        self.ra = None
        self.pending = deque()
        self.requests = deque()
        self.slot = 0
        self.threads = read_ahead_threads(cfg)
        self.ahead = cfg.reader.prefetch_size + 1     # steps queued at most (built requests)
        self.queue = self.ep = None     # the epoch's built requests (a stream read ahead)
        self.planned = False            # plan_epoch ran for the next start_epoch
        self._sizes = None              # a stream's files' sizes this epoch (file -> bytes)
        self._parquet_meta = {}         # a Parquet file's footer metadata bytes and row groups' reads
        self._parquet_last = None       # the file the batches read on in (parquet_open=file)
        self._buffered = {}             # a file's buffered-file state (access=buffered)

    def _ring(self):
        """Read-ahead sized for this epoch's plan: each thread reads into its own buffer of the
        largest single read (the steps discard the samples: every transfer lands at its
        start), a request holding at most a slot's bytes of one step's reads of one file and
        at least the largest single read; as many requests queued as prefetch_size + 1 steps
        need."""
        step = self.reads.max_step_bytes()
        largest = int(self.reads.length.max()) if len(self.reads.length) else 0
        slot = max(self.xfer, largest, min(step, RING_SLOT_MAX), 1 << 16)
        room = max(largest, 1 << 16)
        depth = max(2, (self.cfg.reader.prefetch_size + 1) * -(-step // slot))
        self.slot = slot
        if self.ra is not None and self.ra.slot_bytes >= room and self.ra.depth >= depth:
            return
        if self.ra is not None:
            self.ra.close()
        self.ra = engines.ReadAhead(threads=self.threads, depth=depth, slot_bytes=room,
                                    align=self.mem_align, keep=False)
        self.max_open = max(self.max_open, depth + 1)

    # planning -----------------------------------------------------------------------------
    def plan_epoch(self, plan, files=None):
        """Reader.plan_epoch, and the epoch's reads planned (its requests built where they
        are): before the barrier that starts the epoch."""
        super().plan_epoch(plan, files)
        self._plan(plan, files)
        self.planned = True

    def start_epoch(self, plan, files=None, fill=True):
        """The epoch's reads (planned by plan_epoch, or now) and its first requests queued;
        with its requests built and fill False, none: the C step loop queues them. plan is
        the (steps, batch) samples the rank consumes; files the rank's stream of files
        (reader.access=stream)."""
        if not self.planned:
            self._plan(plan, files)
        self.planned = False
        if self.ep is not None:
            if fill:
                self._fill()
            return
        if self.ra is not None:
            self._queue_requests()
            self._fill()

    def _builds(self):
        """Whether the epoch's requests are built (see the module)."""
        return (self.threads >= 1 and self.access == "stream" and self.align == 1
                and self.reads.opens is None and not self.pre.active)

    def _plan(self, plan, files):
        self._drain()
        plan = np.asarray(plan, dtype=np.int64)
        if self.access == "stream":
            sizes, ends = [], []
            for f in files.tolist():
                idx = self.data.index(f)
                sizes.append(idx.file_size)
                ends.append(idx.offsets + idx.lengths)
            lead = self.cfg.reader.shuffle_size if self.cfg.reader.sample_shuffle != "off" \
                else 0
            self._sizes = dict(zip(files.tolist(), sizes))
            if self.cfg.reader.stream_pass == "sample":
                self.reads = access.sample_passes(files, sizes, [len(e) for e in ends],
                                                  len(plan), self.batch, lead, self.xfer,
                                                  self.align, self.cfg.reader.eof_reads)
            else:
                self.reads = access.stream_reads(files, sizes, ends, len(plan), self.batch,
                                                 lead, self.xfer, self.align,
                                                 self.cfg.reader.eof_reads,
                                                 self.cfg.reader.interleave)
        else:
            # numpy.load and an image decoder open the file for every sample they read
            if self.access == "parquet" and self.cfg.reader.parquet_open == "file":
                # a file opened (its footer read) when a batch moves on to it, kept while
                # the batches read on in it
                self._parquet_last = None
                self.reads = access.sample_reads(plan, self.data.spf, self._parquet_kept)
            elif self.access == "parquet":    # a batch opens each of its files (the footer)
                self.reads = access.sample_reads(plan, self.data.spf, self._parquet_ranges,
                                                 per_file=True)
            elif self.access == "buffered":     # the files stay open, their buffers too
                self.reads = access.sample_reads(plan, self.data.spf, self._buffered_ranges)
            elif self.access == "file":     # a file opened and read whole for each sample
                self.reads = access.sample_reads(plan, self.data.spf, self._whole_ranges,
                                                 per_sample=True)
            elif self.access == "pickle":   # a file opened and loaded by pickle a sample
                self.reads = access.sample_reads(plan, self.data.spf, self._pickle_ranges,
                                                 per_sample=True)
            elif self.access == "torch":    # a file opened and loaded by torch.load a sample
                self.reads = access.sample_reads(plan, self.data.spf, self._torch_ranges,
                                                 per_sample=True)
            else:
                ranges = self._numpy_ranges if self.access == "numpy" else self._image_ranges
                self.reads = access.sample_reads(plan, self.data.spf, ranges, per_sample=True)
        self.k = 0
        if self.threads >= 1:
            self._ring()
        need = self.reads.max_step_bytes() if self.ra is None else self.slot
        if need > len(self.buf):
            self.buf = engines.aligned_empty(need, self.mem_align)
        if self.ra is not None and self._builds() and self.reads.steps:
            self.queue = epoch_requests.EpochQueue(self, self, None, stream=self.reads,
                                                   sizes=self._sizes)
            self.ep = self.queue.ep

    def prepare(self, step):
        """Before step `step` of the built requests is queued (EpochQueue.prepare)."""
        if self.queue is None:
            return super().prepare(step)
        self.queue.prepare(step)

    def short_batch(self, step):
        """The error of a built step whose batch came short (EpochQueue.short_batch)."""
        if self.queue is None:
            return super().short_batch(step)
        return self.queue.short_batch(self.ra, step)

    def _members(self, f):
        """The member sizes of NPZ file f, from the dataset's spec (no I/O: numpy.load reads
        the file's directory itself, and those reads are part of the pattern)."""
        return tuple(formats.sample_sizes(self.data.spec, f).tolist())

    def _npy(self):
        """numpy.load of a file whose array it reads with C stdio after the header."""
        return self.access == "numpy" and self.data.traits.numpy_fromfile

    def _numpy_ranges(self, f, local):
        if self._blksize is None:
            self._blksize = self.cfg.reader.buffer_size or os.stat(self.path(f)).st_blksize \
                or 4096
        spec = self.data.spec
        if self.data.traits.numpy_fromfile:   # each load reads the header, then the array
            idx = self.data.index(f)
            start = int(idx.offsets[0]) if len(idx.offsets) else idx.file_size
            k = len(np.asarray(local))
            o = np.array([0, start], np.int64)
            n = np.array([min(self._blksize, idx.file_size), idx.file_size - start], np.int64)
            return np.tile(o, k), np.tile(n, k)
        if spec.npz_layout != "per_sample":   # each sample's load reads the same (all of x;
            _, o, n = self._whole_load(f)     # the file's one shot)
            k = len(np.asarray(local))
            return np.tile(o, k), np.tile(n, k)
        members = self._members(f)
        parts = [numpy_reads.sample_reads(members, int(s), spec.dtype, self._blksize)
                 for s in np.asarray(local).tolist()]
        return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))

    def _image_ranges(self, f, local):
        if self._blksize is None:
            self._blksize = self.cfg.reader.buffer_size or os.stat(self.path(f)).st_blksize \
                or 4096
        size = self.data.index(f).file_size
        if self.data.traits.decoder == "png":
            return numpy_reads.png_reads(size, tuple(png.idat_chunks(size)), self._blksize,
                                         self.xfer)
        return numpy_reads.image_reads(size, self._blksize, self.xfer)

    def _buffered_ranges(self, f, local):
        """The reads of samples `local` of file f by seek and read through Python's buffered
        file, the file's buffer kept from sample to sample (numpy_reads.BufferedSamples)."""
        if self._blksize is None:
            self._blksize = self.cfg.reader.buffer_size or os.stat(self.path(f)).st_blksize \
                or 4096
        idx = self.data.index(f)
        file = self._buffered.get(f)
        if file is None:
            file = self._buffered[f] = numpy_reads.BufferedSamples(idx.file_size,
                                                                   self._blksize)
        local = np.asarray(local, np.int64)
        return file.reads(idx.offsets[local], idx.lengths[local])

    def _whole_ranges(self, f, local):
        """Python's f.read() of file f, once per sample (numpy_reads.whole_file_reads)."""
        o, n = numpy_reads.whole_file_reads(self.data.index(f).file_size)
        k = len(np.asarray(local))
        return np.tile(o, k), np.tile(n, k)

    def _pickle_ranges(self, f, local):
        """pickle.load of file f through Python's buffered file, once per sample
        (numpy_reads.pickle_reads)."""
        if self._blksize is None:
            self._blksize = self.cfg.reader.buffer_size or os.stat(self.path(f)).st_blksize \
                or 4096
        o, n = numpy_reads.pickle_reads(self.data.index(f).file_size, self._blksize,
                                        tail=self.cfg.reader.pickle_tail,
                                        frame=self.cfg.reader.pickle_frame)
        k = len(np.asarray(local))
        return np.tile(o, k), np.tile(n, k)

    def _torch_ranges(self, f, local):
        """torch.load of file f (a zip of reader.torch_tensors tensors), once per sample
        (dlio_mpi.checkpoint.zip_reads)."""
        calls = zip_reads.torch_load_reads(self.data.index(f).file_size,
                                           self.cfg.reader.torch_tensors, tail=False)
        o = np.array([c[0] for c in calls], np.int64)
        n = np.array([c[1] for c in calls], np.int64)
        k = len(np.asarray(local))
        return np.tile(o, k), np.tile(n, k)

    def _parquet_ranges(self, f, local, opened=True):
        """pyarrow's reads of file f for the batch's samples `local` (formats/parquet)."""
        known = self._parquet_meta.get(f)
        if known is None:
            # a table of several columns, or one read in part: each row group's coalesced
            # reads of the chosen chunks
            rd = self.cfg.reader
            chunks = parquet.chosen_chunks(self.data.index(f), rd.parquet_columns_read) \
                if self.data.spec.columns or rd.parquet_columns_read \
                or rd.parquet_coalesce == "batch" else None
            known = self._parquet_meta[f] = (parquet.metadata_bytes(self.path(f)), chunks)
        meta, chunks = known
        return parquet.batch_reads(self.data.index(f), meta, local, opened, chunks,
                                   parquet.rows_per_group(self.data.spec),
                                   self.cfg.reader.parquet_coalesce == "batch")

    def _parquet_kept(self, f, local):
        """As _parquet_ranges, the footer read only when the batches move on to file f
        (reader.parquet_open=file)."""
        opened, self._parquet_last = f != self._parquet_last, f
        return self._parquet_ranges(f, local, opened)

    def _whole_load(self, f):
        """(file_size, offsets, lengths) of a sample's load from a stacked or shot file."""
        spec = self.data.spec
        row = int(formats.sample_sizes(spec, f)[0])
        if spec.npz_layout == "shot":
            return numpy_reads.shot_reads(row, self._blksize or 4096)
        return numpy_reads.stacked_reads(row // np.dtype(spec.dtype).itemsize,
                                         spec.samples_per_file, spec.dtype,
                                         self._blksize or 4096)

    def _file_size(self, f):
        if self._npy():
            return self.data.index(f).file_size
        if self.access == "numpy" and self.data.spec.npz_layout != "per_sample":
            return self._whole_load(f)[0]
        if self.access == "numpy":
            return numpy_reads.npz_reads(self._members(f), self.data.spec.dtype,
                                         self._blksize or 4096)[0]
        return self.data.index(f).file_size

    # reading ------------------------------------------------------------------------------
    def read_batch(self, samples):
        k = self.k
        self.k += 1
        if self.reads is None or k >= self.reads.steps:
            raise RuntimeError("read_batch past the planned epoch (start_epoch first)")
        if self.ep is not None:
            return self.queue.read_next(self.ra, self.ahead)
        if self.ra is not None:
            return self._read_ahead(k)
        total = 0
        for f, offs, lens, reopen in self.reads.groups(k):
            total += self._read_group(f, offs, lens, self.buf, reopen)
        return total

    def _stdio(self, f):
        """A STDIO stream of file f of its own, as numpy.fromfile makes (closed by the caller)."""
        return engines.StdioFile(self.path(f), bufsize=self.cfg.io.stdio_buffer,
                                 file_id=self.data.first_id + f, oplog=self.log)

    def _read_group(self, f, offs, lens, out, reopen=False):
        if reopen:
            self.reopen(f)
        h = self._open(f)
        size = self._file_size(f)
        want = int(np.minimum(offs + lens, size).sum() - offs.sum())
        if self._npy():
            got = 0
            for j in range(0, len(offs), 2):    # per load: the header, then the array
                _, g = h.readv(offs[j:j + 1], lens[j:j + 1], out=out[:int(lens[j])])
                s = self._stdio(f)
                try:
                    _, g2 = s.readv(offs[j + 1:j + 2], lens[j + 1:j + 2],
                                    out=out[:int(lens[j + 1])])
                finally:
                    s.close()
                got += g + g2
        else:
            _, got = h.readv(offs, lens, out=out[:int(lens.sum())])
        if got < want:
            raise engines.end_of_file(
                self.path(f), f"wanted {want} bytes from offset {int(offs[0])}, got {got}")
        return got

    def _queue_requests(self):
        """The epoch's reads as read-ahead requests of at most a slot's bytes each."""
        self.requests.clear()
        for k in range(self.reads.steps):
            for f, offs, lens, reopen in self.reads.groups(k):
                if self._npy():     # a load's header and array through their own handles
                    for j in range(len(offs)):
                        self.requests.append((k, f, offs[j:j + 1], lens[j:j + 1],
                                              reopen and j == 0))
                    continue
                ends = np.cumsum(lens)
                cut = [0]
                while cut[-1] < len(lens):
                    base = ends[cut[-1] - 1] if cut[-1] else 0
                    j = int(np.searchsorted(ends, base + self.slot, side="right"))
                    cut.append(max(j, cut[-1] + 1))
                for a, b in zip(cut[:-1], cut[1:]):
                    self.requests.append((k, f, offs[a:b], lens[a:b], reopen and a == 0))

    def refill(self):
        """The next requests queued while the step computes."""
        if self.ra is not None:
            self._fill()

    def _fill(self):
        if self.ep is not None:
            self.queue.fill(self.ahead)
            return
        while self.requests and len(self.pending) < self.ra.depth:
            if any(p[2] == self.requests[0][1] for p in self.pending):
                break           # its file's previous request first: reads stay in order
            k, f, offs, lens, reopen = self.requests.popleft()
            if reopen:      # no request of f is pending (above): its handle can go
                self.reopen(f)
            size = self._file_size(f)
            want = int(np.minimum(offs + lens, size).sum() - offs.sum())
            stream = self._stdio(f) if self._npy() and offs[0] > 0 else None
            t = self.ra.submit(stream or self._open(f), offs, lens)
            self.pending.append((k, t, f, int(offs[0]), want, stream))

    def _read_ahead(self, k):
        total = 0
        while True:
            self._fill()
            if not self.pending or self.pending[0][0] != k:
                return total
            _, t, f, where, want, stream = self.pending.popleft()
            try:
                _, got = self.ra.wait(t)
            finally:
                self.ra.release(t)
                if stream is not None:
                    stream.close()
            if got < want:
                raise engines.end_of_file(
                    self.path(f), f"wanted {want} bytes from offset {where}, got {got}")
            total += got

    def _drain(self):
        if self.ra is None:
            return
        if self.ep is not None:
            self.queue.drain(self.ra)
            self.queue.settle()
            self.queue = self.ep = None
        self.requests.clear()
        while self.pending:
            _, t, _, _, _, stream = self.pending.popleft()
            try:
                self.ra.wait(t)
            except engines.EngineError:
                pass
            self.ra.release(t)
            if stream is not None:
                stream.close()

    def read_extent(self, f, lo, hi):
        raise NotImplementedError("reader.access=stream and numpy read on demand")

    def close(self):
        self._drain()
        if self.ra is not None:
            self.ra.close()
        super().close()

"""Readers: how a rank reads a batch of samples through its interface.

- Reader: POSIX (buffered, O_DIRECT, mmap), STDIO and independent MPI-IO; a batch's byte ranges
  of a file in one engine call, cut into the transfer size.
- MPIReader: MPI-IO on one shared file opened by all ranks; mpiio_coll reads every step's
  ranges in one collective call.
- H5Reader: HDF5 files through libhdf5 (MPI-IO driver, collective or independent, or sec2); a
  batch's rows of a file as one union of hyperslabs in one H5Dread, or (reader.hdf5_reads=
  sample) one H5Dread per sample (collective: a batch's worth of calls on every rank).
- PrefetchReader (dlio_mpi.readers.prefetch): reader.read_threads C threads reading batches ahead
  through every interface but the collective ones.
Every read_batch returns the bytes delivered; short data is an error naming file and offset."""

import numpy as np

from dlio_mpi import backends, engines, formats
from dlio_mpi.readers import access
from dlio_mpi.run import compute_time as timing
from dlio_mpi.data.dataset import Dataset
from dlio_mpi.readers.open_files import OpenFiles

PAGE = 4096


class Preprocessing:
    """reader.preprocess_time per sample (a number, with reader.preprocess_time_stdev, or a
    distribution), drawn reproducibly per rank."""

    def __init__(self, cfg, comm):
        self.spec = cfg.reader.preprocess_time
        self.stdev = cfg.reader.preprocess_time_stdev
        self.rng = np.random.default_rng([cfg.train.seed, comm.Get_rank(), 0x9E])
        self.active = timing.mean(self.spec) > 0 or self.stdev > 0

    def draw(self, n):
        return timing.draw(self.spec, self.rng, n, self.stdev) if self.active else np.zeros(n)


def by_file(samples, spf):
    """A batch's samples grouped by file, in the order files first appear (the order a loop
    over the samples reads them): {file: [sample within the file, ...]}."""
    groups = {}
    for s in samples.tolist():
        f, k = divmod(s, spf)
        g = groups.get(f)
        if g is None:
            groups[f] = [k]
        else:
            g.append(k)
    return groups


class Reader:
    """Byte-range formats through POSIX, STDIO or independent MPI-IO (file per rank's share,
    files opened lazily), a reader_protocol.BatchReader. The open files are kept by one policy
    (open_files.OpenFiles): at most max_open of a rank's own at once, the least recently used
    closed first, never one with reads in flight; a file shared by all ranks stays open for
    the whole run."""

    MAX_OPEN = 256
    ep = None           # no epoch of requests built ahead: the loop calls read_batch

    def __init__(self, cfg, comm, log, split="train"):
        self.cfg, self.comm, self.log, self.split = cfg, comm, log, split
        self.pre = Preprocessing(cfg, comm)
        self.data = Dataset(cfg, split)
        self.data.log = log         # index reads are the run's reads too
        self.batch = cfg.reader.batch_size if split == "train" else cfg.reader.batch_size_eval
        self.files = OpenFiles(self.MAX_OPEN)
        self.backend = backends.of(cfg)
        self.xfer = cfg.reader.transfer_size
        self.buf = engines.aligned_empty(
            self.batch * (self.data.max_sample_bytes() + 2 * 65536), self.mem_align)

    def path(self, i):
        return self.data.path(i)

    @property
    def max_open(self):
        """The most files of the rank's own open at once (beyond it only while every open
        file has reads in flight)."""
        return self.files.limit

    @max_open.setter
    def max_open(self, n):
        self.files.limit = n

    def plan_epoch(self, plan, files=None):
        """Called before the barrier that starts an epoch, with start_epoch's arguments: the
        emulator's own bookkeeping for the epoch, which the application does not do and which
        stays out of the epoch's time. The indexes of the epoch's files, where their layout
        is computed (no I/O): computed per file as a step first read it, one new file a step
        (cosmoflow: one record per file), they cost 20-40 us each inside the steps of the
        first epochs."""
        plan = np.asarray(plan, dtype=np.int64)
        if plan.size:
            self.data.compute_indexes(np.unique(plan // self.data.spf))

    def start_epoch(self, plan, files=None):
        """Called before an epoch's first step with its (steps, batch) samples (and, for
        reader.access=stream, the rank's files in order); readers that plan ahead use it."""

    def reopen(self, i):
        """Close file i if it is open (not one opened collectively): its next read opens it
        anew, as a loader that opens a file per sample does."""
        self.files.reopen(i)

    def open_file(self, i):
        """Open file i as a read of it would, reading nothing (reader.idle_ranks_open)."""
        self._open(i)

    def _open(self, i, keep=()):
        """The open handle of file i (opened now if it is not, room made by the policy;
        keep: files not to close for it)."""
        return self.files.open(i, lambda: self._new_handle(i), keep)

    def _new_handle(self, i):
        """File i opened through the run's backend on this rank alone."""
        h = self.backend.open_read(self.path(i), io=self.cfg.io, file_id=self.data.first_id + i,
                                   oplog=self.log)
        if self.backend.library == backends.MPIIO:
            self._check_size(h, i)
        return h

    def sample_handle(self, i):
        """File i's handle for one sample's read in a read-ahead thread, which opens it and
        closes it after (reader.reopen with read threads: a loader's worker opening the file
        for each sample)."""
        return self.backend.open_read(self.path(i), io=self.cfg.io,
                                      file_id=self.data.first_id + i, oplog=self.log,
                                      deferred=True)

    def _check_size(self, h, i):
        """An MPI-IO file shorter than its index is truncated: said before any read, as
        ROMIO's reads past the end of a file may report every byte asked for as read."""
        size, need = h.size(), self.data.index(i).file_size
        if size < need:
            h.close()
            raise engines.end_of_file(
                self.path(i), f"{size} bytes, the dataset's samples need {need} (truncated?)")

    def sample_ranges(self, f, local):
        """What is read for the samples: their byte ranges, or with O_DIRECT the aligned ranges
        covering them (as an O_DIRECT reader must read)."""
        offs, lens = self.data_ranges(f, local)
        if self.align > 1:
            start = offs - offs % self.align
            end = -(-(offs + lens) // self.align) * self.align
            return start, end - start
        return offs, lens

    def data_ranges(self, f, local):
        """The samples' own byte ranges in file f, or with reader.whole_file the whole file's
        for each (a sample's load reads its file whole)."""
        idx = self.data.index(f)
        if self.cfg.reader.whole_file:
            n = len(local)
            return np.zeros(n, np.int64), np.full(n, idx.file_size, np.int64)
        return idx.ranges(local)

    @property
    def align(self):
        """The file offset and length alignment of a read: O_DIRECT's, from the file system,
        else 1."""
        a = getattr(self, "_align", None)
        if a is None:
            a = 1
            if self.backend.direct:
                a = engines.dio_alignment(self.data.root)[1]
            self._align = a
        return a

    @property
    def mem_align(self):
        """The alignment of every buffer the reader (and its read-ahead) reads into: a page,
        or the file system's O_DIRECT memory alignment where larger."""
        a = getattr(self, "_mem_align", None)
        if a is None:
            a = PAGE
            if self.backend.direct:
                a = max(a, engines.dio_alignment(self.data.root)[0])
            self._mem_align = a
        return a

    def refill(self):
        """Queue reads ahead (readers with read threads); called while the step computes."""

    def preprocess_inline(self, n):
        """The batch's emulated preprocessing, drawn here: the rank's own thread spends it."""
        return float(self.pre.draw(n).sum()) if self.pre.active else 0.0

    def prepare(self, step):
        raise RuntimeError("no epoch of requests is built")

    def short_batch(self, step):
        raise RuntimeError("no epoch of requests is built")

    def load(self, f, local):
        """io.read_type=memory: samples `local` of file f read into memory: the byte extent
        they span (the whole file where its index says so), in transfer-size pieces."""
        idx = self.data.index(f)
        if idx.whole_file:
            lo, hi = 0, idx.file_size
        else:
            offs, lens = idx.ranges(local)
            lo, hi = int(offs.min()), int((offs + lens).max())
        return self.read_extent(f, lo, hi)

    def read_batch(self, samples):
        """The batch's samples, one engine call per file. The emulator keeps no sample
        content: every transfer lands at the start of the batch buffer (readv's discard), a
        block the core's cache keeps, as a loop that reads samples and drops them does."""
        if self.align == 1:
            return self._read_batch_plain(samples)
        files, local = self.data.locate(samples)
        total = 0
        for f in np.unique(files):
            sel = local[files == f]
            offs, lens = self.sample_ranges(int(f), sel)
            # aligned ranges may run past the end of the file: what the samples need counts
            want_o, want_l = self.data_ranges(int(f), sel)
            _, got = self._open(int(f)).readv(offs, lens, xfer=self.xfer, out=self.buf,
                                              per_range=True, discard=True)
            short = got < (want_o + want_l - offs)
            if short.any():
                k = int(short.argmax())
                raise engines.end_of_file(
                    self.path(int(f)), f"wanted {int(want_l[k])} bytes at offset {int(want_o[k])}")
            total += int(got.sum())
        return total

    def _read_batch_plain(self, samples):
        """A batch's byte ranges, one engine call per file, with as little Python per step as
        the hot loop can have (no numpy passes per file)."""
        spf = self.data.spf
        total = 0
        buf = self.buf
        if self.cfg.reader.whole_file:      # each sample its file read whole from its start
            for s in samples.tolist():
                f = s // spf
                if self.cfg.reader.reopen:
                    self.reopen(f)
                _, got = self._open(f).readv([0], [int(self.data.index(f).file_size)],
                                             xfer=self.xfer, out=buf, exact=True, discard=True)
                total += got
            return total
        if self.cfg.reader.reopen:          # a file opened for each sample
            for s in samples.tolist():
                f, k = divmod(s, spf)
                idx = self.data.index(f)
                self.reopen(f)
                _, got = self._open(f).readv([int(idx.offsets[k])], [int(idx.lengths[k])],
                                             xfer=self.xfer, out=buf, exact=True, discard=True)
                total += got
            return total
        for f, ks in by_file(samples, spf).items():
            idx = self.data.index(f)
            offs = [int(idx.offsets[k]) for k in ks]
            lens = [int(idx.lengths[k]) for k in ks]
            _, got = self._open(f).readv(offs, lens, xfer=self.xfer, out=buf, exact=True,
                                         discard=True)
            total += got
        return total

    def read_extent(self, f, lo, hi):
        """Bytes [lo, hi) of file f, in transfer-size pieces (reading a file into memory)."""
        if self.align > 1:
            lo, hi = lo - lo % self.align, -(-hi // self.align) * self.align
        buf = engines.aligned_empty(hi - lo, self.mem_align)
        _, got = self._open(f).readv([lo], [hi - lo], xfer=self.xfer, out=buf,
                                     exact=self.align == 1)
        return got

    def close(self):
        self.files.close_all()


class MPIReader(Reader):
    """MPI-IO on the one shared file, opened collectively. mpiio_coll reads a step's ranges in
    collective calls of reader.transfer_size pieces (piece j of every rank in call j; a rank
    with fewer pieces joins with none), or in one call with transfer_size=0; the number of
    calls of each step is agreed once per epoch."""

    def __init__(self, cfg, comm, log, split="train"):
        super().__init__(cfg, comm, log, split)
        h = self.backend.open_read(self.path(0), io=cfg.io, comm=comm,
                                   file_id=self.data.first_id, oplog=log, shared=True)
        self._check_size(h, 0)      # every rank sees the same size: all stop, or none
        self.files.add(0, h, pinned=True)
        self.calls, self.step = None, 0

    def _pieces(self, samples):
        _, local = self.data.locate(samples)
        offs, lens = self.sample_ranges(0, local)
        return access.pieces(offs, lens, self.xfer)

    def start_epoch(self, plan, files=None):
        if not self.backend.collective or self.xfer <= 0:
            return
        from mpi4py import MPI
        mine = np.array([len(self._pieces(batch)[0]) for batch in plan], np.int64)
        self.calls = np.empty_like(mine)
        self.comm.Allreduce(mine, self.calls, op=MPI.MAX)
        self.step = 0

    def read_batch(self, samples):
        if not self.backend.collective:
            return super().read_batch(samples)
        h = self.files.get(0)
        if self.xfer <= 0:
            _, local = self.data.locate(samples)
            offs, lens = self.sample_ranges(0, local)
            want = int(lens.sum())
            _, got = h.read_all(offs, lens, out=self.buf[:want])
        else:
            offs, lens = self._pieces(samples)
            if self.calls is None or self.step >= len(self.calls):
                raise RuntimeError("mpiio_coll read_batch past the planned epoch "
                                   "(start_epoch first)")
            calls = int(self.calls[self.step])
            self.step += 1
            want, got, at = int(lens.sum()), 0, 0
            for o, n in zip(offs.tolist(), lens.tolist()):
                got += h.read_all([o], [n], out=self.buf[at:at + n])[1]
                at += n
            empty = self.buf[:0]
            for _ in range(calls - len(offs)):
                h.read_all([], [], out=empty)
        if got < want:
            # the collective calls returned on every rank: this rank can stop on its own
            raise engines.end_of_file(
                self.path(0), f"a collective read of {want} bytes from offset "
                f"{int(offs.min())} got {got}")
        return got


class H5Reader(Reader):
    """HDF5 files through libhdf5: a batch's rows of a file in one H5Dread. A shared file is
    opened by all ranks together (MPI-IO driver on the job's communicator); files of a rank's
    own share are opened by the rank alone."""

    def __init__(self, cfg, comm, log, split="train"):
        super().__init__(cfg, comm, log, split)
        self.collective = self.backend.collective
        self.shared = cfg.io.layout != "multi"
        if self.shared:
            self.files.add(0, self._new_handle(0), pinned=True)

    def _new_handle(self, i):
        return self.backend.open_read(self.path(i), io=self.cfg.io, comm=self.comm,
                                      file_id=self.data.first_id + i, oplog=self.log,
                                      dataset=self.data.spec.dataset, shared=self.shared,
                                      dataset_per_read=self.dataset_per_read,
                                      fields=self.fields,
                                      chunk_cache=self.cfg.reader.hdf5_chunk_cache != "off")

    @property
    def dataset_per_read(self):
        """reader.hdf5_dataset_open=read: the dataset opened for each H5Dread."""
        return self.cfg.reader.hdf5_dataset_open == "read"

    def sample_handle(self, i):
        """As Reader.sample_handle: the dataset of file i, a row a sample."""
        return self.backend.open_read(self.path(i), io=self.cfg.io, comm=self.comm,
                                      file_id=self.data.first_id + i, oplog=self.log,
                                      dataset=self.data.spec.dataset, shared=False,
                                      deferred=True,
                                      row_bytes=int(formats.sample_sizes(self.data.spec, i)[0]),
                                      dataset_per_read=self.dataset_per_read,
                                      fields=self.fields,
                                      chunk_cache=self.cfg.reader.hdf5_chunk_cache != "off")

    @property
    def fields(self):
        """dataset.hdf5_fields: the datasets read with each read of rows."""
        return tuple(f[0] for f in self.data.spec.fields)

    def rows(self, f, local):
        """The dataset rows of samples local of file f: sample i is row i (the layout every
        HDF5 file of the dataset has; its index is not read, so that no library but the
        reader's opens the file during training)."""
        return np.asarray(local, dtype=np.int64)

    def read_batch(self, samples):
        files, local = self.data.locate(samples)
        order = self.cfg.reader.batch_order
        if order and self.cfg.reader.hdf5_reads == "sample" and self.split == "train":
            # the batch's samples in the reader's own order (a short batch keeps the
            # positions it has)
            at = [k for k in order if k < len(local)]
            files, local = files[at], local[at]
        if self.collective and self.cfg.reader.hdf5_reads == "sample":
            # one collective H5Dread a sample (h5bench, a VPIC-like reader: a dataset a
            # call): every rank makes a batch's worth of calls, a short batch's missing
            # samples joined with no rows
            total = 0
            for k in range(self.batch):
                rows = self.rows(0, local[k:k + 1])
                total += self.files.get(0).read_rows(rows, np.ones_like(rows), out=self.buf)[1]
            return total
        if self.collective:
            rows = self.rows(0, local)
            _, got = self.files.get(0).read_rows(rows, np.ones_like(rows), out=self.buf)
            return got
        total = 0
        if self.cfg.reader.reopen:          # a file opened for each sample, one row a read
            for f, k in zip(files.tolist(), local.tolist()):
                rows = self.rows(f, np.array([k]))
                self.reopen(f)
                _, got = self._open(f).read_rows(rows, np.ones_like(rows), out=self.buf)
                total += got
            return total
        if self.cfg.reader.hdf5_reads == "sample":     # one H5Dread a sample, in order
            for f, k in zip(files.tolist(), local.tolist()):
                rows = self.rows(f, np.array([k]))
                _, got = self._open(f).read_rows(rows, np.ones_like(rows), out=self.buf)
                total += got
            return total
        for f in np.unique(files):
            rows = self.rows(int(f), local[files == f])
            _, got = self._open(int(f)).read_rows(rows, np.ones_like(rows), out=self.buf)
            total += got
        return total

    def load(self, f, local):
        """io.read_type=memory: the samples' rows of file f in one H5Dread, or one H5Dread
        a row with reader.hdf5_reads=sample (a program loading its rows one by one)."""
        rows = self.rows(f, local)
        if self.cfg.reader.hdf5_reads == "sample":
            handle = self._open(f)
            return sum(handle.read_rows(rows[k:k + 1], np.ones(1, dtype=rows.dtype))[1]
                       for k in range(len(rows)))
        return self._open(f).read_rows(rows, np.ones_like(rows))[1]

    def read_extent(self, f, lo, hi):
        raise NotImplementedError("HDF5 input is read by rows")

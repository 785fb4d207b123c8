"""Checkpoint writing and reading through the native engines; every call is collective.

    from dlio_mpi.checkpoint import Checkpointer, preset
    size = preset("llama3_8b")                       # 8 ranks: TP 1 x PP 1 x DP 8, ZeRO 3
    ck = Checkpointer(comm, "/scratch/ckpt", "file_per_rank", direct=True, oplog=log)
    res = ck.write(step, size)                       # one checkpoint: res.duration, .bandwidth
    ck.read(step, size, shift=1, verify=True)        # read another rank's shard back

Formats (``fmt``):
  file_per_rank  each writing rank one file ``<prefix>-<index>-r<rank>.bin`` through POSIX,
                 buffered or O_DIRECT: ``chunk`` bytes per engine call, split into
                 ``xfer``-byte pwrites.
  mpiio          one shared file ``<prefix>-<index>.bin``, rank shares in rank order (offsets
                 by exscan): ``chunk`` bytes per rank per MPI_File_write_at_all, every rank
                 joining every round (with nothing when it has nothing left), MPI_File_sync.
  hdf5           one shared file ``<prefix>-<index>.h5`` with a 1-D uint8 dataset "checkpoint"
                 of the total bytes, each rank's rows collectively through the MPI-IO driver,
                 ``chunk`` rows per H5Dwrite; HDF5 does not fsync, so after closing the file is
                 reopened with MPI-IO and MPI_File_sync'ed.
  four_files     the DLIO paper's pattern: every rank writes four files of 4 MiB, 64 KiB,
                 4 KiB and 1 KiB (``.data``, ``.meta``, ``.index``, ``.state``), each in one
                 write and fsynced.

O_DIRECT (``direct=True``, POSIX formats): aligned buffer; ``xfer`` must be a multiple of the
file system's O_DIRECT alignment (checked before any I/O). When a file's size is not a multiple
of it, the aligned part goes through O_DIRECT and the remaining tail through a second, buffered
descriptor (reads alike): no padding, the file has exactly its size, and one fsync covers both
(fsync flushes the inode).

Completion: a file is written as ``<name>.part``, fsynced and closed; once every rank is done
(agreed collectively) it is renamed to its final name (a shared file by rank 0, a file per rank
by its rank), and the directory is fsynced (``sync_dir``). A final name always holds a whole
file, and no file of a checkpoint has its final name before all its files are whole: a rank
that fails or dies during the writes leaves only ``.part`` files. A failed checkpoint leaves no
file.

Errors: every rank checks its inputs and directory and the outcome is agreed collectively before
any collective I/O; an error during the I/O is caught, the rank keeps joining the remaining
collective calls with nothing, and the outcome is agreed again after them. Every rank then
raises the same one-line CheckpointError naming the lowest failing rank and its path.
One exception: HDF5 (1.10) through ROMIO cannot finish a collective H5Dwrite or H5Dread that
failed on one rank, so there the rank whose call failed ends the job (engines.end_hdf5_job,
after ``before_abort(message)`` if set) instead of hanging. With ompio, and for plain MPI-IO
with either, every rank raises the same error. ompio reports a failed pwrite as a short write
without an error code: the bytes moved are checked against the bytes asked for.

The bytes are checkpoint_size.Content(index, writer): position-determined, so any reader verifies.
"""
import os
import time
from dataclasses import dataclass

import numpy as np
from mpi4py import MPI

from dlio_mpi import checkpoint_record, collective, engines, sysinfo
from dlio_mpi.checkpoint_size import (  # noqa: F401
    FLAT, GIB, LLAMA3, MLPERF_STORAGE_GIB, PAGE, PRESETS, WRITER_POLICIES, Content, Filler,
    FlatCheckpoint, Layout, Transformer, TransformerCheckpoint, is_writer, preset, split,
    stage_layers, writer_ranks)

FORMATS = ("file_per_rank", "mpiio", "hdf5", "four_files")
FOUR_FILES = (("data", 4 << 20), ("meta", 64 << 10), ("index", 4 << 10), ("state", 1 << 10))
SYNCS = ("fsync", "fdatasync", "none")
FILE_ID_BASE = 1 << 30      # op-log file ids: FILE_ID_BASE + (index % 2**24) * 8 + file number


class CheckpointError(collective.RankError):
    """A checkpoint failed on some rank; raised on every rank with the same one-line message.
    errors: [(rank, message)] of every failing rank."""

    def __init__(self, message, errors):
        super().__init__(message, int(errors[0][0]), errors)


@dataclass(frozen=True)
class CheckpointResult:
    """One checkpoint write or read. This rank: bytes, fsyncs (of files, counted when issued
    and successful), dir_fsyncs, seconds (from the agreed start to this rank's end, less the
    time spent making and verifying content), files. Whole job (reduced with MPI): total_bytes,
    total_fsyncs, movers (ranks that moved bytes), duration (the slowest rank's seconds) and
    bandwidth (total_bytes / duration, bytes/s)."""
    index: int
    op: str
    fmt: str
    bytes: int
    fsyncs: int
    dir_fsyncs: int
    seconds: float
    files: tuple
    total_bytes: int
    total_fsyncs: int
    movers: int
    duration: float

    @property
    def bandwidth(self):
        return self.total_bytes / self.duration if self.duration > 0 else 0.0


def _line(e):
    """One line for an exception, with the file name where Python's OSError has one."""
    if isinstance(e, OSError) and not isinstance(e, engines.EngineError) and e.filename:
        return f"{e.filename}: {e.strerror}"
    return " ".join(str(e).split()) or type(e).__name__


def _unlink(*paths):
    for p in paths:
        try:
            os.unlink(p)
        except OSError:
            pass


class Checkpointer:
    """Writes and reads checkpoints of one format in directory; see the module doc.

    comm: every method is collective on it. xfer: bytes per POSIX read/write call. chunk: bytes
    per engine call and buffer size (file_per_rank: rounded up to a multiple of xfer; mpiio and
    hdf5: bytes per rank per collective call). sync: "fsync", "fdatasync" (POSIX formats; MPI-IO
    and HDF5 always MPI_File_sync) or "none" (no directory fsync either). hints: MPI-IO hints
    (mpiio, hdf5). oplog: an engines.OpLog that receives every operation."""

    def __init__(self, comm, directory, fmt="file_per_rank", *, direct=False, xfer=1 << 20,
                 chunk=64 << 20, sync="fsync", sync_dir=True, hints=None, oplog=None,
                 prefix="ckpt", record=False):
        if fmt not in FORMATS:
            raise ValueError(f"unknown checkpoint format {fmt!r}: use one of {', '.join(FORMATS)}")
        if direct and fmt not in ("file_per_rank", "four_files"):
            raise ValueError(f"O_DIRECT applies to the POSIX formats, not to {fmt}")
        if sync not in SYNCS:
            raise ValueError(f"unknown sync {sync!r}: use one of {', '.join(SYNCS)}")
        if int(xfer) < 1 or int(chunk) < 1:
            raise ValueError(f"xfer ({xfer}) and chunk ({chunk}) must be positive")
        self.comm, self.fmt, self.direct = comm, fmt, bool(direct)
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.directory = os.path.abspath(os.fspath(directory))
        self.shared = fmt in ("mpiio", "hdf5")
        self.xfer = int(xfer)
        self.chunk = -(-int(chunk) // self.xfer) * self.xfer if fmt == "file_per_rank" \
            else int(chunk)
        self.sync, self.sync_dir, self.hints, self.oplog = sync, sync_dir, hints, oplog
        self.prefix = prefix
        # record: rank 0 names each complete checkpoint's files in the folder's record
        # (checkpoint_record), which says whether the folder was made by a run
        self.record = bool(record)
        if self.record:
            self._made = comm.bcast(not os.path.isdir(self.directory) if self.rank == 0
                                    else None, root=0)
        # HDF5 through ROMIO: a failed collective write cannot be finished (module doc)
        self._abort_on_io_error = fmt == "hdf5" and sysinfo.romio_in_use()
        self.before_abort = None    # called with the message before such an abort
        self._buf = self._exp = self._align = None
        self._own = 0.0   # seconds of the emulator's own work in the current operation

    def paths(self, index, rank=None):
        """Final paths of the files rank (default: this rank) writes in checkpoint index."""
        r = self.rank if rank is None else rank
        base = os.path.join(self.directory, f"{self.prefix}-{index:06d}")
        if self.fmt == "file_per_rank":
            return [f"{base}-r{r:06d}.bin"]
        if self.fmt == "four_files":
            return [f"{base}-r{r:06d}.{name}" for name, _ in FOUR_FILES]
        return [base + (".h5" if self.fmt == "hdf5" else ".bin")]

    def _posix_files(self, index, rank, n):
        """(path, share start, bytes, op-log file id, in one operation) of rank's files."""
        fid = FILE_ID_BASE + (index % (1 << 24)) * 8
        if self.fmt == "file_per_rank":
            return [(self.paths(index, rank)[0], 0, n, fid, False)] if n else []
        starts = np.cumsum([0] + [s for _, s in FOUR_FILES])
        return [(p, int(starts[k]), s, fid + k, True)
                for k, (p, (_, s)) in enumerate(zip(self.paths(index, rank), FOUR_FILES))]

    def _elapsed(self, t0):
        return max(0.0, time.perf_counter() - t0 - self._own)

    # -- agreement -----------------------------------------------------------------------
    def _err(self, e, doing=""):
        msg = f"{doing} {_line(e)}" if doing else _line(e)
        return msg if msg.startswith(f"rank {self.rank}:") else f"rank {self.rank}: {msg}"

    def _raise(self, what, errs):
        bad = [(r, e) for r, e in enumerate(errs) if e]
        more = len(bad) - 1
        tail = f" (and {more} more rank{'s' if more > 1 else ''})" if more else ""
        raise CheckpointError(f"{what} failed: {bad[0][1]}{tail}", bad)

    def _agree(self, what, err, rounds=0, cleanup=None):
        """Collective: MAX of (error flag, rounds). With an error anywhere every rank runs
        cleanup() (which may be collective) and raises the same CheckpointError. Returns the
        agreed rounds."""
        m = np.array([1 if err else 0, rounds], dtype=np.int64)
        self.comm.Allreduce(MPI.IN_PLACE, m, op=MPI.MAX)
        if m[0]:
            errs = self.comm.allgather(err)
            if cleanup is not None:
                try:
                    cleanup()
                except Exception:   # noqa: BLE001 - the first error is the one reported
                    pass
            self._raise(what, errs)
        return int(m[1])

    def _finish(self, index, op, err, nbytes, fsyncs, dsyncs, secs, files, owned=()):
        """Collective: reduce the results; on an error anywhere delete owned (a failed
        checkpoint leaves no file) and raise on every rank."""
        mx = np.array([1.0 if err else 0.0, secs], dtype=np.float64)
        sm = np.array([nbytes, fsyncs, 1 if nbytes else 0], dtype=np.int64)
        self.comm.Allreduce(MPI.IN_PLACE, mx, op=MPI.MAX)
        self.comm.Allreduce(MPI.IN_PLACE, sm, op=MPI.SUM)
        if mx[0]:
            _unlink(*owned)
            self._raise(f"checkpoint {index} {op}", self.comm.allgather(err))
        return CheckpointResult(index, op, self.fmt, int(nbytes), int(fsyncs), int(dsyncs),
                                float(secs), tuple(files), int(sm[0]), int(sm[1]), int(sm[2]),
                                float(mx[1]))

    # -- checks before I/O -----------------------------------------------------------------
    def _my_bytes(self, nbytes):
        if self.fmt == "four_files":
            return 0
        if hasattr(nbytes, "rank_bytes"):
            lay = nbytes.layout
            if lay.world != self.size:
                raise ValueError(f"checkpoint layout of {lay.world} ranks (TP {lay.tp} x PP "
                                 f"{lay.pp} x DP {lay.dp}) on {self.size} ranks")
            return nbytes.rank_bytes(self.rank)
        if int(nbytes) < 0:
            raise ValueError(f"negative checkpoint size {nbytes}")
        return int(nbytes)

    def _check_dir(self, writing):
        """This rank's problem with its directory as a one-line message, or None. Collective
        for the shared formats, whatever the outcome."""
        d, err = self.directory, None
        try:
            if writing:
                os.makedirs(d, exist_ok=True)
            if not os.path.isdir(d):
                err = self._err(f"checkpoint directory {d} does not exist")
            elif writing and not os.access(d, os.W_OK | os.X_OK):
                err = self._err(f"checkpoint directory {d} is not writable")
            elif self.direct:
                if self._align is None:
                    self._align = engines.dio_alignment(d)
                if self.xfer % self._align[1]:
                    err = self._err(f"transfer size {self.xfer} is not a multiple of the "
                                    f"O_DIRECT alignment {self._align[1]} of {d}")
        except engines.EngineError as e:
            err = self._err(e)
        except OSError as e:
            err = self._err(e, f"cannot {'create' if writing else 'use'} checkpoint directory")
        if self.shared:
            root = self.comm.bcast(d, root=0)
            if root != d and err is None:
                err = self._err(f"checkpoint directory {d} differs from rank 0's {root} "
                                "(a shared file needs one directory)")
        return err

    def _buffers(self, n, verify):
        need, align = max(n, 1), max(PAGE, self._align[0] if self._align else 1)
        if self._buf is None or self._buf.shape[0] < need:
            self._buf = engines.aligned_empty(need, align)
        if verify and (self._exp is None or self._exp.shape[0] < need):
            self._exp = engines.aligned_empty(need, align)
        return self._buf, self._exp

    # -- POSIX -------------------------------------------------------------------------------
    def _posix_write(self, path, content, start, n, fid, single):
        """Share positions [start, start + n) into path.part (published by write() once every
        rank's files are whole); returns fsyncs."""
        tmp, step = path + ".part", (n if single else self.chunk)
        fill = Filler(content, self._buffers(min(step, n), False)[0])
        xfer = 0 if single else self.xfer
        head = n - n % self._align[1] if self.direct else n
        written = syncs = 0
        try:
            with engines.PosixFile(tmp, "w", direct=self.direct, file_id=fid,
                                   oplog=self.oplog) as f:
                for pos in range(0, head, step):
                    k = min(step, head - pos)
                    written += f.writev([pos], [k], self._content(fill, start + pos, k),
                                        xfer=xfer)
                last = f
                if head < n:   # O_DIRECT: the unaligned tail through a buffered descriptor
                    last = engines.PosixFile(tmp, "r+", file_id=fid, oplog=self.oplog)
                    written += last.writev([head], [n - head],
                                           self._content(fill, start + head, n - head))
                if self.sync != "none":
                    last.sync(data_only=self.sync == "fdatasync")
                    syncs += 1
                if last is not f:
                    last.close()
            if written != n:
                raise OSError(f"wrote {written} of {n} bytes to {tmp}")
        except BaseException:
            _unlink(tmp)
            raise
        return syncs

    def _posix_read(self, path, content, start, n, fid, single, verify):
        if os.stat(path).st_size != n:
            raise OSError(f"{path} holds {os.stat(path).st_size} bytes, expected {n}")
        step = n if single else self.chunk
        buf, exp = self._buffers(min(step, n), verify)
        want = Filler(content, exp) if verify else None
        head = n - n % self._align[1] if self.direct else n
        got = 0
        for lo, hi, direct in ((0, head, self.direct), (head, n, False)):
            if hi <= lo:
                continue
            with engines.PosixFile(path, "r", direct=direct, file_id=fid, oplog=self.oplog) as f:
                for pos in range(lo, hi, step):
                    k = min(step, hi - pos)
                    got += f.readv([pos], [k], xfer=0 if single else self.xfer, out=buf[:k],
                                   exact=True)[1]
                    if want is not None:
                        self._compare(buf[:k], self._content(want, start + pos, k), path, pos)
        return got

    # The emulator's own work (making the content, verifying it) is timed apart and left out
    # of the seconds reported: they are the storage's.
    def _content(self, fill, start, n):
        t = time.perf_counter()
        b = fill.at(start, n)
        self._own += time.perf_counter() - t
        return b

    def _compare(self, got, want, path, offset):
        t = time.perf_counter()
        k = got.shape[0] // 8 * 8
        same = np.array_equal(got[:k].view(np.uint64), want[:k].view(np.uint64)) and \
            np.array_equal(got[k:], want[k:])
        self._own += time.perf_counter() - t
        if not same:
            at = int(np.flatnonzero(got != want)[0])
            raise OSError(f"content of {path} differs from what was written at byte "
                          f"{offset + at}")

    def _dir_sync(self):
        if not self.sync_dir or self.sync == "none":
            return 0
        fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        return 1

    # -- MPI-IO and HDF5 ---------------------------------------------------------------------
    def _open_shared(self, path, writing, total, fid):
        if self.fmt == "mpiio":
            return engines.MPIFile(self.comm, path, "w" if writing else "r", hints=self.hints,
                                   file_id=fid, oplog=self.oplog)
        return engines.H5Dataset(path, "checkpoint", driver="mpio", comm=self.comm,
                                 collective=True, hints=self.hints, file_id=fid,
                                 oplog=self.oplog, create=(total,) if writing else None)

    def _collective(self, index, path, off, n, total, rounds, content, writing, verify):
        """This rank's share [off, off + n) of the shared file in rounds collective calls;
        returns (error, bytes, fsyncs). A rank with an error keeps joining every call."""
        what = f"checkpoint {index} {'write' if writing else 'read'}"
        fid, err, nb, syncs = FILE_ID_BASE + (index % (1 << 24)) * 8, None, 0, 0
        buf, exp = self._buffers(min(self.chunk, n), verify and not writing)
        fill = Filler(content, buf if writing else exp)
        none = np.zeros(0, dtype=np.int64)
        try:
            h = self._open_shared(path, writing, total, fid)
        except Exception as e:   # noqa: BLE001
            err = self._err(e)
        self._agree(what, err)   # a rank whose open failed has no handle to close
        if not writing:
            try:
                have = h.size() if self.fmt == "mpiio" else \
                    (h.shape[0] if len(h.shape) == 1 and h.row_bytes == 1 else -1)
                if have != total:
                    err = self._err(f"{path} holds {have} checkpoint bytes, expected {total}")
            except Exception as e:   # noqa: BLE001
                err = self._err(e)
            self._agree(what, err, cleanup=h.close)
        for i in range(rounds):
            pos = i * self.chunk
            k = max(0, min(self.chunk, n - pos))
            check = False
            try:
                if k and not err and writing:
                    put = h.write_all if self.fmt == "mpiio" else h.write_rows
                    nb += put([off + pos], [k], self._content(fill, pos, k))
                elif k and not err:
                    get = h.read_all if self.fmt == "mpiio" else h.read_rows
                    nb += get([off + pos], [k], out=buf[:k])[1]
                    check = verify
                elif writing:
                    (h.write_all if self.fmt == "mpiio" else h.write_rows)(none, none, buf[:0])
                else:
                    (h.read_all if self.fmt == "mpiio" else h.read_rows)(none, none,
                                                                         out=buf[:0])
            except Exception as e:   # noqa: BLE001
                err = err or self._err(e)
                if self._abort_on_io_error:
                    engines.end_hdf5_job(self.comm, f"{what} failed: {err}",
                                         path if writing else None, self.before_abort)
            if check:      # after the collective call: a mismatch is this rank's alone
                try:
                    self._compare(buf[:k], self._content(fill, pos, k), path, off + pos)
                except Exception as e:   # noqa: BLE001
                    err = err or self._err(e)
        if writing and self.fmt == "hdf5":   # close, then reopen with MPI-IO to sync
            try:
                h.close()
            except Exception as e:   # noqa: BLE001
                err = err or self._err(e)
            try:   # every rank enters this collective open, whatever happened before
                h = engines.MPIFile(self.comm, path, "r+", hints=self.hints, file_id=fid,
                                    oplog=self.oplog)
            except Exception as e:   # noqa: BLE001
                err, h = err or self._err(e), None
            if self.comm.allreduce(1 if h is None else 0, op=MPI.MAX):
                return err or self._err("the MPI-IO reopen failed on another rank"), nb, 0
        if writing and self.sync != "none":
            try:
                h.sync()
                syncs += 1
            except Exception as e:   # noqa: BLE001
                err = err or self._err(e)
        try:
            h.close()
        except Exception as e:   # noqa: BLE001
            err = err or self._err(e)
        if nb != n and not err:   # ompio: a failed pwrite, yet no MPI error code
            call = {("mpiio", True): "MPI_File_write_at_all", ("hdf5", True): "H5Dwrite",
                    ("mpiio", False): "MPI_File_read_at_all", ("hdf5", False): "H5Dread"}
            call = call[self.fmt, writing]
            err = self._err(f"{call} moved {nb} of {n} bytes of {path} without an error")
        return err, nb, syncs

    # -- the operations ----------------------------------------------------------------------
    def write(self, index, nbytes):
        """Collective: write checkpoint index. nbytes: this rank's share in bytes, or a size
        object of checkpoint_size (its layout must have comm's size); ignored by four_files.
        Returns a CheckpointResult; raises CheckpointError on every rank if any rank failed.
        With record, the names the checkpoint's files will have are first added to the
        folder's record (not timed), so that clean finds them, or the .part files a checkpoint
        stopped halfway leaves; a failure to record raises on every rank before any write."""
        if self.record:
            self._record(index, nbytes)
        return self._write(index, nbytes)

    def _record(self, index, nbytes):
        try:
            writes = self.fmt == "four_files" or self._my_bytes(nbytes) > 0
        except ValueError:
            writes = False      # _write says what is wrong with the size
        writers = self.comm.gather(writes, root=0)
        err = None
        if self.rank == 0:
            shared = self.fmt in ("mpiio", "hdf5")
            names = sorted({os.path.basename(p) for r in range(self.size)
                            if writers[r] or shared for p in self.paths(index, r)})
            try:
                os.makedirs(self.directory, exist_ok=True)
                checkpoint_record.append(self.directory, names, self._made)
            except OSError as e:
                err = self._err(e, "cannot record the checkpoint:")
        err = self.comm.bcast(err, root=0)
        if err:
            raise CheckpointError(f"checkpoint {index} write failed: {err}", [(0, err)])

    def _write(self, index, nbytes):
        n = self._my_bytes(nbytes)
        what = f"checkpoint {index} write"
        err = self._check_dir(True)
        off = (self.comm.exscan(n) or 0) if self.shared else 0
        total = self.comm.allreduce(n) if self.shared else 0
        if self.shared and self.rank == 0 and not err:
            # a shared file's room is checked before its collective writes
            room = sysinfo.space_error(self.directory, total, self.paths(index)[0])
            err = self._err(room) if room else None
        rounds = self._agree(what, err, -(-n // self.chunk) if self.shared else 0)
        content = Content(index, self.rank)
        self._own, t0 = 0.0, time.perf_counter()
        nb = syncs = dsyncs = 0
        files = []
        if not self.shared:
            try:
                for path, start, size, fid, single in self._posix_files(index, self.rank, n):
                    files.append(path)
                    syncs += self._posix_write(path, content, start, size, fid, single)
                    nb += size
            except Exception as e:   # noqa: BLE001
                err = self._err(e)
            # no file gets its final name before every rank's files are whole: a rank that
            # fails, or dies, here leaves only .part files
            self._agree(what, err, cleanup=lambda: _unlink(*[p + ".part" for p in files]))
            try:
                for path in files:
                    os.replace(path + ".part", path)
                if files:
                    dsyncs += self._dir_sync()
            except Exception as e:   # noqa: BLE001
                err = self._err(e, "cannot publish the checkpoint:")
            return self._finish(index, "write", err, nb, syncs, dsyncs,
                                self._elapsed(t0), files,
                                owned=files + [p + ".part" for p in files])
        path = self.paths(index)[0]
        if total:
            err, nb, syncs = self._collective(index, path + ".part", off, n, total, rounds,
                                              content, True, False)
            self._agree(what, err,
                        cleanup=lambda: self.rank == 0 and _unlink(path + ".part"))
            if self.rank == 0:   # every rank is done: publish the file
                try:
                    os.replace(path + ".part", path)
                    dsyncs += self._dir_sync()
                except Exception as e:   # noqa: BLE001
                    err = self._err(e, "cannot publish the checkpoint:")
        return self._finish(index, "write", err, nb, syncs, dsyncs, self._elapsed(t0),
                            [path] if total else [],
                            owned=[path, path + ".part"] if total and self.rank == 0 else [])

    def read(self, index, nbytes, *, shift=0, verify=False):
        """Collective: read checkpoint index back. nbytes as for write() (the shares that were
        written). With shift k, rank r reads the share of rank (r + k) % size, so that the page
        cache of its own writes does not serve it when that rank is on another node. verify
        compares every byte with what was written. Returns a CheckpointResult (op "read")."""
        n = self._my_bytes(nbytes)
        what = f"checkpoint {index} read"
        off = (self.comm.exscan(n) or 0) if self.shared else 0
        total = self.comm.allreduce(n) if self.shared else 0
        w = (self.rank + shift) % self.size
        if w != self.rank:
            off, n = self.comm.sendrecv((off, n), dest=(self.rank - shift) % self.size,
                                        source=w)
        err = self._check_dir(False)
        mine = self._posix_files(index, w, n) if not self.shared else []
        need = [f[0] for f in mine] if not self.shared else \
            self.paths(index) if total and self.rank == 0 else []
        missing = [p for p in need if not os.path.exists(p)]
        if err is None and missing:
            err = self._err(f"checkpoint file {missing[0]} does not exist")
        rounds = self._agree(what, err, -(-n // self.chunk) if self.shared else 0)
        content = Content(index, w)
        self._own, t0 = 0.0, time.perf_counter()
        nb, done = 0, []
        if not self.shared:
            try:
                for path, start, size, fid, single in mine:
                    nb += self._posix_read(path, content, start, size, fid, single, verify)
                    done.append(path)
            except Exception as e:   # noqa: BLE001
                err = self._err(e)
        elif total:
            done = self.paths(index)
            err, nb, _ = self._collective(index, done[0], off, n, total, rounds, content,
                                          False, verify)
        return self._finish(index, "read", err, nb, 0, 0, self._elapsed(t0), done)

    def remove(self, index):
        """Collective: delete checkpoint index's files (each rank its own, rank 0 a shared
        file); missing files are ignored."""
        if not self.shared or self.rank == 0:
            for p in self.paths(index):
                _unlink(p, p + ".part")
        self.comm.Barrier()


def write_then_read(ckpt, nbytes, writes, reads, *, shift=0, verify=False):
    """Checkpoint-only mode: write checkpoints 0 .. writes-1, then read 0 .. reads-1 back.
    Returns (write results, read results)."""
    if reads > writes:
        raise ValueError(f"cannot read {reads} checkpoints after writing {writes}")
    w = [ckpt.write(i, nbytes) for i in range(writes)]
    r = [ckpt.read(i, nbytes, shift=shift, verify=verify) for i in range(reads)]
    return w, r

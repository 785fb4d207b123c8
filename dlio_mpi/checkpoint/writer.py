"""Checkpointer: checkpoints of one format written and read through the native engines,
every call collective (the formats, completion and errors: dlio_mpi.checkpoint)."""
import os
import time

import numpy as np
from mpi4py import MPI

from dlio_mpi import engines
from dlio_mpi.run import sysinfo
from dlio_mpi.checkpoint import lock as checkpoint_lock
from dlio_mpi.checkpoint import record as checkpoint_record
from dlio_mpi.checkpoint.common import (FORMATS, FOUR_FILES, MODEL_OPTIMIZER_FILES,
                                        WRITE_PATTERNS,
                                        READ_PATTERNS, SYNCS, ZIP_FORMATS,
                                        CheckpointError, CheckpointResult, _line, _unlink)
from dlio_mpi.checkpoint.content import Content
from dlio_mpi.checkpoint.posix_io import PosixFiles
from dlio_mpi.checkpoint.shared_io import SharedFile
from dlio_mpi.checkpoint.size import PAGE
from dlio_mpi.run.oplog_format import CHECKPOINT_FILES, checkpoint_id


class _Stopped(str):
    """A rank's error that is a signal stopping it (SIGINT, SIGTERM: the job cancelled), not
    a failure of the storage; it crosses ranks in the agreement as a string does."""

    def __new__(cls, text, signum):
        s = super().__new__(cls, text)
        s.signum = signum
        return s

    def __reduce__(self):
        return (_Stopped, (str(self), self.signum))


class Checkpointer(PosixFiles, SharedFile):
    """Writes and reads checkpoints of one format in directory; see the module doc.

    comm: every method is collective on it. xfer: bytes per POSIX read/write call. chunk: bytes
    per engine call and buffer size (file_per_rank: rounded up to a multiple of xfer; mpiio and
    hdf5: bytes per rank per call; collective: their calls collective, else independent). sync: "fsync", "fdatasync" (POSIX formats; MPI-IO
    and HDF5 always MPI_File_sync) or "none" (no directory fsync either). hints: MPI-IO hints
    (mpiio, hdf5). oplog: an engines.OpLog that receives every operation. read_pattern:
    "pieces" (xfer calls front to back) or "torch_zip" (torch.load's calls on a zip,
    checkpoint.zip_reads; file_per_rank and model_optimizer, buffered), tensors: the tensor count
    of each file of a rank's checkpoint for torch_zip. write_pattern: "pieces" (xfer calls
    through POSIX), "stream" (all through a C stream) or "numpy" (numpy.save's: the header
    through POSIX, the rest through a C stream); stream and numpy file_per_rank, buffered."""

    def __init__(self, comm, directory, fmt="file_per_rank", *, direct=False, xfer=1 << 20,
                 chunk=64 << 20, sync="fsync", sync_dir=True, hints=None, oplog=None,
                 prefix="ckpt", record=False, read_pattern="pieces", tensors=(),
                 collective=True, files=1, write_pattern="pieces"):
        if fmt not in FORMATS:
            raise ValueError(f"unknown checkpoint format {fmt!r}: use one of {', '.join(FORMATS)}")
        if direct and fmt not in ("file_per_rank", "four_files", "model_optimizer"):
            raise ValueError(f"O_DIRECT applies to the POSIX formats, not to {fmt}")
        if read_pattern not in READ_PATTERNS:
            raise ValueError(f"unknown read pattern {read_pattern!r}: use one of "
                             f"{', '.join(READ_PATTERNS)}")
        if read_pattern == "torch_zip" and (direct or fmt not in ZIP_FORMATS):
            raise ValueError(f"the torch_zip read pattern reads buffered files of "
                             f"{' or '.join(ZIP_FORMATS)}, not {fmt}"
                             f"{' with O_DIRECT' if direct else ''}")
        if write_pattern not in WRITE_PATTERNS:
            raise ValueError(f"unknown write pattern {write_pattern!r}: use one of "
                             f"{', '.join(WRITE_PATTERNS)}")
        if write_pattern in ("numpy", "stream") and (direct or fmt != "file_per_rank"):
            raise ValueError(f"the {write_pattern} write pattern writes buffered "
                             "file_per_rank files")
        self.write_pattern = write_pattern
        if sync not in SYNCS:
            raise ValueError(f"unknown sync {sync!r}: use one of {', '.join(SYNCS)}")
        if int(xfer) < 1 or int(chunk) < 1:
            raise ValueError(f"xfer ({xfer}) and chunk ({chunk}) must be positive")
        self.comm, self.fmt, self.direct = comm, fmt, bool(direct)
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.directory = os.path.abspath(os.fspath(directory))
        self.shared = fmt in ("mpiio", "hdf5")
        # the shared formats' calls: collective, or independent (shared_io)
        self.collective = bool(collective)
        # file_per_rank: a writer's share in this many files of equal parts
        self.files = int(files)
        if not 1 <= self.files <= CHECKPOINT_FILES or (self.files > 1
                                                       and fmt != "file_per_rank"):
            raise ValueError(f"{self.files} files a writer: file_per_rank takes 1 to "
                             f"{CHECKPOINT_FILES}, the other formats their own")
        self.xfer = int(xfer)
        self.chunk = -(-int(chunk) // self.xfer) * self.xfer \
            if fmt in ("file_per_rank", "model_optimizer") else int(chunk)
        self.sync, self.sync_dir, self.hints, self.oplog = sync, sync_dir, hints, oplog
        self.prefix = prefix
        # torch_zip: each file read as torch.load reads a zip (checkpoint.zip_reads) of
        # tensors[k] tensors for the rank's k-th file (the last count for the files beyond)
        self.read_pattern, self.tensors = read_pattern, tuple(int(t) for t in tensors) or (1,)
        # record: rank 0 names each complete checkpoint's files in the folder's record
        # (checkpoint.record), which says whether the folder was made by a run
        self.record = bool(record)
        if self.record:
            self._made = comm.bcast((checkpoint_lock.made or not os.path.isdir(self.directory))
                                    if self.rank == 0 else None, root=0)
        # HDF5 through ROMIO: a failed collective write cannot be finished (module doc)
        self._abort_on_io_error = fmt == "hdf5" and sysinfo.romio_in_use()
        self.before_abort = None    # called with the message before such an abort
        self._buf = self._exp = self._align = None
        self._own = 0.0   # seconds of the emulator's own work in the current operation

    def paths(self, index, rank=None):
        """Final paths of the files rank (default: this rank) writes in checkpoint index."""
        r = self.rank if rank is None else rank
        base = os.path.join(self.directory, f"{self.prefix}-{index:06d}")
        if self.fmt == "file_per_rank" and self.files > 1:
            return [f"{base}-r{r:06d}-{j:02d}.bin" for j in range(self.files)]
        if self.fmt == "file_per_rank":
            return [f"{base}-r{r:06d}.bin"]
        if self.fmt == "four_files":
            return [f"{base}-r{r:06d}.{name}" for name, _ in FOUR_FILES]
        if self.fmt == "model_optimizer":
            return [f"{base}-r{r:06d}.{name}.bin" for name in MODEL_OPTIMIZER_FILES]
        return [base + (".h5" if self.fmt == "hdf5" else ".bin")]

    def _posix_files(self, index, rank, n, parts=None):
        """(path, share start, bytes, op-log file id, in one operation) of rank's files.
        parts: the rank's (model, optimizer) bytes, for model_optimizer (else all model)."""
        fid = checkpoint_id(index)
        if self.fmt == "file_per_rank":
            # equal parts, the remainder's bytes one each to the first files
            sizes = [n // self.files + (j < n % self.files) for j in range(self.files)]
            starts = np.cumsum([0] + sizes)
            return [(p, int(starts[j]), sizes[j], fid + j, False)
                    for j, p in enumerate(self.paths(index, rank)) if sizes[j]]
        if self.fmt == "model_optimizer":
            sizes = parts or (n, 0)
            starts = (0, sizes[0])
            return [(p, starts[k], sizes[k], fid + k, False)
                    for k, p in enumerate(self.paths(index, rank)) if sizes[k]]
        starts = np.cumsum([0] + [s for _, s in FOUR_FILES])
        return [(p, int(starts[k]), s, fid + k, True)
                for k, (p, (_, s)) in enumerate(zip(self.paths(index, rank), FOUR_FILES))]

    def _elapsed(self, t0):
        return max(0.0, time.perf_counter() - t0 - self._own)

    # -- agreement -----------------------------------------------------------------------
    def _err(self, e, doing=""):
        from dlio_mpi.run.exits import Interrupted
        if isinstance(e, Interrupted):
            return _Stopped(f"rank {self.rank}: stopped by {e}", e.signum)
        msg = f"{doing} {_line(e)}" if doing else _line(e)
        return msg if msg.startswith(f"rank {self.rank}:") else f"rank {self.rank}: {msg}"

    def _raise(self, what, errs):
        """Raise the agreed error on every rank: a signal that stopped a rank (the job
        cancelled) as that interruption, else the CheckpointError of the first failing
        rank."""
        stopped = [e for e in errs if isinstance(e, _Stopped)]
        if stopped:
            from dlio_mpi.run.exits import Interrupted
            raise Interrupted(stopped[0].signum)
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

    def _finish(self, index, op, err, nbytes, fsyncs, dsyncs, secs, files, owned=(),
                publish=0.0):
        """Collective: reduce the results; on an error anywhere delete owned (a failed
        checkpoint leaves no file) and raise on every rank. publish: this rank's seconds of
        secs spent publishing (the renames from .part, the directory fsync)."""
        mx = np.array([1.0 if err else 0.0, secs, publish], dtype=np.float64)
        sm = np.array([nbytes, fsyncs, 1 if nbytes else 0], dtype=np.int64)
        self.comm.Allreduce(MPI.IN_PLACE, mx, op=MPI.MAX)
        self.comm.Allreduce(MPI.IN_PLACE, sm, op=MPI.SUM)
        if mx[0]:
            _unlink(*owned)
            self._raise(f"checkpoint {index} {op}", self.comm.allgather(err))
        return CheckpointResult(index, op, self.fmt, int(nbytes), int(fsyncs), int(dsyncs),
                                float(secs), tuple(files), int(sm[0]), int(sm[1]), int(sm[2]),
                                float(mx[1]), float(publish), float(mx[2]))

    # -- checks before I/O -----------------------------------------------------------------
    def _my_bytes(self, nbytes):
        if self.fmt == "four_files":
            return 0
        if hasattr(nbytes, "rank_bytes"):
            lay = nbytes.layout
            if nbytes.world != self.size:
                raise ValueError(f"checkpoint layout of {nbytes.world} ranks (TP {lay.tp} x "
                                 f"PP {lay.pp} x DP {lay.dp}) on {self.size} ranks")
            return nbytes.rank_bytes(self.rank)
        if int(nbytes) < 0:
            raise ValueError(f"negative checkpoint size {nbytes}")
        return int(nbytes)

    def _parts(self, nbytes, rank):
        """(model, optimizer) bytes of rank's share (model_optimizer), else None."""
        if self.fmt != "model_optimizer" or not hasattr(nbytes, "rank_parts"):
            return None
        return tuple(int(x) for x in nbytes.rank_parts(rank))

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
        """The reused buffers of n bytes (the second for verify), allocated with every page
        touched, so that no timed call pays their page faults."""
        need, align = max(n, 1), max(PAGE, self._align[0] if self._align else 1)
        if self._buf is None or self._buf.shape[0] < need:
            self._buf = _touched(engines.aligned_empty(need, align))
        if verify and (self._exp is None or self._exp.shape[0] < need):
            self._exp = _touched(engines.aligned_empty(need, align))
        return self._buf, self._exp

    def _largest(self, n):
        """Bytes of the largest engine call of a share of n bytes (the buffers' size)."""
        if self.fmt == "four_files":
            return max(s for _, s in FOUR_FILES)
        return min(self.chunk, n)

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

    # -- the operations ----------------------------------------------------------------------
    def write(self, index, nbytes):
        """Collective: write checkpoint index. nbytes: this rank's share in bytes, or a size
        object of checkpoint.size (its layout must have comm's size); ignored by four_files.
        Returns a CheckpointResult; raises CheckpointError on every rank if any rank failed.
        With record, the names the checkpoint's files will have are first added to the
        folder's record (not timed), so that clean finds them, or the .part files a checkpoint
        stopped halfway leaves; a failure to record raises on every rank before any write."""
        if self.record:
            self._record(index, nbytes)
        return self._write(index, nbytes)

    def _record(self, index, nbytes):
        try:
            if self.fmt in ("mpiio", "hdf5"):
                mine = self.paths(index, self.rank)
            elif self.fmt == "four_files":
                mine = self.paths(index, self.rank)
            else:
                mine = [f[0] for f in self._posix_files(
                    index, self.rank, self._my_bytes(nbytes), self._parts(nbytes, self.rank))]
        except ValueError:
            mine = []      # _write says what is wrong with the size
        written = self.comm.gather([os.path.basename(p) for p in mine], root=0)
        err = None
        if self.rank == 0:
            names = sorted({name for names in written for name in names})
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
        self._buffers(self._largest(n), False)    # ready before the clock, as IOR's buffer
        self._own, t0 = 0.0, time.perf_counter()
        nb = syncs = dsyncs = 0
        files = []
        if not self.shared:
            try:
                for path, start, size, fid, single in self._posix_files(
                        index, self.rank, n, self._parts(nbytes, self.rank)):
                    files.append(path)
                    syncs += self._posix_write(path, content, start, size, fid, single)
                    nb += size
            except Exception as e:   # noqa: BLE001
                err = self._err(e)
            # no file gets its final name before every rank's files are whole: a rank that
            # fails, or dies, here leaves only .part files
            self._agree(what, err, cleanup=lambda: _unlink(*[p + ".part" for p in files]))
            t1 = time.perf_counter()
            try:
                for path in files:
                    os.replace(path + ".part", path)
                if files:
                    dsyncs += self._dir_sync()
            except Exception as e:   # noqa: BLE001
                err = self._err(e, "cannot publish the checkpoint:")
            return self._finish(index, "write", err, nb, syncs, dsyncs,
                                self._elapsed(t0), files,
                                owned=files + [p + ".part" for p in files],
                                publish=time.perf_counter() - t1)
        path = self.paths(index)[0]
        if total:
            err, nb, syncs = self._collective(index, path + ".part", off, n, total, rounds,
                                              content, True, False)
            self._agree(what, err,
                        cleanup=lambda: self.rank == 0 and _unlink(path + ".part"))
            t1 = time.perf_counter()
            if self.rank == 0:   # every rank is done: publish the file
                try:
                    os.replace(path + ".part", path)
                    dsyncs += self._dir_sync()
                except Exception as e:   # noqa: BLE001
                    err = self._err(e, "cannot publish the checkpoint:")
        return self._finish(index, "write", err, nb, syncs, dsyncs, self._elapsed(t0),
                            [path] if total else [],
                            owned=[path, path + ".part"] if total and self.rank == 0 else [],
                            publish=time.perf_counter() - t1 if total and self.rank == 0
                            else 0.0)

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
        mine = self._posix_files(index, w, n, self._parts(nbytes, w)) \
            if not self.shared else []
        need = [f[0] for f in mine] if not self.shared else \
            self.paths(index) if total and self.rank == 0 else []
        missing = [p for p in need if not os.path.exists(p)]
        if err is None and missing:
            err = self._err(f"checkpoint file {missing[0]} does not exist")
        rounds = self._agree(what, err, -(-n // self.chunk) if self.shared else 0)
        content = Content(index, w)
        self._buffers(self._largest(n), verify)
        self._own, t0 = 0.0, time.perf_counter()
        nb, done = 0, []
        if not self.shared:
            try:
                for path, start, size, fid, single in mine:
                    if self.read_pattern == "torch_zip":
                        k = min(fid - checkpoint_id(index), len(self.tensors) - 1)
                        nb += self._zip_read(path, content, start, size, fid, verify,
                                             self.tensors[k])
                    else:
                        nb += self._posix_read(path, content, start, size, fid, single,
                                               verify)
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


def _touched(buf):
    """buf with every page written (its page faults taken now)."""
    buf[::PAGE] = 0
    return buf


def write_then_read(ckpt, nbytes, writes, reads, *, shift=0, verify=False):
    """Checkpoint-only mode: write checkpoints 0 .. writes-1, then read 0 .. reads-1 back.
    Returns (write results, read results)."""
    if reads > writes:
        raise ValueError(f"cannot read {reads} checkpoints after writing {writes}")
    w = [ckpt.write(i, nbytes) for i in range(writes)]
    r = [ckpt.read(i, nbytes, shift=shift, verify=verify) for i in range(reads)]
    return w, r

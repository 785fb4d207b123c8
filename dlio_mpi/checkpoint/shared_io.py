"""The shared formats' file (mpiio, hdf5): every rank's share in collective calls of
``chunk`` bytes per rank, a rank with an error joining every remaining call with nothing, or,
the Checkpointer's ``collective`` false, in independent calls of ``chunk`` bytes (a rank with
less data makes fewer; open, close and sync stay collective); HDF5 reopened with MPI-IO to be
synced. A mixin of checkpoint.writer.Checkpointer.

mpiio calls MPI_File_write_at_all / read_at_all at explicit offsets through the default view,
as IOR -a MPIIO -c does: a rank's share is one contiguous range per call, so no file view is
needed, and MPI_File_set_view, being collective, would make every call wait for the slowest
rank (measured with Open MPI's ompio: a rank 200 ms late delays the other's every call by
200 ms, where explicit offsets let each rank run at its own pace until MPI_File_sync)."""
import numpy as np
from mpi4py import MPI

from dlio_mpi import engines
from dlio_mpi.run import collective
from dlio_mpi.files import safe_files
from dlio_mpi.run.oplog_format import checkpoint_id
from dlio_mpi.checkpoint.content import Filler


class SharedFile:
    def _open_shared(self, path, writing, total, fid):
        """Collective. Writing: a new file (MPI_MODE_EXCL, H5F_ACC_EXCL), whatever held its
        name (a stale .part, a planted link) removed by rank 0 first."""
        if writing:
            safe_files.remove_stale(path, self.comm)
        if self.fmt == "mpiio":
            return engines.MPIFile(self.comm, path, "x" if writing else "r", hints=self.hints,
                                   file_id=fid, oplog=self.oplog)
        return engines.H5Dataset(path, "checkpoint", driver="mpio", comm=self.comm,
                                 collective=self.collective, hints=self.hints, file_id=fid,
                                 oplog=self.oplog, create=(total,) if writing else None,
                                 exclusive=True)

    def _collective(self, index, path, off, n, total, rounds, content, writing, verify):
        """This rank's share [off, off + n) of the shared file in rounds collective calls;
        returns (error, bytes, fsyncs). A rank with an error keeps joining every call."""
        what = f"checkpoint {index} {'write' if writing else 'read'}"
        fid, err, nb, syncs = checkpoint_id(index), None, 0, 0
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
                if not self.collective:     # independent: only the calls with bytes
                    if k and not err and self.fmt == "mpiio":
                        if writing:
                            nb += h.writev([off + pos], [k], self._content(fill, pos, k))
                        else:
                            nb += h.readv([off + pos], [k], out=buf[:k])[1]
                            check = verify
                    elif k and not err and writing:
                        nb += h.write_rows([off + pos], [k], self._content(fill, pos, k))
                    elif k and not err:
                        nb += h.read_rows([off + pos], [k], out=buf[:k])[1]
                        check = verify
                elif self.fmt == "mpiio":     # explicit offsets, no file view (module doc)
                    k = 0 if err else k
                    if writing:
                        nb += h.write_at_all(off + pos, self._content(fill, pos, k) if k
                                             else buf[:0])
                    else:
                        nb += h.read_at_all(off + pos, buf[:k])
                        check = verify and k > 0
                elif k and not err and writing:
                    nb += h.write_rows([off + pos], [k], self._content(fill, pos, k))
                elif k and not err:
                    nb += h.read_rows([off + pos], [k], out=buf[:k])[1]
                    check = verify
                elif writing:
                    h.write_rows(none, none, buf[:0])
                else:
                    h.read_rows(none, none, out=buf[:0])
            except Exception as e:   # noqa: BLE001
                err = err or self._err(e)
                if self._abort_on_io_error:
                    collective.end_hdf5_job(self.comm, f"{what} failed: {err}",
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
            call = {("mpiio", True): "MPI_File_write_at", ("hdf5", True): "H5Dwrite",
                    ("mpiio", False): "MPI_File_read_at", ("hdf5", False): "H5Dread"}
            call = call[self.fmt, writing] + ("_all" if self.fmt == "mpiio"
                                               and self.collective else "")
            err = self._err(f"{call} moved {nb} of {n} bytes of {path} without an error")
        return err, nb, syncs


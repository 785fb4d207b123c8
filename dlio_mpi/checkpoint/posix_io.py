"""The POSIX formats' files (file_per_rank, four_files): a rank's share written to
``<name>.part`` and read back through the native engine, buffered or O_DIRECT (the unaligned
tail through a second, buffered descriptor), or as torch.load reads a zip (checkpoint.zip_reads).
A mixin of checkpoint.writer.Checkpointer."""
import os

from dlio_mpi import engines
from dlio_mpi.files import safe_files
from dlio_mpi.checkpoint.common import NUMPY_HEADER, _unlink
from dlio_mpi.checkpoint.content import Filler
from dlio_mpi.checkpoint.zip_reads import torch_load_reads


class PosixFiles:
    def _posix_write(self, path, content, start, n, fid, single):
        """Share positions [start, start + n) into path.part (published by write() once every
        rank's files are whole), in pieces (checkpoint.write_pattern pieces), through a C
        stream (stream), or as numpy.save writes it (numpy); returns fsyncs."""
        tmp, step = path + ".part", (n if single else self.chunk)
        fill = Filler(content, self._buffers(min(step, n), False)[0])
        write = self._pieces_body if self.write_pattern == "pieces" else self._stream_body
        try:
            # a new file, a stale .part (or a link planted at its name) removed first
            safe_files.remove_entry(tmp)
            written, syncs = write(tmp, fill, start, n, fid, step, single)
            if written != n:
                raise OSError(f"wrote {written} of {n} bytes to {tmp}")
        except BaseException:
            _unlink(tmp)
            raise
        return syncs

    def _pieces_body(self, tmp, fill, start, n, fid, step, single):
        """tmp made and written in pieces of step bytes, each in xfer calls (O_DIRECT: its
        unaligned tail through a buffered descriptor): (bytes written, fsyncs)."""
        xfer = 0 if single else self.xfer
        head = n - n % self._align[1] if self.direct else n
        written = syncs = 0
        with engines.PosixFile(tmp, "x", direct=self.direct, file_id=fid,
                               oplog=self.oplog) as f:
            for pos in range(0, head, step):
                k = min(step, head - pos)
                written += f.writev([pos], [k], self._content(fill, start + pos, k), xfer=xfer)
            last = f
            if head < n:   # O_DIRECT: the unaligned tail through a buffered descriptor
                last = engines.PosixFile(tmp, "r+", file_id=fid, oplog=self.oplog)
                written += last.writev([head], [n - head],
                                       self._content(fill, start + head, n - head))
            syncs += self._sync(last)
            if last is not f:
                last.close()
        return written, syncs

    def _stream_body(self, tmp, fill, start, n, fid, step, single):
        """tmp made and written through a C stream (STDIO writes of checkpoint.transfer_size),
        as TensorFlow's checkpoint writer writes (write_pattern stream), or as numpy.save
        writes an array (numpy): its header through Python's file object first (one POSIX
        write), then the array by ndarray.tofile through the stream: (bytes written,
        fsyncs)."""
        head = min(NUMPY_HEADER, n) if self.write_pattern == "numpy" else 0
        with engines.PosixFile(tmp, "x", file_id=fid, oplog=self.oplog) as f:
            written = f.writev([0], [head], self._content(fill, start, head)) if head else 0
            if head == n:
                return written, self._sync(f)
            with engines.StdioFile(tmp, "r+", file_id=fid, oplog=self.oplog) as stream:
                for pos in range(head, n, step):
                    k = min(step, n - pos)
                    written += stream.writev([pos], [k], self._content(fill, start + pos, k),
                                             xfer=self.xfer)
                return written, self._sync(stream)

    def _sync(self, handle):
        """The written bytes made durable as checkpoint.fsync asks: 1 fsync issued, or 0."""
        if self.sync == "none":
            return 0
        handle.sync(data_only=self.sync == "fdatasync")
        return 1

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


    def _zip_read(self, path, content, start, n, fid, verify, tensors):
        """Read path (n bytes) in torch.load's calls on a zip of ``tensors`` tensors, each call
        one engine call (a call longer than the buffer in buffer-sized ones); returns the
        bytes the calls read, the bytes read twice counted twice as the storage serves them."""
        if os.stat(path).st_size != n:
            raise OSError(f"{path} holds {os.stat(path).st_size} bytes, expected {n}")
        calls = torch_load_reads(n, tensors)
        buf, exp = self._buffers(min(self.chunk, max((k for _, k in calls), default=1)),
                                 verify)
        want = Filler(content, exp) if verify else None
        got = 0
        with engines.PosixFile(path, "r", file_id=fid, oplog=self.oplog) as f:
            for offset, length in calls:
                for pos in range(offset, offset + length, buf.shape[0]):
                    k = min(buf.shape[0], offset + length - pos)
                    got += f.readv([pos], [k], out=buf[:k], exact=True)[1]
                    if want is not None:
                        self._compare(buf[:k], self._content(want, start + pos, k), path, pos)
        return got

"""A checkpoint's bytes: position-determined content any reader can verify (the layout of
``Content`` is in dlio_mpi.checkpoint.size's docstring), and a filler that hands them out in
pieces into a reused buffer. Pure, no I/O, no MPI."""
import numpy as np
from numpy.lib.stride_tricks import as_strided

from dlio_mpi.checkpoint.size import PAGE, STAMP, TILE


class Content:
    """The deterministic bytes of writer's share in checkpoint index (see the module doc)."""

    def __init__(self, index, writer):
        rng = np.random.default_rng([index, writer, 0x636B7074])
        self.tile = np.frombuffer(rng.bytes(TILE), dtype=np.uint8)
        self.ident = (index << 32) | writer

    def stamp_bytes(self, pages):
        st = np.empty((len(pages), 2), dtype="<u8")
        st[:, 0] = pages
        st[:, 1] = self.ident
        return st.view(np.uint8).reshape(len(pages), STAMP)

    def fill_tile(self, buf, start):
        """buf[:] = the tile bytes of share positions [start, start + len(buf))."""
        pos, i, n = start % TILE, 0, buf.shape[0]
        while i < n:
            k = min(TILE - pos, n - i)
            buf[i:i + k] = self.tile[pos:pos + k]
            i, pos = i + k, 0

    def stamp(self, buf, start):
        """Write the page stamps that fall in share positions [start, start + len(buf))."""
        n = buf.shape[0]
        end = start + n
        if n == 0:
            return
        f0 = -(-start // PAGE)                               # pages whose whole stamp fits
        f1 = (end - STAMP) // PAGE if end >= STAMP else -1
        if f1 >= f0:
            cnt = f1 - f0 + 1
            rows = as_strided(buf[f0 * PAGE - start:], shape=(cnt, STAMP), strides=(PAGE, 1))
            rows[...] = self.stamp_bytes(np.arange(f0, f1 + 1))
        for p in {start // PAGE, (end - 1) // PAGE}:         # stamps cut by start or end
            s0 = p * PAGE
            lo, hi = max(s0, start), min(s0 + STAMP, end)
            if lo < hi and not (s0 >= start and s0 + STAMP <= end):
                buf[lo - start:hi - start] = self.stamp_bytes([p])[0, lo - s0:hi - s0]

    def bytes_at(self, start, n):
        """The content of share positions [start, start + n) as a new array."""
        out = np.empty(n, dtype=np.uint8)
        self.fill_tile(out, start)
        self.stamp(out, start)
        return out


class Filler:
    """Content into a reused buffer: at(start, n) fills buf[:n] with share positions
    [start, start + n); the tile is copied only when its phase changes, else only the stamps."""

    def __init__(self, content, buf):
        self.c, self.buf, self.phase, self.valid = content, buf, None, 0

    def at(self, start, n):
        b = self.buf[:n]
        if start % TILE != self.phase or n > self.valid:
            self.c.fill_tile(b, start)
            self.phase, self.valid = start % TILE, n
        self.c.stamp(b, start)
        return b

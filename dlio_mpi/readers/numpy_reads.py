"""The reads Python libraries issue through Python's buffered file: numpy.load of an NPZ member
(found by running numpy and zipfile themselves), the load of an FRNN shot file (four members,
one of them pickled), an image decoder reading a file whole (image_reads, PIL's pattern
for a JPEG file; png_reads, PIL's chunk by chunk reads of a PNG file), and samples read by
seek and read from a file kept open (BufferedSamples), and a whole file read by f.read()
(whole_file_reads).

`np.load(path)[name]` opens the file through Python's buffered file object (its buffer is the
file system's st_blksize), checks the magic, reads the zip end records and central directory,
then the member's local header and the .npy data in numpy's read sizes (256 KiB requests to
zipfile, which the buffered file turns into block-rounded reads and buffer refills). Rather
than restating those libraries, this module runs them on a virtual file with the same
structure as the real one (the same members, shapes and dtype; zeros for the data) and records
every read the buffered file makes of it: the offsets and lengths are those the real call would
issue on the real file. The pattern depends only on the file's structure and st_blksize, so it
is computed once per distinct structure and kept.

Each read is recorded as Python's buffered file asks for it (offset, bytes asked for): issued
the same way, a read at the end of the file returns what the real one returned, an end-of-file
probe (Python's read-to-end asks one byte more) included, as Darshan counts it.
"""
from __future__ import annotations

import io
from functools import lru_cache

import numpy as np


class _Seekable(io.RawIOBase):
    """A position in a file of self.size bytes."""

    pos = size = 0

    def seekable(self):
        return True

    def seek(self, pos, whence=0):
        self.pos = {0: pos, 1: self.pos + pos, 2: self.size + pos}[whence]
        return self.pos

    def tell(self):
        return self.pos


class _Sink(_Seekable):
    """A write-only seekable file keeping only the writes that are not all zeros."""

    def __init__(self):
        self.pieces = []

    def writable(self):
        return True

    def write(self, b):
        mv = memoryview(b).cast("B")
        n = len(mv)
        if n and np.frombuffer(mv, np.uint8).any():
            self.pieces.append((self.pos, bytes(mv)))
        self.pos += n
        self.size = max(self.size, self.pos)
        return n


class _Virtual(_Seekable):
    """A read-only file of the sink's size and pieces (zeros elsewhere) that records reads."""

    def __init__(self, sink):
        self.size = sink.size
        self.pieces = sorted(sink.pieces)
        self.reads = []

    def readable(self):
        return True

    def readinto(self, b):
        mv = memoryview(b).cast("B")
        n = max(0, min(len(mv), self.size - self.pos))
        lo, hi = self.pos, self.pos + n
        mv[:n] = bytes(n)
        # pieces overlapping [lo, hi); later writes (zip header rewrites) win
        for start, data in self.pieces:
            end = start + len(data)
            if end <= lo or start >= hi:
                continue
            a, z = max(lo, start), min(hi, end)
            mv[a - lo:z - lo] = data[a - start:z - start]
        self.reads.append((lo, len(mv)))
        self.pos = hi
        return n


def _structure(member_bytes, dtype, compressed):
    sink = _Sink()
    dt = np.dtype(dtype)
    arrays = {f"x_{i}": np.zeros(n // dt.itemsize, dt) for i, n in enumerate(member_bytes)}
    (np.savez_compressed if compressed else np.savez)(sink, **arrays)
    return sink


@lru_cache(maxsize=64)
def npz_reads(member_bytes, dtype="uint8", blksize=4096, compressed=False):
    """(file_size, open_reads, member_reads) for an NPZ file of members x_0..x_{n-1} with
    member_bytes[i] data bytes each: open_reads is what np.load(path) reads (offsets, lengths);
    member_reads[i] what the access of member i then reads, on a freshly loaded file."""
    member_bytes = tuple(int(n) for n in member_bytes)
    sink = _structure(member_bytes, dtype, compressed)
    open_reads, members = None, []
    for i in range(len(member_bytes)):
        raw = _Virtual(sink)
        with io.BufferedReader(raw, buffer_size=blksize) as f, np.load(f) as npz:
            if open_reads is None:
                open_reads = _arrays(raw.reads)
            n_open = len(raw.reads)
            npz[f"x_{i}"]
        members.append(_arrays(raw.reads[n_open:]))
    if open_reads is None:
        open_reads = _arrays([])
    return sink.size, open_reads, tuple(members)


def stacked_arrays(sample_elems, spf, dtype="uint8"):
    """The members of a stacked NPZ file, as the DLIO benchmark writes them: x holding the
    file's samples side by side (shape (sample_elems, spf)) and y their labels (int64)."""
    return {"x": np.zeros((sample_elems, spf), np.dtype(dtype)),
            "y": np.zeros(spf, np.int64)}


@lru_cache(maxsize=256)
def stacked_reads(sample_elems, spf, dtype="uint8", blksize=4096):
    """(file_size, offsets, lengths) of np.load(path)['x'] on a stacked NPZ file (every
    sample's load reads the whole x)."""
    sink = _Sink()
    np.savez(sink, **stacked_arrays(sample_elems, spf, dtype))
    raw = _Virtual(sink)
    with io.BufferedReader(raw, buffer_size=blksize) as f, np.load(f) as npz:
        npz["x"]
    offs, lens = _arrays(raw.reads)
    return sink.size, offs, lens


SHOT_MEMBERS = ("valid", "is_disruptive", "signals_dict", "ttd")
SHOT_STEP_BYTES = 64        # ttd: one float32 per this many bytes of signals (a time step)


def shot_arrays(signals):
    """The members of an FRNN shot file as plasma-python's Shot.save writes them (np.savez):
    valid and is_disruptive (0-d bools), signals_dict (a dict of the shot's signal arrays,
    here one uint8 array holding the sample's bytes, stored by numpy as a pickled 0-d object
    array) and ttd (the time to disruption, one float32 per time step). The pickle's size
    depends on the array's length only, so zeros give the real file's structure."""
    holder = np.empty((), dtype=object)
    holder[()] = {"signals": signals}
    return {"valid": np.array(True), "is_disruptive": np.array(False),
            "signals_dict": holder,
            "ttd": np.zeros(max(1, len(signals) // SHOT_STEP_BYTES), np.float32)}


@lru_cache(maxsize=4096)
def shot_reads(sample_bytes, blksize=4096):
    """(file_size, offsets, lengths) of loading a shot file as plasma-python does:
    np.load(path, allow_pickle=True), then each of its four members in turn."""
    sink = _Sink()
    np.savez(sink, **shot_arrays(np.zeros(int(sample_bytes), np.uint8)))
    raw = _Virtual(sink)
    with io.BufferedReader(raw, buffer_size=blksize) as f, \
            np.load(f, allow_pickle=True) as npz:
        for name in SHOT_MEMBERS:
            npz[name]
    offs, lens = _arrays(raw.reads)
    return sink.size, offs, lens


@lru_cache(maxsize=4096)
def image_reads(file_size, blksize=4096, request=65536, header=16):
    """(offsets, lengths) an image decoder (PIL) issues for a whole file of file_size bytes
    through Python's buffered file of blksize: the header's few bytes (a buffer fill), back
    to the start, then the file in requests of `request` bytes until one comes back short."""
    sink = _Sink()
    sink.size = int(file_size)       # zeros throughout: only the reads' places matter
    raw = _Virtual(sink)
    with io.BufferedReader(raw, buffer_size=blksize) as f:
        f.read(header)
        f.seek(0)
        while len(f.read(request)) == request:
            pass
    return _arrays(raw.reads)


@lru_cache(maxsize=4096)
def png_reads(file_size, idat, blksize=4096, request=65536, head=33):
    """(offsets, lengths) PIL issues to load a PNG file of file_size bytes whose IDAT chunks
    hold idat bytes each (a tuple; the first chunk's header at `head`), through Python's
    buffered file of blksize: the first 16 bytes (a buffer fill), back to the start, the
    signature, IHDR and its CRC, the first IDAT's header; then each chunk's data in requests
    of at most `request` bytes (the decoder's block), its CRC and the next chunk's header (the
    last one IEND's)."""
    sink = _Sink()
    sink.size = int(file_size)
    raw = _Virtual(sink)
    with io.BufferedReader(raw, buffer_size=blksize) as f:
        f.read(16)
        f.seek(0)
        for n in (8, 8, 13, 4, 8):      # signature, IHDR header and data, CRC, IDAT header
            f.read(n)
        f.seek(head + 8)
        for size in idat:
            left = int(size)
            while left > 0:
                left -= len(f.read(min(request, left)))
            f.read(4)
            f.read(8)
    return _arrays(raw.reads)


class BufferedSamples:
    """The reads Python's buffered file (a Dataset's file opened once, default buffering)
    issues for samples read by ``f.seek(offset); f.read(length)`` from a file of file_size
    bytes, with the buffer's state kept from one sample to the next, as the open file keeps
    it: a sample shorter than the buffer fills the buffer from its offset (one read of
    blksize), a longer one is read in whole buffers and a fill for the rest, and a sample
    already in the buffer costs no read."""

    def __init__(self, file_size, blksize=4096):
        sink = _Sink()
        sink.size = int(file_size)
        self._raw = _Virtual(sink)
        self._file = io.BufferedReader(self._raw, buffer_size=blksize)

    def reads(self, offsets, lengths):
        """(offsets, lengths) of the reads that reading these samples, in order, issues."""
        self._raw.reads = []
        for o, n in zip(np.asarray(offsets).tolist(), np.asarray(lengths).tolist()):
            self._file.seek(o)
            self._file.read(n)
        return _arrays(self._raw.reads)


def pickle_reads(file_size, blksize=4096, head=11, tail=0, frame=0):
    """(offsets, lengths) pickle.load of a whole file of file_size bytes issues through Python's
    buffered file of blksize: its first `head` bytes (the protocol and the frame's header: a
    buffer fill), then the rest asked for at once, which the buffered file reads straight in
    whole buffers and ends with a buffer fill of the tail: a pickle within one frame (64 KiB).
    With ``tail``, a pickle whose large object is written outside its frames: after the
    buffer's fill, the object read straight in to ``tail`` bytes before the file's end, then
    the last frame (``tail`` bytes) through a buffer fill. With ``frame``, a pickle of many
    objects in frames of that many bytes (protocol 4's 64 KiB), each asked for in turn: a
    buffer fill where the buffer runs out, the rest of the frame straight in whole buffers."""
    if tail:
        size, blk = int(file_size), int(blksize)
        body = size - blk - int(tail)
        if body <= 0:
            return _arrays([(0, blk)])
        return _arrays([(0, blk), (blk, body), (size - int(tail), blk)])
    sink = _Sink()
    sink.size = int(file_size)
    raw = _Virtual(sink)
    with io.BufferedReader(raw, buffer_size=blksize) as f:
        first = min(int(head), int(file_size))
        f.read(first)
        at, step = first, int(frame) if frame else int(file_size)
        while at < file_size:
            n = min(step, int(file_size) - at)
            f.read(n)
            at += n
    return _arrays(raw.reads)


def whole_file_reads(file_size):
    """(offsets, lengths) Python's f.read() of a whole file issues (FileIO.readall: the file's
    size from fstat, one read asking for it and one byte more, then a read at its end, which
    returns nothing and ends the loop)."""
    return _arrays([(0, int(file_size) + 1), (int(file_size), 1)])


def _arrays(reads):
    a = np.asarray(reads, dtype=np.int64).reshape(-1, 2)
    offs, lens = a[:, 0].copy(), a[:, 1].copy()
    offs.setflags(write=False)
    lens.setflags(write=False)
    return offs, lens


def sample_reads(member_bytes, sample, dtype="uint8", blksize=4096, compressed=False):
    """(offsets, lengths) that `np.load(path)[f"x_{sample}"]` issues."""
    _, (o1, n1), members = npz_reads(tuple(member_bytes), dtype, blksize, compressed)
    o2, n2 = members[sample]
    return np.concatenate([o1, o2]), np.concatenate([n1, n2])

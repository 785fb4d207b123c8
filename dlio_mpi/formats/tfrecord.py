"""TFRecord files: each record is framed as
    uint64 length | uint32 masked CRC32C(length bytes) | payload | uint32 masked CRC32C(payload)
(little-endian), mask(c) = ((c >> 15) | (c << 17)) + 0xa282ead8 mod 2^32. The payload is the
sample's content bytes (not a serialized tf.train.Example). A reader's range for a sample is the
whole framed record; index_file walks the length fields."""
import os
import struct
from functools import lru_cache

import numpy as np

from dlio_mpi.files import safe_files
from dlio_mpi.formats import content
from dlio_mpi.formats._files import check_count, file_size, open_read
from dlio_mpi.formats.spec import FileIndex, FormatError
from dlio_mpi.formats.traits import FormatTraits

NAME = "tfrecord"
EXTENSION = ".tfrecord"
HEADER = 12          # length + its CRC
OVERHEAD = 16        # header + payload CRC
TRAITS = FormatTraits(NAME, EXTENSION, index_computed=True, index_checks_data=True,
                      records=True, streamed=True, framing=OVERHEAD)
_M32 = 0xFFFFFFFF
_LEN = struct.Struct("<Q")
_HDR = struct.Struct("<QI")
_CRC = struct.Struct("<I")


def masked_crc(data):
    import crc32c       # imported when used: it costs start-up time

    c = crc32c.crc32c(data)
    return ((((c >> 15) | (c << 17)) & _M32) + 0xA282EAD8) & _M32


@lru_cache(maxsize=1024)
def frame_header(n):
    length = _LEN.pack(n)
    return length + _CRC.pack(masked_crc(length))


def layout(spec, file_index):
    """The index of a file of spec, computed (no I/O)."""
    sizes = content.sample_sizes(spec, file_index)
    lengths = sizes + OVERHEAD
    offsets = np.cumsum(lengths) - lengths
    return FileIndex(NAME, int(lengths.sum()), sizes, offsets, lengths)


def sample_bytes(spec, file_index, sample_index):
    """The record's payload."""
    return content.sample_data(spec, file_index, sample_index)


sample_value = sample_bytes


def encoded_sample(spec, file_index, sample_index):
    """The whole framed record."""
    payload = sample_bytes(spec, file_index, sample_index)
    out = np.empty(len(payload) + OVERHEAD, dtype=np.uint8)
    out[:HEADER] = np.frombuffer(frame_header(len(payload)), dtype=np.uint8)
    out[HEADER:-4] = payload
    out[-4:] = np.frombuffer(_CRC.pack(masked_crc(payload)), dtype=np.uint8)
    return out


def write_file(path, file_index, spec):
    idx = layout(spec, file_index)
    sizes = idx.sizes
    with safe_files.create(path) as f:
        buf = None
        for lo, hi in content.batches(sizes):
            need = int(sizes[lo:hi].sum())
            if buf is None or len(buf) < need:
                buf = np.empty(need, dtype=np.uint8)
            content.fill(spec.content, file_index, np.arange(lo, hi), sizes[lo:hi], buf)
            pos = 0
            write, pack, crc = f.write, _CRC.pack, masked_crc
            for n in sizes[lo:hi].tolist():
                payload = buf[pos:pos + n]
                write(frame_header(n))
                write(payload)
                write(pack(crc(payload)))
                pos += n
    return idx


class _Window:
    """Reads small headers from a file through a window of up to `span` bytes."""

    def __init__(self, fd, span=1 << 20):
        self.fd, self.span, self.base, self.data = fd, span, 0, b""

    def get(self, offset, n):
        rel = offset - self.base
        if rel < 0 or rel + n > len(self.data):
            self.base, self.data = offset, os.pread(self.fd, max(n, self.span), offset)
            rel = 0
        return self.data[rel:rel + n]


def walk(path, check_data=False):
    """(offsets, payload sizes) of every record of the file at path, checking each length's CRC
    (and each payload's, with check_data) and that the last record ends the file."""
    size = file_size(path)
    fd = open_read(path)
    try:
        win = _Window(fd)
        offsets, sizes = [], []
        pos = 0
        while pos < size:
            if size - pos < HEADER:
                raise FormatError(path, f"{size - pos} bytes at offset {pos} cannot hold a "
                                        "record header (truncated?)")
            hdr = win.get(pos, HEADER)
            n, crc = _HDR.unpack(hdr)
            if masked_crc(hdr[:8]) != crc:
                raise FormatError(path, f"bad length CRC at offset {pos} (not a TFRecord file?)")
            end = pos + OVERHEAD + n
            if end > size:
                raise FormatError(path, f"record at offset {pos} of {n} payload bytes runs past "
                                        f"the end of the file ({size} bytes; truncated?)")
            if check_data:
                payload = os.pread(fd, n, pos + HEADER)
                (want,) = _CRC.unpack(os.pread(fd, 4, end - 4))
                if masked_crc(payload) != want:
                    raise FormatError(path, f"bad data CRC in record at offset {pos}")
            offsets.append(pos)
            sizes.append(n)
            pos = end
    finally:
        os.close(fd)
    return np.array(offsets, dtype=np.int64), np.array(sizes, dtype=np.int64)


def index_file(path, spec, file_index=None, check_data=False):
    offsets, sizes = walk(path, check_data)
    check_count(path, len(sizes), spec, "records")
    return FileIndex(NAME, file_size(path), sizes, offsets, sizes + OVERHEAD)

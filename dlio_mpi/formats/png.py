"""PNG files, one image per file, as Pillow writes a greyscale image: the signature, IHDR (8-bit
greyscale, no interlace), the zlib stream of the filtered rows (filter 0 on every row) in IDAT
chunks of IDAT_CHUNK bytes (the last one shorter) and IEND, with no other chunk. Written here
with numpy and zlib; a file's chunks follow from its size (idat_chunks), so the reads PIL makes
of it (dlio_mpi.readers.numpy_reads.png_reads) need no more than the index."""
import os
import struct
import zlib

import numpy as np

from dlio_mpi.files import safe_files
from dlio_mpi.formats import _images
from dlio_mpi.formats._files import file_size, open_read, pread_exact, write_all
from dlio_mpi.formats.spec import FileIndex, FormatError
from dlio_mpi.formats.traits import FormatTraits

NAME = "png"
EXTENSION = ".png"
TRAITS = FormatTraits(NAME, EXTENSION, opaque=True, decoder="png")

SIGNATURE = b"\x89PNG\r\n\x1a\n"
IDAT_CHUNK = 65536        # Pillow's IDAT size (ImageFile.MAXBLOCK)
LEVEL = 6                 # zlib level, Pillow's default
HEAD = len(SIGNATURE) + 12 + 13     # signature and IHDR: the first IDAT's header follows
CHUNK_FRAME = 12                    # length, type and CRC around a chunk's data


def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + \
        struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


IEND = _chunk(b"IEND", b"")


def encode(image):
    """The PNG file of a 2-D uint8 image (bytes)."""
    h, w = image.shape
    rows = np.zeros((h, w + 1), np.uint8)       # filter type 0 before each row
    rows[:, 1:] = image
    stream = zlib.compress(rows.tobytes(), LEVEL)
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)
    idat = b"".join(_chunk(b"IDAT", stream[i:i + IDAT_CHUNK])
                    for i in range(0, max(len(stream), 1), IDAT_CHUNK))
    return SIGNATURE + _chunk(b"IHDR", ihdr) + idat + IEND


def idat_chunks(size):
    """The data sizes of the IDAT chunks of a file of this writer of `size` bytes."""
    rest = size - HEAD - CHUNK_FRAME            # less the IEND chunk
    n = 1
    while True:
        data = rest - CHUNK_FRAME * n
        if data <= n * IDAT_CHUNK:
            if data <= (n - 1) * IDAT_CHUNK or data < 1:
                raise ValueError(f"{size} bytes is no PNG file of this writer")
            return [IDAT_CHUNK] * (n - 1) + [data - (n - 1) * IDAT_CHUNK]
        n += 1


def file_bytes(side, fill=1.0):
    """The size of the file of a side x side image of the dataset's content (of that random
    share, dataset.content_fill)."""
    return len(encode(_images.noise_image(side, fill=fill)))


def image_for(size):
    """(dataset.record_length, dataset.content_fill) whose files are `size` bytes to within
    a byte a 4 KiB page of pixels: the nearest square (record_length_for) where its file is
    that near, else the square whose file is the nearest above it, its content made a little
    compressible to take the difference back (the sides' files are hundreds of bytes apart;
    Python's buffered reads of a PNG split at its exact size)."""
    side = _images.side_for_file_bytes(size, file_bytes)
    if abs(file_bytes(side) - size) <= 8 + side * side // 4096:
        return side * side, 1.0
    if file_bytes(side) < size:
        side += 1
    if file_bytes(side) == size:
        return side * side, 1.0
    lo, hi = 0.5, 1.0           # a share of random bytes whose file is size: bisected
    for _ in range(12):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if file_bytes(side, mid) < size else (lo, mid)
    fill = min((lo, hi), key=lambda f: abs(file_bytes(side, f) - size))
    if abs(file_bytes(side, fill) - size) >= abs(file_bytes(side - 1) - size):
        return (side - 1) ** 2, 1.0
    return side * side, round(fill, 4)


def record_length_for(size):
    """dataset.record_length (pixels) whose files are nearest `size` bytes."""
    return _images.side_for_file_bytes(size, file_bytes) ** 2


def _index(size, side):
    pixels = np.array([side * side], np.int64)
    return FileIndex(NAME, size, pixels, np.zeros(1, np.int64), np.array([size], np.int64),
                     whole_file=True)


def sample_bytes(spec, file_index, sample_index):
    """The image's pixels (PNG is lossless: the content itself)."""
    return _images.pixels(spec, file_index).reshape(-1)


def encoded_sample(spec, file_index, sample_index):
    return np.frombuffer(encode(_images.pixels(spec, file_index)), np.uint8)


def sample_value(spec, file_index, sample_index):
    """What numpy.asarray(PIL.Image.open(path)) gives: the (side, side) uint8 image."""
    return _images.pixels(spec, file_index)


def write_file(path, file_index, spec):
    data = encode(_images.pixels(spec, file_index))
    with safe_files.create(path) as f:
        write_all(f, np.frombuffer(data, np.uint8))
    return index_file(path, spec)


def index_file(path, spec, file_index=None):
    size = file_size(path)
    fd = open_read(path)
    try:
        head = pread_exact(fd, path, 0, HEAD)
        tail = os.pread(fd, CHUNK_FRAME, max(size - CHUNK_FRAME, 0))
    finally:
        os.close(fd)
    if head[:8] != SIGNATURE or head[12:16] != b"IHDR":
        raise FormatError(path, "not a PNG file (no signature and IHDR)")
    w, h, depth, colour = struct.unpack(">IIBB", head[16:26])
    if (depth, colour) != (8, 0) or w != h:
        raise FormatError(path, f"a {w}x{h} image of {depth}-bit colour type {colour}, expected "
                                "a square 8-bit greyscale image")
    if tail != IEND:
        raise FormatError(path, "no IEND chunk at its end (truncated?)")
    try:
        idat_chunks(size)
    except ValueError:
        raise FormatError(path, f"{size} bytes do not hold the IDAT chunks of its image "
                                "(truncated?)") from None
    return _index(size, w)

"""JPEG files, one image per file, as Pillow writes a greyscale image (baseline JFIF, its default
quality): what the DLIO benchmark's jpeg generator makes and its reader loads through PIL. The
encoder is libjpeg's (through Pillow), so a file's size is known once written; its index is
the image's size from the frame header and the file's size."""
import io
import os

import numpy as np

from dlio_mpi.files import safe_files
from dlio_mpi.formats import _images
from dlio_mpi.formats._files import file_size, open_read, write_all
from dlio_mpi.formats.spec import FileIndex, FormatError
from dlio_mpi.formats.traits import FormatTraits

NAME = "jpeg"
EXTENSION = ".jpeg"
TRAITS = FormatTraits(NAME, EXTENSION, opaque=True, decoder="jpeg")

# the frame headers that give the image's size (baseline, extended, progressive, lossless)
FRAMES = {0xC0, 0xC1, 0xC2, 0xC3}
HEADER_READ = 65536     # the markers before the frame header fit in this much


def _pil():
    try:
        from PIL import Image
    except ImportError:
        raise FormatError("jpeg", "writing JPEG files needs Pillow (pip install pillow)") \
            from None
    return Image


def encode(image):
    """The JPEG file of a 2-D uint8 image (bytes)."""
    buf = io.BytesIO()
    _pil().fromarray(np.ascontiguousarray(image), "L").save(buf, format="JPEG")
    return buf.getvalue()


def decode(data):
    """The 2-D uint8 image of a JPEG file's bytes, as numpy.asarray(PIL.Image.open) gives it."""
    return np.asarray(_pil().open(io.BytesIO(bytes(data))))


def file_bytes(side):
    """The size of the file of a side x side image of the dataset's content."""
    return len(encode(_images.noise_image(side)))


def record_length_for(size):
    """dataset.record_length (pixels) whose files are nearest `size` bytes."""
    return _images.side_for_file_bytes(size, file_bytes) ** 2


def frame_size(head, path):
    """(height, width) from the frame header among the markers at the start of a JPEG file."""
    if head[:2] != b"\xff\xd8":
        raise FormatError(path, "not a JPEG file (no start-of-image marker)")
    pos = 2
    while pos + 4 <= len(head):
        if head[pos] != 0xFF:
            raise FormatError(path, f"no JPEG marker at offset {pos}")
        marker = head[pos + 1]
        length = int.from_bytes(head[pos + 2:pos + 4], "big")
        if marker in FRAMES and pos + 9 <= len(head):
            return (int.from_bytes(head[pos + 5:pos + 7], "big"),
                    int.from_bytes(head[pos + 7:pos + 9], "big"))
        pos += 2 + length
    raise FormatError(path, f"no frame header in its first {len(head)} bytes (truncated?)")


def sample_bytes(spec, file_index, sample_index):
    """The decoded image's pixels (JPEG is lossy: not the content written)."""
    return decode(encoded_sample(spec, file_index, sample_index)).reshape(-1)


def encoded_sample(spec, file_index, sample_index):
    return np.frombuffer(encode(_images.pixels(spec, file_index)), np.uint8)


def sample_value(spec, file_index, sample_index):
    """What numpy.asarray(PIL.Image.open(path)) gives: the (side, side) uint8 image."""
    return decode(encoded_sample(spec, file_index, sample_index))


def write_file(path, file_index, spec):
    data = encoded_sample(spec, file_index, 0)
    with safe_files.create(path) as f:
        write_all(f, data)
    return index_file(path, spec)


def index_file(path, spec, file_index=None):
    size = file_size(path)
    fd = open_read(path)
    try:
        head = os.pread(fd, HEADER_READ, 0)
        tail = os.pread(fd, 2, size - 2) if size >= 2 else b""
    finally:
        os.close(fd)
    h, w = frame_size(head, path)
    if tail != b"\xff\xd9":
        raise FormatError(path, "no end-of-image marker at its end (truncated?)")
    if h != w:
        raise FormatError(path, f"a {w}x{h} image, expected a square one")
    return FileIndex(NAME, size, np.array([h * w], np.int64), np.zeros(1, np.int64),
                     np.array([size], np.int64), whole_file=True)

"""The DLIO benchmark's indexed binary files: a .bin of the samples' bytes one after another,
and beside it two index files named as the .bin with `.off.idx` and `.sz.idx` appended: the
samples' byte offsets in the .bin and their sizes in bytes, each an array of unsigned 64-bit
little-endian integers, one per sample (DLIO's generator packs them with struct 'Q' or writes
numpy uint64 arrays; its readers take them as int64).

DLIO's indexed_binary reader opens each index file of a file it will read, reads it whole into
an int64 array (one read: the file and no more) and closes it, once when the reader starts;
it then opens the .bin, seeks to each sample's offset and reads its size. index_file reads
the index files the same way, through opener(path, companion) when the reads are to be in the
op log (companion 1 the offsets, 2 the sizes). mmap_indexed_binary (DLIO's
IndexedBinaryMMapReader) maps the index files with numpy.memmap, which reads nothing, and
reads the samples out of a mapping of the .bin (io.interface=mmap unless given)."""

import numpy as np

from dlio_mpi.files import safe_files
from dlio_mpi.formats import content, raw
from dlio_mpi.formats._files import OsFile, file_size
from dlio_mpi.formats.spec import FileIndex, FormatError
from dlio_mpi.formats.traits import FormatTraits

NAME = "indexed_binary"
MMAP_NAME = "mmap_indexed_binary"
EXTENSION = ".bin"
OFFSETS_SUFFIX = ".off.idx"
SIZES_SUFFIX = ".sz.idx"
# the companions' names replace the extension: NAME.bin -> NAME.bin.off.idx, NAME.bin.sz.idx
COMPANIONS = (EXTENSION + OFFSETS_SUFFIX, EXTENSION + SIZES_SUFFIX)
TRAITS = FormatTraits(NAME, EXTENSION, opaque=True, companions=COMPANIONS, index_logged=True)
MMAP_TRAITS = FormatTraits(MMAP_NAME, EXTENSION, opaque=True, companions=COMPANIONS,
                           mapped=True)

ENTRY = np.dtype("<u8")


def index_paths(path):
    """(offsets file, sizes file) beside the .bin at path (a final or a temporary name: what
    follows the .bin's extension stays at the end)."""
    i = path.rfind(EXTENSION)
    if i < 0:
        return path + OFFSETS_SUFFIX, path + SIZES_SUFFIX
    j = i + len(EXTENSION)
    return tuple(path[:i] + ext + path[j:] for ext in COMPANIONS)


def index_bytes(sizes_bytes):
    """(offsets file, sizes file) contents for samples of sizes_bytes stored back to back,
    as DLIO's generator writes them."""
    sizes = np.asarray(sizes_bytes, dtype=np.int64)
    offsets = np.cumsum(sizes) - sizes
    return offsets.astype(ENTRY).tobytes(), sizes.astype(ENTRY).tobytes()


def sample_bytes(spec, file_index, sample_index):
    return content.sample_data(spec, file_index, sample_index)


encoded_sample = sample_bytes
sample_value = sample_bytes


def write_file(path, file_index, spec):
    """The .bin (the samples' bytes, as raw records) and its two index files."""
    idx = raw.write_file(path, file_index, spec)
    for index_path, data in zip(index_paths(path), index_bytes(idx.sizes)):
        with safe_files.create(index_path) as f:
            f.write(data)
    return FileIndex(spec.format, int(idx.file_size), idx.sizes, idx.offsets, idx.sizes)


def _read_whole(index_path, opener, companion):
    """An index file's bytes, in one read of its whole size after an open."""
    try:
        f = opener(index_path, companion) if opener else OsFile(index_path)
    except OSError as e:
        raise FormatError(index_path, f"cannot open: {e.strerror or e}") from None
    try:
        n = f.size()
        data = f.pread(n, 0) if n else b""
    finally:
        f.close()
    return data


def _mapped(index_path):
    try:
        if file_size(index_path) == 0:
            return b""
        return memoryview(np.memmap(index_path, mode="r", order="C")).tobytes()
    except OSError as e:
        raise FormatError(index_path, f"cannot open: {e.strerror or e}") from None


def index_file(path, spec, file_index=None, opener=None):
    """The index of the .bin at path from its two index files (read whole, or mapped for
    mmap_indexed_binary); FormatError naming the file for one of another sample count or
    samples past the .bin's end."""
    n = spec.samples_per_file
    arrays = []
    for k, index_path in enumerate(index_paths(path), start=1):
        data = _mapped(index_path) if spec.format == MMAP_NAME \
            else _read_whole(index_path, opener, k)
        if len(data) != n * ENTRY.itemsize:
            raise FormatError(index_path, f"{len(data)} bytes, expected {n * ENTRY.itemsize} "
                                          f"bytes: {n} samples (samples_per_file) of "
                                          f"{ENTRY.itemsize}-byte entries")
        arrays.append(np.frombuffer(data, dtype="<i8").astype(np.int64))
    offsets, sizes = arrays
    bin_size = file_size(path)
    bad = (offsets < 0) | (sizes < 0) | (offsets + sizes > bin_size)
    if bad.any():
        i = int(np.argmax(bad))
        raise FormatError(path, f"{bin_size} bytes, but sample {i} of its index lies at "
                                f"{int(offsets[i])}, {int(sizes[i])} bytes (truncated?)")
    return FileIndex(spec.format, int(bin_size), sizes, offsets, sizes)

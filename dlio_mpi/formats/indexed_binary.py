"""Megatron's indexed dataset: a .bin file of the samples' tokens one after another, and beside
it a .idx file that says where each lies, as Megatron-DeepSpeed's MMapIndexedDataset builder
writes them. The .idx is a header (the magic b"MMIDIDX\\x00\\x00", version 1 as <Q, the token
dtype's code as <B, the sample count and the document count as <Q), then the samples' sizes
in tokens (int32), their byte offsets in the .bin (int64), and the document index (int64: the
first sample of each document and the end, a document per sample here).

Megatron's reader takes the header through a buffered file, maps the .idx with numpy.memmap
and views the three arrays in it; a sample is then np.frombuffer of the .bin's mapping at its
pointer, for its size in tokens. index_file reads the .idx the same way. dataset.format
mmap_indexed_binary reads the samples out of the .bin's memory mapping (io.interface=mmap
unless given), indexed_binary by a read of each sample's byte range (Megatron's IndexedDataset
seeks and reads into a buffer)."""
import struct

import numpy as np

from dlio_mpi.files import safe_files
from dlio_mpi.formats import content, raw
from dlio_mpi.formats._files import file_size
from dlio_mpi.formats.spec import FileIndex, FormatError
from dlio_mpi.formats.traits import FormatTraits

NAME = "indexed_binary"
MMAP_NAME = "mmap_indexed_binary"
EXTENSION = ".bin"
INDEX_EXTENSION = ".idx"
TRAITS = FormatTraits(NAME, EXTENSION, opaque=True, companions=(INDEX_EXTENSION,))
MMAP_TRAITS = FormatTraits(MMAP_NAME, EXTENSION, opaque=True, companions=(INDEX_EXTENSION,),
                           mapped=True)

MAGIC = b"MMIDIDX\x00\x00"
VERSION = 1
# Megatron's dtype codes; samples here are bytes
DTYPE_CODES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64,
               7: np.float64, 8: np.uint16}
TOKEN_DTYPE = np.uint8
TOKEN_CODE = 1
HEADER = struct.Struct("<9sQBQQ")


def index_path(path):
    """The .idx beside the .bin at path (a final or a temporary name: the .bin's last
    extension is replaced, whatever follows it)."""
    i = path.rfind(EXTENSION)
    if i < 0:
        return path + INDEX_EXTENSION
    return path[:i] + INDEX_EXTENSION + path[i + len(EXTENSION):]


def _file_index(spec, sizes_bytes, pointers, bin_size):
    return FileIndex(spec.format, int(bin_size), sizes_bytes, pointers, sizes_bytes)


def index_bytes(sizes_bytes):
    """The .idx of samples of sizes_bytes (one document each), as the builder writes it."""
    sizes = np.asarray(sizes_bytes, dtype=np.int64)
    tokens = sizes // np.dtype(TOKEN_DTYPE).itemsize
    pointers = np.cumsum(sizes) - sizes
    doc_idx = np.arange(len(sizes) + 1, dtype=np.int64)
    return (HEADER.pack(MAGIC, VERSION, TOKEN_CODE, len(sizes), len(doc_idx))
            + tokens.astype("<i4").tobytes() + pointers.astype("<i8").tobytes()
            + doc_idx.astype("<i8").tobytes())


def sample_bytes(spec, file_index, sample_index):
    return content.sample_data(spec, file_index, sample_index)


encoded_sample = sample_bytes
sample_value = sample_bytes


def write_file(path, file_index, spec):
    """The .bin (the samples' bytes, as raw records) and its .idx."""
    idx = raw.write_file(path, file_index, spec)
    with safe_files.create(index_path(path)) as f:
        f.write(index_bytes(idx.sizes))
    return _file_index(spec, idx.sizes, idx.offsets, idx.file_size)


def read_index(idx_path):
    """(sizes in tokens, pointers, document index, dtype) of a .idx, read as Megatron's
    index reader does: the header through a buffered file, the arrays viewed in a
    numpy.memmap of the file. FormatError for a file that is not one."""
    try:
        with open(idx_path, "rb") as stream:
            head = stream.read(HEADER.size)
    except OSError as e:
        raise FormatError(idx_path, f"cannot open: {e.strerror or e}") from None
    if len(head) < HEADER.size:
        raise FormatError(idx_path, f"{len(head)} bytes, shorter than the "
                                    f"{HEADER.size}-byte header of a Megatron index")
    magic, version, code, count, docs = HEADER.unpack(head)
    if magic != MAGIC:
        raise FormatError(idx_path, f"starts with {magic!r}, not Megatron's index magic "
                                    f"{MAGIC!r}")
    if version != VERSION:
        raise FormatError(idx_path, f"index version {version}, expected {VERSION}")
    if code not in DTYPE_CODES:
        raise FormatError(idx_path, f"unknown dtype code {code}")
    want = HEADER.size + count * 12 + docs * 8
    have = file_size(idx_path)
    if have != want:
        raise FormatError(idx_path, f"{have} bytes, expected {want} for {count} samples and "
                                    f"{docs} document entries")
    mapped = np.memmap(idx_path, mode="r", order="C")
    buf = memoryview(mapped)
    sizes = np.frombuffer(buf, dtype=np.int32, count=count, offset=HEADER.size)
    pointers = np.frombuffer(buf, dtype=np.int64, count=count,
                             offset=HEADER.size + sizes.nbytes)
    doc_idx = np.frombuffer(buf, dtype=np.int64, count=docs,
                            offset=HEADER.size + sizes.nbytes + pointers.nbytes)
    # copied out, so that the mapping closes when this returns
    return (sizes.astype(np.int64), pointers.copy(), doc_idx.copy(),
            np.dtype(DTYPE_CODES[code]))


def index_file(path, spec, file_index=None):
    sizes, pointers, _, dtype = read_index(index_path(path))
    idx_path = index_path(path)
    if len(sizes) != spec.samples_per_file:
        raise FormatError(idx_path, f"{len(sizes)} samples, expected {spec.samples_per_file} "
                                    "(samples_per_file)")
    nbytes = sizes * dtype.itemsize
    bin_size = file_size(path)
    if len(sizes) and ((sizes < 0).any() or (pointers < 0).any()
                       or int((pointers + nbytes).max()) > bin_size):
        bad = int(np.argmax((sizes < 0) | (pointers < 0) | (pointers + nbytes > bin_size)))
        raise FormatError(path, f"{bin_size} bytes, but sample {bad} of its index lies at "
                                f"{int(pointers[bad])}, {int(nbytes[bad])} bytes (truncated?)")
    return _file_index(spec, nbytes, pointers, bin_size)

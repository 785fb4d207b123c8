"""CSV files: one line of comma-separated numbers per sample. Every field is a three-digit
integer (100..355) followed by ',' (or the line's '\n'), so a sample of record_length bytes has
record_length / 4 fields. The application (CANDLE) reads the whole file at start; a sample's
range is its line; index_file finds the line ends."""
import numpy as np

from dlio_mpi.files import safe_files
from dlio_mpi.formats import content
from dlio_mpi.formats._files import check_count, file_size, write_all
from dlio_mpi.formats.spec import FileIndex, FormatError
from dlio_mpi.formats.traits import FormatTraits

NAME = "csv"
EXTENSION = ".csv"
FIELD = 4
TRAITS = FormatTraits(NAME, EXTENSION, index_computed=True, aligned=False, streamed=True,
                      field_bytes=FIELD)
_TEXT = np.zeros(256, dtype=bool)
_TEXT[np.frombuffer(b"0123456789,.-+eE \r\n", dtype=np.uint8)] = True


# the four bytes "ddd," of the field of each pattern byte, as one little-endian word
_FIELDS = np.frombuffer("".join(f"{100 + b}," for b in range(256)).encode(), dtype="<u4")


def _encode(pattern, fields):
    """Text of lines of fields[i] values each, from their pattern bytes (one per value)."""
    text = _FIELDS[pattern].view(np.uint8)
    text[np.cumsum(fields) * FIELD - 1] = ord("\n")
    return text


def layout(spec, file_index):
    """The index of a file of spec, computed (no I/O)."""
    sizes = content.sample_sizes(spec, file_index)
    offsets = np.cumsum(sizes) - sizes
    return FileIndex(NAME, int(sizes.sum()), sizes, offsets, sizes, whole_file=True)


def sample_value(spec, file_index, sample_index):
    """The numbers of the sample's line (int64)."""
    k = int(content.sample_sizes(spec, file_index)[sample_index]) // FIELD
    return content.sample_content(spec.seed, file_index, sample_index, k).astype(np.int64) + 100


def sample_bytes(spec, file_index, sample_index):
    """The sample's line of text, '\n' included."""
    k = int(content.sample_sizes(spec, file_index)[sample_index]) // FIELD
    return _encode(content.sample_content(spec.seed, file_index, sample_index, k), [k])


encoded_sample = sample_bytes


def write_file(path, file_index, spec):
    idx = layout(spec, file_index)
    fields = idx.sizes // FIELD
    with safe_files.create(path) as f:
        for lo, hi in content.batches(idx.sizes, 32 << 20):
            pattern = np.empty(int(fields[lo:hi].sum()), dtype=np.uint8)
            content.fill(spec.content, file_index, np.arange(lo, hi), fields[lo:hi], pattern)
            write_all(f, _encode(pattern, fields[lo:hi]))
    return idx


def index_file(path, spec, file_index=None, chunk=64 << 20):
    size = file_size(path)
    ends = []
    with open(path, "rb") as f:
        base = 0
        while True:
            data = np.frombuffer(f.read(chunk), dtype=np.uint8)
            if not len(data):
                break
            odd = (data - 48) >= 10         # not a digit, nor the usual ',' and '\n'
            odd &= data != 44
            odd &= data != 10
            if odd.any() and not _TEXT[data[odd]].all():
                bad = int(np.argmin(_TEXT[data]))
                raise FormatError(path, f"byte 0x{data[bad]:02x} at offset {base + bad} is not "
                                        "CSV number text (not a CSV file?)")
            ends.append(np.flatnonzero(data == 10) + base)
            base += len(data)
    if base != size:
        raise FormatError(path, f"read {base} bytes, but the file has {size} (changing?)")
    ends = np.concatenate(ends) if ends else np.zeros(0, dtype=np.int64)
    if size and (not len(ends) or ends[-1] != size - 1):
        last = int(ends[-1]) + 1 if len(ends) else 0
        raise FormatError(path, f"ends inside a line starting at offset {last} (truncated?)")
    check_count(path, len(ends), spec, "lines")
    starts = np.concatenate([[0], ends[:-1] + 1]).astype(np.int64)
    sizes = ends + 1 - starts
    return FileIndex(NAME, size, sizes, starts, sizes, whole_file=True)

"""NPY files, one array per file as numpy.save writes it: a 1-D array for one sample per file,
a 2-D array of one row per sample otherwise (rows share one size, drawn per file). A sample's
range is its row of the array's data; index_file reads the header only."""
import numpy as np

from dlio_mpi.files import safe_files
from dlio_mpi.formats import content
from dlio_mpi.formats._files import check_count, file_size, npy_header, parse_npy_header
from dlio_mpi.formats.spec import FileIndex, FormatError
from dlio_mpi.formats.traits import FormatTraits

NAME = "npy"
EXTENSION = ".npy"
TRAITS = FormatTraits(NAME, EXTENSION, index_computed=True, numpy_load=True,
                      numpy_fromfile=True)


def _shape(spec, row_elems):
    n = spec.samples_per_file
    return (row_elems,) if n == 1 else (n, row_elems)


def _index(spec, header_len, row_bytes, size):
    n = spec.samples_per_file
    sizes = np.full(n, row_bytes, dtype=np.int64)
    offsets = header_len + row_bytes * np.arange(n, dtype=np.int64)
    return FileIndex(NAME, size, sizes, offsets, sizes)


def layout(spec, file_index):
    """The index of a file of spec, computed (no I/O)."""
    row_bytes = int(content.sample_sizes(spec, file_index)[0])
    hdr = npy_header(spec.dtype, _shape(spec, row_bytes // spec.itemsize))
    return _index(spec, len(hdr), row_bytes, len(hdr) + row_bytes * spec.samples_per_file)


def sample_bytes(spec, file_index, sample_index):
    """The row's data bytes."""
    return content.sample_data(spec, file_index, sample_index)


encoded_sample = sample_bytes


def sample_value(spec, file_index, sample_index):
    """The sample as numpy.load gives it: a 1-D array of spec.dtype."""
    return sample_bytes(spec, file_index, sample_index).view(np.dtype(spec.dtype))


def write_file(path, file_index, spec):
    sizes = content.sample_sizes(spec, file_index)
    n, row_bytes = spec.samples_per_file, int(sizes[0])
    data = np.empty(n * row_bytes, dtype=np.uint8)
    content.fill(spec.content, file_index, np.arange(n), sizes, data)
    arr = data.view(np.dtype(spec.dtype)).reshape(_shape(spec, row_bytes // spec.itemsize))
    with safe_files.create(path) as f:
        np.save(f, arr, allow_pickle=False)
    return index_file(path, spec)


def index_file(path, spec, file_index=None):
    size = file_size(path)
    with open(path, "rb") as f:
        dtype, shape, fortran, hlen = parse_npy_header(f, path)
    want = np.dtype(spec.dtype)
    if dtype != want or fortran:
        raise FormatError(path, f"array of {dtype}{' (Fortran order)' if fortran else ''}, "
                                f"expected C-ordered {want}")
    n = spec.samples_per_file
    if len(shape) != (1 if n == 1 else 2):
        raise FormatError(path, f"array of shape {shape}, expected "
                                f"{'1-D' if n == 1 else f'({n}, row elements)'}")
    check_count(path, 1 if n == 1 else shape[0], spec, "rows")
    row_bytes = shape[-1] * dtype.itemsize
    if row_bytes < 1:
        raise FormatError(path, f"array of shape {shape} holds no data")
    expect = hlen + n * row_bytes
    if size != expect:
        raise FormatError(path, f"{size} bytes, expected {expect} for an array of shape {shape}"
                                + (" (truncated?)" if size < expect else ""))
    return _index(spec, hlen, row_bytes, size)

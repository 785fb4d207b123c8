"""Raw records: a file is its samples' bytes one after another, nothing else. A sample's place is
computed from the sizes the spec draws, so indexing reads no data; variable sizes need the file
index."""
import numpy as np

from dlio_mpi.files import safe_files
from dlio_mpi.formats import content
from dlio_mpi.formats._files import file_size, write_all
from dlio_mpi.formats.spec import FileIndex, FormatError
from dlio_mpi.formats.traits import FormatTraits

NAME = "raw"
EXTENSION = ".bin"
TRAITS = FormatTraits(NAME, EXTENSION, written_first=True, index_computed=True, opaque=True)


def layout(spec, file_index=None):
    """The index of a file of spec, computed (no I/O)."""
    if file_index is None:
        if spec.record_length_stdev:
            raise ValueError("raw: variable record sizes need the file index to locate samples")
        file_index = 0
    sizes = content.sample_sizes(spec, file_index)
    offsets = np.cumsum(sizes) - sizes
    return FileIndex(NAME, int(sizes.sum()), sizes, offsets, sizes)


def sample_bytes(spec, file_index, sample_index):
    return content.sample_data(spec, file_index, sample_index)


encoded_sample = sample_bytes
sample_value = sample_bytes


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
            write_all(f, buf[:need])
    return idx


def index_file(path, spec, file_index=None):
    idx = layout(spec, file_index)
    size = file_size(path)
    if size != idx.file_size:
        raise FormatError(path, f"{size} bytes, expected {idx.file_size} for "
                                f"{spec.samples_per_file} raw records"
                                + (" (truncated?)" if size < idx.file_size else ""))
    return idx

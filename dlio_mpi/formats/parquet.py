"""Apache Parquet files as pyarrow writes them (MLPerf Storage's dlrm workload): one binary
column `data`, a row per sample holding its bytes, in row groups of dataset.parquet_row_group_size
rows (0: pyarrow's default), uncompressed, plain-encoded, without statistics, so that a file's
layout depends on its samples' sizes only.

pyarrow reads a file as ParquetFile(path) then read_row_group(i, columns=["data"]) (the DLIO
benchmark's parquet reader, which keeps the last row group it read): the footer first, one
read of the file's last FOOTER_READ bytes (the whole file when smaller), and a second read of
the rest of the metadata when it is larger than that; then, for each row group, one read of its
column chunk, at the chunk's offset for its compressed size (measured with strace on pyarrow
26: tests/test_parquet.py compares the two)."""
import numpy as np

from dlio_mpi.files import safe_files
from dlio_mpi.formats import content
from dlio_mpi.formats._files import file_size
from dlio_mpi.formats.spec import FileIndex, FormatError
from dlio_mpi.formats.traits import FormatTraits

NAME = "parquet"
EXTENSION = ".parquet"
TRAITS = FormatTraits(NAME, EXTENSION, aligned=False, access="parquet", row_groups=True)
COLUMN = "data"
# pyarrow's first read of a file's end (parquet-cpp's default footer read size)
FOOTER_READ = 64 << 10
# the footer's fixed tail: the metadata's length (<I) and the magic "PAR1"
FOOTER_TAIL = 8
# pyarrow's rows per row group where a file names none
DEFAULT_ROW_GROUP = 1 << 20


def rows_per_group(spec):
    return spec.row_group_rows or DEFAULT_ROW_GROUP


def sample_bytes(spec, file_index, sample_index):
    return content.sample_data(spec, file_index, sample_index)


encoded_sample = sample_bytes
sample_value = sample_bytes


def _table(spec, file_index):
    import pyarrow as pa
    sizes = content.sample_sizes(spec, file_index)
    buf = np.empty(int(sizes.sum()), np.uint8)
    content.fill(spec.content, file_index, np.arange(len(sizes)), sizes, buf)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    column = pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(sizes),
                                              [None, pa.py_buffer(offsets),
                                               pa.py_buffer(buf)])
    return pa.table({COLUMN: column.cast(pa.binary())})


def write_file(path, file_index, spec):
    """One file of spec's samples, written with pyarrow; returns its index."""
    import pyarrow.parquet as pq
    table = _table(spec, file_index)
    with safe_files.create(path) as f:
        pq.write_table(table, f, row_group_size=rows_per_group(spec), compression="none",
                       use_dictionary=False, write_statistics=False)
    return index_file(path, spec, file_index)


def index_file(path, spec, file_index=None):
    """The index from the file's footer (pyarrow's metadata): a sample's range is its row
    group's column chunk, which pyarrow reads whole."""
    import pyarrow.lib
    import pyarrow.parquet as pq
    try:
        meta = pq.ParquetFile(path).metadata
    except (OSError, pyarrow.lib.ArrowException) as e:
        raise FormatError(path, f"not a Parquet file pyarrow reads ({str(e).splitlines()[0]})") \
            from None
    if meta.num_rows != spec.samples_per_file:
        raise FormatError(path, f"{meta.num_rows} rows, expected {spec.samples_per_file} "
                                "(samples_per_file)")
    if meta.num_columns != 1 or meta.schema.column(0).name != COLUMN:
        names = [meta.schema.column(i).name for i in range(meta.num_columns)]
        raise FormatError(path, f"columns {names}, expected [{COLUMN!r}]")
    offs, lens = [], []
    for g in range(meta.num_row_groups):
        rg = meta.row_group(g)
        start, length = chunk_range(rg.column(0))
        offs += [start] * rg.num_rows
        lens += [length] * rg.num_rows
    sizes = content.sample_sizes(spec, file_index or 0) if file_index is not None else \
        np.asarray(lens, np.int64)
    return FileIndex(NAME, file_size(path), sizes, offs, lens, exact=False)


def chunk_range(column):
    """(offset, bytes) of a column chunk as pyarrow reads it: from its dictionary page, if
    any, else its first data page, for its compressed size."""
    start = column.data_page_offset
    if column.has_dictionary_page and column.dictionary_page_offset is not None:
        start = min(start, column.dictionary_page_offset)
    return int(start), int(column.total_compressed_size)


def footer_reads(size, metadata_bytes):
    """(offsets, lengths) of pyarrow's reads of a file's footer: its last FOOTER_READ bytes,
    then the start of the metadata when the first read did not hold it all."""
    first = min(size, FOOTER_READ)
    offs, lens = [size - first], [first]
    whole = metadata_bytes + FOOTER_TAIL
    if whole > first:
        offs.append(size - whole)
        lens.append(whole - first)
    return offs, lens


def batch_reads(idx, metadata_bytes, local, opened=True):
    """(offsets, lengths) of a batch's samples `local` of one file, as the DLIO benchmark's
    parquet reader makes pyarrow read them: the footer (the file opened; not when ``opened``
    is False, a ParquetFile kept from the batch before), then each row group's column chunk
    when a sample lies in another row group than the one before."""
    offs, lens = footer_reads(idx.file_size, metadata_bytes) if opened else ([], [])
    last = None
    for s in np.asarray(local, np.int64).tolist():
        here = int(idx.offsets[s])
        if here != last:
            offs.append(here)
            lens.append(int(idx.lengths[s]))
            last = here
    return np.asarray(offs, np.int64), np.asarray(lens, np.int64)


def metadata_bytes(path):
    """The length of a file's footer metadata (the <I before its closing magic)."""
    with open(path, "rb") as f:
        f.seek(-FOOTER_TAIL, 2)
        tail = f.read(FOOTER_TAIL)
    if len(tail) != FOOTER_TAIL or tail[4:] != b"PAR1":
        raise FormatError(path, "does not end with Parquet's magic PAR1")
    return int.from_bytes(tail[:4], "little")

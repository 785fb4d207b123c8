"""Apache Parquet files as pyarrow writes them (MLPerf Storage's dlrm workload): one binary
column `data`, a row per sample holding its bytes, in row groups of dataset.parquet_row_group_size
rows (0: pyarrow's default), uncompressed, plain-encoded, without statistics, so that a file's
layout depends on its samples' sizes only.

pyarrow reads a file as ParquetFile(path) then read_row_group(i, columns=["data"]) (the DLIO
benchmark's parquet reader, which keeps the last row group it read): the footer first, one
read of the file's last FOOTER_READ bytes (the whole file when smaller), and a second read of
the rest of the metadata when it is larger than that; then, for each row group, one read of its
column chunk, at the chunk's offset for its compressed size (measured with strace on pyarrow
26: tests/test_parquet.py compares the two).

A table of several columns (dataset.parquet_columns: a row's columns, each a binary value
holding its share of the sample's bytes) is read in part as a loader projects it
(reader.parquet_columns_read): pyarrow pre-buffers the chosen column chunks of a row group,
coalescing chunks less than COALESCE_HOLE bytes apart into one read of at most COALESCE_RANGE
bytes (parquet-cpp's read cache defaults, measured with strace on pyarrow 26)."""
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
# pyarrow's pre-buffering: chunks at most this far apart are read in one call ...
COALESCE_HOLE = 8 << 10
# ... of at most this many bytes
COALESCE_RANGE = 32 << 20
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


def column_names(spec):
    """The columns of a row: `data`, then data_1, data_2, ... (dataset.parquet_columns)."""
    return [COLUMN] + [f"{COLUMN}_{i}" for i in range(1, len(spec.columns))]


def column_bounds(spec, sizes):
    """Per sample, where each column's share of its bytes begins and ends: an array of
    (samples, columns + 1) offsets into the sample (one column: 0 and the sample's size)."""
    sizes = np.asarray(sizes, np.int64)
    shares = np.asarray(spec.columns or (1.0,), np.float64)
    cut = np.concatenate([[0.0], np.cumsum(shares) / shares.sum()])
    bounds = np.rint(np.outer(sizes, cut)).astype(np.int64)
    bounds[:, -1] = sizes
    return bounds


def _table(spec, file_index):
    import pyarrow as pa
    sizes = content.sample_sizes(spec, file_index)
    buf = np.empty(int(sizes.sum()), np.uint8)
    content.fill(spec.content, file_index, np.arange(len(sizes)), sizes, buf)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    bounds = column_bounds(spec, sizes)
    columns = {}
    for c, name in enumerate(column_names(spec)):
        lo, hi = starts + bounds[:, c], starts + bounds[:, c + 1]
        lens = hi - lo
        data = np.concatenate([buf[a:b] for a, b in zip(lo.tolist(), hi.tolist())]) \
            if len(spec.columns) > 1 else buf
        offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        column = pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(sizes),
                                                  [None, pa.py_buffer(offsets),
                                                   pa.py_buffer(data)])
        columns[name] = column.cast(pa.binary())
    return pa.table(columns)


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
    group's column chunk, which pyarrow reads whole (of several columns: the row group's
    chunks, first to last)."""
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
    names = [meta.schema.column(i).name for i in range(meta.num_columns)]
    if names != column_names(spec):
        raise FormatError(path, f"columns {names}, expected {column_names(spec)}")
    offs, lens, chunks = [], [], []
    for g in range(meta.num_row_groups):
        rg = meta.row_group(g)
        chunks.append([chunk_range(rg.column(c)) for c in range(meta.num_columns)])
        start, end = chunks[-1][0][0], sum(chunks[-1][-1])
        offs += [start] * rg.num_rows
        lens += [end - start] * rg.num_rows
    sizes = content.sample_sizes(spec, file_index or 0) if file_index is not None else \
        np.asarray(lens, np.int64)
    return FileIndex(NAME, file_size(path), sizes, offs, lens, exact=False,
                     chunks=np.asarray(chunks, np.int64).reshape(len(chunks), -1, 2))


def chunk_range(column):
    """(offset, bytes) of a column chunk as pyarrow reads it: from its dictionary page, if
    any, else its first data page, for its compressed size."""
    start = column.data_page_offset
    if column.has_dictionary_page and column.dictionary_page_offset is not None:
        start = min(start, column.dictionary_page_offset)
    return int(start), int(column.total_compressed_size)


def chosen_chunks(idx, columns_read=()):
    """Per row group of a file (its FileIndex), the (offset, length) of the chosen columns'
    chunks (positions; empty: all)."""
    chosen = sorted(columns_read) if columns_read else range(idx.chunks.shape[1])
    return [[tuple(group[c]) for c in chosen] for group in idx.chunks.tolist()]


def coalesce(ranges, hole=COALESCE_HOLE, limit=COALESCE_RANGE):
    """(offsets, lengths) of (offset, length) ranges read as pyarrow's read cache merges
    them: in file order, a range joins the one before when the hole between is at most
    `hole` bytes and the merged read stays within `limit` bytes."""
    offs, lens = [], []
    for start, length in sorted(ranges):
        if offs and start - (offs[-1] + lens[-1]) <= hole \
                and start + length - offs[-1] <= limit:
            lens[-1] = max(lens[-1], start + length - offs[-1])
        else:
            offs.append(start)
            lens.append(length)
    return np.asarray(offs, np.int64), np.asarray(lens, np.int64)


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


def batch_reads(idx, metadata_bytes, local, opened=True, chunks=None, rows=None,
                together=False):
    """(offsets, lengths) of a batch's samples `local` of one file, as the DLIO benchmark's
    parquet reader makes pyarrow read them: the footer (the file opened; not when ``opened``
    is False, a ParquetFile kept from the batch before), then each row group's column chunk
    when a sample lies in another row group than the one before. With `chunks` (chosen_chunks
    of a table read in part) and `rows` a row group: each row group's chosen chunks as
    pyarrow pre-buffers them (coalesce), or with `together` the chunks of all the batch's row
    groups at once (read_row_groups, read_table: neighbouring row groups' chunks may share a
    read)."""
    offs, lens = footer_reads(idx.file_size, metadata_bytes) if opened else ([], [])
    last, pending = None, []
    for s in np.asarray(local, np.int64).tolist():
        here = s // rows if chunks is not None else int(idx.offsets[s])
        if here != last:
            if chunks is None:
                offs.append(here)
                lens.append(int(idx.lengths[s]))
            elif together:
                pending += chunks[here]
            else:
                o, n = coalesce(chunks[here])
                offs += o.tolist()
                lens += n.tolist()
            last = here
    if pending:
        o, n = coalesce(pending)
        offs += o.tolist()
        lens += n.tolist()
    return np.asarray(offs, np.int64), np.asarray(lens, np.int64)


def metadata_bytes(path):
    """The length of a file's footer metadata (the <I before its closing magic)."""
    with open(path, "rb") as f:
        f.seek(-FOOTER_TAIL, 2)
        tail = f.read(FOOTER_TAIL)
    if len(tail) != FOOTER_TAIL or tail[4:] != b"PAR1":
        raise FormatError(path, "does not end with Parquet's magic PAR1")
    return int.from_bytes(tail[:4], "little")

"""The types shared by every format: the spec of a dataset's files, the index of one file, the
error a damaged or foreign file raises."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

FORMATS = ("raw", "npy", "npz", "tfrecord", "hdf5", "csv", "jpeg", "png", "indexed_binary",
           "mmap_indexed_binary", "parquet")
COMPRESSIONS = {"raw": ("none",), "npy": ("none",), "tfrecord": ("none",), "csv": ("none",),
                "npz": ("none", "zip"), "hdf5": ("none", "gzip", "lzf"), "jpeg": ("none",),
                "png": ("none",), "indexed_binary": ("none",), "mmap_indexed_binary": ("none",),
                "parquet": ("none",)}
# formats whose sample is a square image: its size is a whole square of 8-bit pixels
SQUARE_IMAGES = ("jpeg", "png")


class FormatError(ValueError):
    """A file that is not a complete file of the expected format; str() is one line naming the
    file and what is wrong."""

    def __init__(self, path, what):
        self.path, self.what = str(path), " ".join(str(what).split())
        super().__init__(f"{self.path}: {self.what}")


@dataclass(frozen=True)
class FormatSpec:
    """How the files of a dataset are laid out. Sizes are bytes.

    record_length / record_length_stdev: each sample's size is drawn from a normal distribution
    (seeded by seed and the file index), rounded, clipped to at least 1 byte, then rounded to a
    whole number of elements (dtype for npy/npz/hdf5, 4-byte fields for csv) or of a square
    image's pixels (jpeg, png: record_length is the decoded image's bytes); stdev 0 is a fixed
    size. Formats that store a file's samples as rows of one array (npy with several samples per
    file, hdf5) draw one size per file, shared by its rows."""
    format: str = "raw"
    samples_per_file: int = 1
    record_length: int = 65536
    record_length_stdev: float = 0.0
    seed: int = 42
    dtype: str = "uint8"          # element type of npy / npz / hdf5 arrays
    compression: str = "none"     # npz: none | zip (savez_compressed); hdf5: none | gzip | lzf
    compression_level: int = 4    # hdf5 gzip level
    chunked: bool = False         # hdf5: chunked layout (implied by compression)
    chunk_rows: int = 1           # hdf5: rows per chunk
    chunk_elems: int = 0          # hdf5: elements of a row per chunk (0: the whole row)
    dataset: str = "records"      # hdf5: dataset name
    libver: str = "earliest"      # hdf5: file format, as h5py's libver (earliest | latest)
    npz_layout: str = "per_sample"  # npz: a member per sample, or stacked (x: all, y: labels)
    # hdf5 volumes (formats/volumes.py): N-D datasets of volume_shape read as crops; volumes
    # holds (name, dtype, chunk shape, compression, fill) per dataset; empty: one 2-D dataset
    volume_shape: tuple = ()
    crop_shape: tuple = ()
    crop_placement: str = "random"  # random | tiled (volumes.crop_start)
    volumes: tuple = ()
    # the file each volume is kept in: "" the dataset's file, else a companion file named
    # after it (formats/volumes.py companion); empty: every volume in the dataset's file
    volume_files: tuple = ()
    # hdf5 rows: further fields of every sample, each in a dataset of its own with a row per
    # sample (an image's label): (name, bytes, dtype, chunk_rows) each, chunk_rows 0 for a
    # contiguous dataset; a sample's size counts its fields
    fields: tuple = ()
    row_group_rows: int = 0       # parquet: rows per row group (0: pyarrow's default)
    # parquet: the columns of a row, each a binary value holding this share of the sample's
    # bytes, in order; empty: one column
    columns: tuple = ()
    # hdf5: each sample a variable-length sequence of bytes in a 1-D dataset (an encoded
    # image), kept in libhdf5's global heap; samples of their own sizes
    vlen: bool = False
    content_fill: float = 1.0     # the random share of the content's pages (the rest zeros)

    def __post_init__(self):
        def bad(key, what):
            raise ValueError(f"format spec: {key}={getattr(self, key)!r}: {what}")
        if self.format not in FORMATS:
            bad("format", f"expected one of {', '.join(FORMATS)}")
        for key in ("samples_per_file", "record_length", "chunk_rows"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                bad(key, "expected an integer >= 1")
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) \
                or self.seed < 0:
            bad("seed", "expected an integer >= 0")
        try:
            stdev = float(self.record_length_stdev)
        except (TypeError, ValueError):
            stdev = -1.0
        if not stdev >= 0 or stdev == float("inf"):
            bad("record_length_stdev", "expected a number >= 0")
        ce = self.chunk_elems
        if isinstance(ce, bool) or not isinstance(ce, (int, np.integer)) or ce < 0:
            bad("chunk_elems", "expected an integer >= 0")
        if ce and self.chunk_rows != 1:
            bad("chunk_elems", "a chunk of part of a row holds one row (chunk_rows=1)")
        if self.compression not in COMPRESSIONS[self.format]:
            bad("compression", f"{self.format} takes {' | '.join(COMPRESSIONS[self.format])}")
        lvl = self.compression_level
        if isinstance(lvl, bool) or not isinstance(lvl, (int, np.integer)) or not 0 <= lvl <= 9:
            bad("compression_level", "expected an integer 0..9")
        try:
            dt = np.dtype(self.dtype)
        except TypeError:
            bad("dtype", "not a numpy dtype")
        if dt.kind not in "biufc" or dt.fields is not None or dt.subdtype is not None:
            bad("dtype", "expected a plain numeric dtype")
        if self.libver not in ("earliest", "latest"):
            bad("libver", "expected earliest or latest")
        if not self.dataset or "/" in self.dataset:
            bad("dataset", "expected a plain dataset name")
        try:
            cf = float(self.content_fill)
        except (TypeError, ValueError):
            cf = -1.0
        if not 0.0 < cf <= 1.0:
            bad("content_fill", "expected a share in (0, 1]")
        if self.columns:
            if self.format != "parquet":
                bad("columns", "columns are a Parquet file's")
            if not all(isinstance(c, (int, float, np.integer, np.floating)) and c > 0
                       for c in self.columns):
                bad("columns", "expected positive shares of a sample's bytes")
        if self.vlen and (self.format != "hdf5" or self.volumes or self.chunked
                          or self.dtype != "uint8"):
            bad("vlen", "variable-length samples are bytes in an HDF5 file's 1-D dataset, "
                        "contiguous (dtype uint8, no chunks, compression or volumes)")
        if self.fields:
            if self.format != "hdf5" or self.volumes:
                bad("fields", "fields are datasets beside an HDF5 file's rows")
            names = {self.dataset}
            for name, nbytes, dtype, chunk_rows in self.fields:
                if not name or "/" in name or name in names:
                    bad("fields", f"{name!r}: a plain dataset name, each once")
                names.add(name)
                size = np.dtype(dtype).itemsize
                if nbytes < size or nbytes % size or chunk_rows < 0:
                    bad("fields", f"{name!r}: {nbytes} bytes of {dtype} a row, chunks of "
                                  f"{chunk_rows} rows")

    @property
    def content(self):
        """What fill() makes the samples' bytes from (formats.content): the seed, or with a
        content fill below 1 the seed and the fill."""
        from dlio_mpi.formats.content import Content
        return self.seed if self.content_fill >= 1.0 else Content(self.seed, self.content_fill)

    @property
    def itemsize(self):
        """Bytes of one element of a sample: 1 for byte formats, 4 for a csv field."""
        if self.format in ("npy", "npz", "hdf5"):
            return np.dtype(self.dtype).itemsize
        return 4 if self.format == "csv" else 1

    @property
    def field_bytes(self):
        """Bytes of a sample's further fields (0 without)."""
        return sum(int(f[1]) for f in self.fields)

    @property
    def square_images(self):
        """A sample is a square greyscale image (formats/_images.py)."""
        return self.format in SQUARE_IMAGES

    @property
    def rows_share_size(self):
        """True when every sample of a file has the same size (rows of one array: a stacked
        NPZ file's x holds its samples as columns of one size)."""
        return (self.format == "hdf5" and not self.vlen) or (self.format in ("npy", "npz")
                                         and self.samples_per_file > 1
                                         and (self.format == "npy"
                                              or self.npz_layout == "stacked"))

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)


def _i64(a):
    return np.ascontiguousarray(a, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class FileIndex:
    """Where each sample of one file lies, as numpy arrays (one entry per sample).

    sizes    bytes of the sample as the application gets it (array bytes, TFRecord payload,
             raw record, CSV line)
    offsets, lengths
             the byte range a reader of the sample reads: the raw record, the whole framed
             TFRecord record, the member's .npy bytes (header included) of a stored NPZ member,
             the compressed data of a compressed NPZ member, the .npy row, the CSV line, the
             row of a contiguous HDF5 dataset; -1 / 0 where not known (chunked HDF5)
    exact    True when a pread of each range gives exactly the sample's encoded bytes
    compressed
             the sample is stored compressed: a reader reads its member (npz) or chunk (hdf5)
             whole and decompresses
    rows, dataset
             HDF5 only: the row of each sample in the dataset (libhdf5 does the reading)
    chunks   Parquet only: per row group, each column chunk's (offset, length): an array
             of (row groups, columns, 2)
    whole_file
             the format's application reads the file whole (CSV, as CANDLE does)"""
    format: str
    file_size: int
    sizes: np.ndarray
    offsets: np.ndarray
    lengths: np.ndarray
    exact: bool = True
    compressed: bool = False
    whole_file: bool = False
    rows: np.ndarray | None = None
    dataset: str | None = None
    chunks: np.ndarray | None = None

    def __post_init__(self):
        for name in ("sizes", "offsets", "lengths") + (("rows",) if self.rows is not None else ()):
            arr = _i64(getattr(self, name))
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        n = len(self.sizes)
        if len(self.offsets) != n or len(self.lengths) != n or \
                (self.rows is not None and len(self.rows) != n):
            raise ValueError("FileIndex: sizes, offsets, lengths (and rows) differ in length")
        if self.chunks is not None:
            arr = _i64(self.chunks).reshape(len(self.chunks), -1, 2)
            arr.setflags(write=False)
            object.__setattr__(self, "chunks", arr)

    @property
    def num_samples(self):
        return len(self.sizes)

    def ranges(self, samples):
        """(offsets, lengths) of the given samples of this file, in the given order."""
        s = _i64(samples)
        return self.offsets[s], self.lengths[s]

    def __eq__(self, other):
        if not isinstance(other, FileIndex):
            return NotImplemented
        same_rows = (self.rows is None and other.rows is None) or (
            self.rows is not None and other.rows is not None
            and np.array_equal(self.rows, other.rows))
        return (self.format == other.format and self.file_size == other.file_size
                and self.exact == other.exact and self.compressed == other.compressed
                and self.whole_file == other.whole_file and self.dataset == other.dataset
                and same_rows and np.array_equal(self.sizes, other.sizes)
                and (self.chunks is None) == (other.chunks is None)
                and (self.chunks is None or np.array_equal(self.chunks, other.chunks))
                and np.array_equal(self.offsets, other.offsets)
                and np.array_equal(self.lengths, other.lengths))

    __hash__ = None

    def __repr__(self):
        return (f"FileIndex({self.format}, {self.num_samples} samples, {self.file_size} bytes, "
                f"exact={self.exact}, compressed={self.compressed}, "
                f"whole_file={self.whole_file})")

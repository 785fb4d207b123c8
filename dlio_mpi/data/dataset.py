"""A run's dataset: its format spec, its file names, and where each sample lies.

File names and per-file indexes are computed, never listed or looked up in a per-sample table:
file i of the training set is train/[k/]PREFIX_i.EXT (k = i mod num_subfolders_train when
subfolders are used); a file's index comes from its format's layout (no I/O) where the format
allows, else from the file's own headers when first opened (as numpy reads an NPZ directory),
and is kept for the most recently used files only (up to CACHE_FILES files describing up to
CACHE_SAMPLES samples, a few MiB: a rank re-reads a file's headers only when its share is larger
than that)."""
import os
from collections import OrderedDict

import numpy as np

from dlio_mpi import formats
from dlio_mpi.run import oplog_format

_COMPRESSION = {"none": "none", "zip": "zip", "gzip": "gzip", "lzf": "lzf"}


def chunking(ds, itemsize=1):
    """(chunk_rows, chunk_elems) of an HDF5 dataset for dataset.chunk_size bytes: whole rows
    when it is a multiple of the record, else one row cut into chunks of chunk_size bytes.
    ValueError (one line) when no chunk shape has that size."""
    size, rec = ds.chunk_size, ds.record_length
    if not size:
        return 1, 0
    if size % itemsize:
        raise ValueError(f"dataset.chunk_size={size} is not a whole number of "
                         f"{itemsize}-byte elements")
    if size >= rec:
        if size % rec:
            raise ValueError(f"dataset.chunk_size={size} is neither a whole number of records "
                             f"(dataset.record_length={rec}) nor a part of one record")
        return size // rec, 0
    if ds.record_length_stdev:
        raise ValueError(f"dataset.chunk_size={size} cuts a record into chunks, but records "
                         "vary in size (dataset.record_length_stdev): a chunk may not fit a "
                         "shorter record")
    return 1, size // itemsize


def content_seed(cfg):
    """The seed of the dataset's content and sizes: dataset.seed, or train.seed when unset."""
    return cfg.dataset.seed if cfg.dataset.seed >= 0 else cfg.train.seed


def format_spec(cfg):
    ds = cfg.dataset
    chunk_rows, chunk_elems = chunking(ds) if formats.traits(ds.format).chunked else (1, 0)
    return formats.FormatSpec(
        format=ds.format, samples_per_file=ds.num_samples_per_file,
        record_length=ds.record_length, record_length_stdev=ds.record_length_stdev,
        seed=content_seed(cfg), compression=_COMPRESSION[ds.compression],
        compression_level=min(ds.compression_level, 9),
        chunked=ds.enable_chunking or ds.compression in ("gzip", "lzf"), chunk_rows=chunk_rows,
        chunk_elems=chunk_elems, libver=ds.hdf5_libver, npz_layout=ds.npz_layout,
        volume_shape=tuple(ds.volume_shape), crop_shape=tuple(ds.crop_shape),
        crop_placement=ds.crop_placement,
        volumes=tuple((v["name"], v.get("dtype", "uint8"), tuple(v["chunks"]),
                       v.get("compression", "none"), float(v.get("fill", 1.0)))
                      for v in ds.volumes),
        volume_files=tuple(v.get("file", "") for v in ds.volumes)
        if any(v.get("file") for v in ds.volumes) else (),
        fields=tuple((f["name"], int(f["bytes"]), f.get("dtype", "uint8"),
                      int(f.get("chunk_rows", 0))) for f in ds.hdf5_fields),
        row_group_rows=ds.parquet_row_group_size,
        columns=tuple(float(c) for c in ds.parquet_columns), vlen=ds.hdf5_vlen,
        content_fill=ds.content_fill)


class _LoggedFile:
    """A file the index reader reads through the native engine, its calls in the op log."""

    def __init__(self, path, log, file_id):
        from dlio_mpi import engines
        self.h = engines.PosixFile(path, file_id=file_id, oplog=log)

    def size(self):
        return self.h.size()

    def pread(self, n, offset):
        return self.h.read(offset, n).tobytes()

    def close(self):
        self.h.close()


class Dataset:
    """The training files of cfg (what readers and the generator share). With `log` set (an
    OpLog), reads of a file's index (NPZ directories) are made by the native engine and
    recorded in it."""

    log = None

    CACHE_FILES = 4096          # file indexes kept, at most
    CACHE_SAMPLES = 1 << 18     # samples the kept indexes describe, at most

    def __init__(self, cfg, split="train"):
        self.cfg = cfg
        self.split = split
        ds = cfg.dataset
        self.root = ds.data_folder
        self.spf = ds.num_samples_per_file
        self.prefix = ds.file_prefix
        if split == "train":
            self.num_files, self.subfolders = ds.num_files_train, ds.num_subfolders_train
            self.first_id = 0
        else:
            self.num_files, self.subfolders = ds.num_files_eval, ds.num_subfolders_eval
            self.first_id = ds.num_files_train      # op-log file ids follow the training files
        spec = format_spec(cfg)
        # evaluation files draw their own content and sizes
        self.spec = spec if split == "train" else spec.replace(seed=spec.seed + 1)
        self.ext = formats.extension(self.spec)
        self._indexes = OrderedDict()
        self._cached_samples = 0
        self.traits = formats.traits(self.spec.format)
        self.byte_ranges = self.traits.byte_ranges

    @property
    def num_samples(self):
        return self.num_files * self.spf

    def name(self, i):
        return oplog_format.data_file_name(self.split, i, self.num_files, self.prefix, self.ext,
                                           self.subfolders)

    def path(self, i):
        return os.path.join(self.root, self.name(i))

    def directories(self):
        if self.subfolders > 0:
            return [os.path.join(self.root, self.split, str(k)) for k in range(self.subfolders)]
        return [os.path.join(self.root, self.split)]

    def index(self, i):
        """The FileIndex of file i (computed, or read from the file's headers once)."""
        idx = self._indexes.get(i)
        if idx is not None:
            self._indexes.move_to_end(i)
            return idx
        try:
            idx = formats.layout(self.spec, i)
        except ValueError:
            kw = {}
            if self.log is not None and self.traits.index_logged:
                fid = self.first_id + i
                # companion k (an index file beside the data file) has an id of its own
                kw["opener"] = lambda path, k=0: _LoggedFile(
                    path, self.log, oplog_format.companion_id(k, fid) if k else fid)
            idx = formats.index_file(self.path(i), self.spec, i, **kw)
        self._indexes[i] = idx
        self._cached_samples += self.spf
        while len(self._indexes) > 1 and (len(self._indexes) > self.CACHE_FILES
                                          or self._cached_samples > self.CACHE_SAMPLES):
            self._indexes.popitem(last=False)
            self._cached_samples -= self.spf
        return idx

    def compute_indexes(self, files):
        """Computes and caches the indexes of files (global file numbers) where the format's
        layout gives them without I/O and all of them fit the cache; else does nothing (an
        index read from a file's headers is the application's I/O, made when the file is
        first read). Returns how many were computed."""
        if not hasattr(formats.get(self.spec.format), "layout"):
            return 0
        files = np.asarray(files, dtype=np.int64)
        if len(files) > self.CACHE_FILES or len(files) * self.spf > self.CACHE_SAMPLES:
            return 0
        new = [f for f in dict.fromkeys(files.tolist()) if f not in self._indexes]
        for f in new:
            self.index(f)
        return len(new)

    def locate(self, samples):
        """(file index, sample index within its file) of global sample numbers."""
        samples = np.asarray(samples, dtype=np.int64)
        return samples // self.spf, samples % self.spf

    def max_sample_bytes(self):
        """An upper bound of a sample's read size: sizes are normal draws, so mean + 8 stdev
        (never exceeded in practice), plus the format's per-sample framing; a volume crop's
        bytes."""
        if self.spec.volumes:
            from dlio_mpi.formats.volumes import crop_bytes
            return crop_bytes(self.spec) + 4096
        r = self.cfg.dataset.record_length + 8 * self.cfg.dataset.record_length_stdev
        return int(r) + 4096

    def total_bytes(self):
        """The split's size as configured (mean sample size)."""
        return self.num_files * self.spf * self.cfg.dataset.record_length

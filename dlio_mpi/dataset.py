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

_COMPRESSION = {"none": "none", "zip": "zip", "gzip": "gzip", "lzf": "lzf"}


def format_spec(cfg):
    ds = cfg.dataset
    chunk_rows = max(1, ds.chunk_size // ds.record_length) if ds.chunk_size else 1
    return formats.FormatSpec(
        format=ds.format, samples_per_file=ds.num_samples_per_file,
        record_length=ds.record_length, record_length_stdev=ds.record_length_stdev,
        seed=cfg.train.seed, compression=_COMPRESSION[ds.compression],
        compression_level=min(ds.compression_level, 9),
        chunked=ds.enable_chunking or ds.compression in ("gzip", "lzf"), chunk_rows=chunk_rows)


class Dataset:
    """The training files of cfg (what readers and the generator share)."""

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
        self.byte_ranges = self.spec.format != "hdf5"

    @property
    def num_samples(self):
        return self.num_files * self.spf

    def name(self, i):
        sub = f"{i % self.subfolders}/" if self.subfolders > 0 else ""
        return f"{self.split}/{sub}{self.prefix}_{i:07d}_of_{self.num_files}{self.ext}"

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
            idx = formats.index_file(self.path(i), self.spec, i)
        self._indexes[i] = idx
        self._cached_samples += self.spf
        while len(self._indexes) > 1 and (len(self._indexes) > self.CACHE_FILES
                                          or self._cached_samples > self.CACHE_SAMPLES):
            self._indexes.popitem(last=False)
            self._cached_samples -= self.spf
        return idx

    def locate(self, samples):
        """(file index, sample index within its file) of global sample numbers."""
        samples = np.asarray(samples, dtype=np.int64)
        return samples // self.spf, samples % self.spf

    def max_sample_bytes(self):
        """An upper bound of a sample's read size: sizes are normal draws, so mean + 8 stdev
        (never exceeded in practice), plus the format's per-sample framing."""
        r = self.cfg.dataset.record_length + 8 * self.cfg.dataset.record_length_stdev
        return int(r) + 4096

    def total_bytes(self):
        """The split's size as configured (mean sample size)."""
        return self.num_files * self.spf * self.cfg.dataset.record_length

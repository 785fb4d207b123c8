"""Checks of the keys that shape what reaches the file system (reader.access and its keys,
HDF5 volumes), run by dlio_mpi.config.checks.validate on every rank before any I/O: an impossible
combination is one ConfigError line naming the keys."""
import re

import numpy as np

from dlio_mpi import backends, formats
from dlio_mpi.config.errors import ConfigError

VOLUME_KEYS = {"name", "dtype", "chunks", "compression", "fill", "file"}
FILE_KEY = re.compile(r"^[A-Za-z0-9_-]{1,32}$")


def _dims(where, value):
    if not isinstance(value, list) or not value or not all(
            isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in value):
        raise ConfigError(f"{where}={value!r}: a list of dimensions, each at least 1")
    return value


def _crops(b):
    """A crop of a volume is one read of an N-D box through libhdf5 (collective: one box of
    every rank a call)."""
    return b.library == backends.HDF5


def _python_file(b):
    """Python's own file object: a buffered file over POSIX calls."""
    return b.buffered and b.library == backends.POSIX


def _dataset_entry(where, entry, required, keys, names, taken=""):
    """Check one mapping of a list of HDF5 datasets (volumes, fields): a mapping with the
    ``required`` keys and no other than ``keys``, a plain name not in ``names`` (added to
    them; ``taken`` says which names are), a numeric dtype (uint8 when not given), which it
    returns."""
    if not isinstance(entry, dict) or any(k not in entry for k in required):
        raise ConfigError(f"{where}: a mapping with at least {' and '.join(required)}")
    extra = set(entry) - keys
    if extra:
        raise ConfigError(f"{where}: unknown key {sorted(extra)[0]!r} (one of "
                          f"{', '.join(sorted(keys))})")
    name = entry["name"]
    if not isinstance(name, str) or not name or "/" in name or name in names:
        raise ConfigError(f"{where}.name={name!r}: a plain dataset name, each once{taken}")
    names.add(name)
    try:
        dt = np.dtype(entry.get("dtype", "uint8"))
    except TypeError:
        dt = None
    if dt is None or dt.kind not in "biuf":
        raise ConfigError(f"{where}.dtype={entry.get('dtype')!r}: a numeric type (uint8, "
                          "int64, float32, ...)")
    return dt


def validate_volumes(cfg):
    ds, io, rd = cfg.dataset, cfg.io, cfg.reader
    if not ds.volume_shape and not ds.volumes and not ds.crop_shape:
        return
    if not (ds.volume_shape and ds.volumes and ds.crop_shape):
        raise ConfigError("HDF5 volumes need dataset.volume_shape, dataset.crop_shape and "
                          "dataset.volumes together")
    shape = _dims("dataset.volume_shape", ds.volume_shape)
    crop = _dims("dataset.crop_shape", ds.crop_shape)
    if len(crop) != len(shape) or any(c > s for c, s in zip(crop, shape)):
        raise ConfigError(f"dataset.crop_shape={crop} does not fit in dataset.volume_shape="
                          f"{shape}")
    if not formats.traits(ds.format).rows:
        raise ConfigError(f"dataset.volumes are HDF5 datasets: dataset.format must be "
                          f"{formats.listed(lambda t: t.rows)}, not {ds.format}")
    if not _crops(backends.of(cfg)):
        raise ConfigError(f"dataset.volumes are read a crop at a time through libhdf5: "
                          f"io.interface must be {backends.listed(_crops)}, not {io.interface}")
    if rd.read_threads or rd.access != "sample" or io.read_type != "on_demand" or rd.reopen:
        raise ConfigError("dataset.volumes are read a crop at a time in the training loop: "
                          "reader.read_threads=0, reader.access=sample, "
                          "io.read_type=on_demand, reader.reopen=false")
    if not isinstance(ds.volumes, list):
        raise ConfigError("dataset.volumes: a list of mappings (name, dtype, chunks, ...)")
    names = set()
    for i, v in enumerate(ds.volumes):
        where = f"dataset.volumes[{i}]"
        _dataset_entry(where, v, ("name", "chunks"), VOLUME_KEYS, names)
        chunks = _dims(f"{where}.chunks", v["chunks"])
        if len(chunks) != len(shape) or any(c > s for c, s in zip(chunks, shape)):
            raise ConfigError(f"{where}.chunks={chunks} does not fit dataset.volume_shape="
                              f"{shape}")
        if v.get("compression", "none") not in ("none", "gzip", "lzf"):
            raise ConfigError(f"{where}.compression={v.get('compression')!r}: none, gzip or "
                              "lzf")
        fill = v.get("fill", 1.0)
        if isinstance(fill, bool) or not isinstance(fill, (int, float)) or not 0 <= fill <= 1:
            raise ConfigError(f"{where}.fill={fill!r}: a share between 0 and 1")
        if "file" in v and (not isinstance(v["file"], str) or not FILE_KEY.match(v["file"])):
            raise ConfigError(f"{where}.file={v['file']!r}: the name of a companion file, 1 "
                              "to 32 letters, digits, '_' or '-'")
    if ds.volumes and ds.volumes[0].get("file"):
        raise ConfigError("dataset.volumes[0].file: the first volume stays in the dataset's "
                          "file; later volumes may name companion files")


FIELD_KEYS = {"name", "bytes", "dtype", "chunk_rows"}


def validate_fields(cfg):
    """dataset.hdf5_fields: datasets beside the rows', read by libhdf5 with each read of rows
    (the engine reads them; the samples' byte ranges through another interface would miss
    them)."""
    ds, io, rd = cfg.dataset, cfg.io, cfg.reader
    if not ds.hdf5_fields:
        return
    if not isinstance(ds.hdf5_fields, list):
        raise ConfigError("dataset.hdf5_fields: a list of mappings (name, bytes, dtype, "
                          "chunk_rows)")
    if not formats.traits(ds.format).rows or ds.volume_shape:
        raise ConfigError(f"dataset.hdf5_fields are datasets beside an HDF5 file's rows: "
                          f"dataset.format {formats.listed(lambda t: t.rows)} without "
                          f"volumes, not {ds.format}")
    if backends.of(cfg).library != backends.HDF5 or rd.access != "sample" or io.write_first:
        raise ConfigError("dataset.hdf5_fields are read by libhdf5 with each sample's row: "
                          f"io.interface {backends.listed(lambda b: b.library == backends.HDF5)}"
                          ", reader.access=sample, io.write_first=false")
    if len(ds.hdf5_fields) > 8:
        raise ConfigError(f"dataset.hdf5_fields: {len(ds.hdf5_fields)} fields, at most 8")
    names, total = {"records"}, 0
    for i, f in enumerate(ds.hdf5_fields):
        where = f"dataset.hdf5_fields[{i}]"
        dt = _dataset_entry(where, f, ("name", "bytes"), FIELD_KEYS, names,
                            " (records is the rows' dataset)")
        nbytes = f["bytes"]
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < dt.itemsize \
                or nbytes % dt.itemsize:
            raise ConfigError(f"{where}.bytes={nbytes!r}: a row's bytes, a whole number of "
                              f"{dt} elements")
        rows = f.get("chunk_rows", 0)
        if isinstance(rows, bool) or not isinstance(rows, int) or rows < 0:
            raise ConfigError(f"{where}.chunk_rows={rows!r}: rows a chunk (0: contiguous)")
        total += nbytes
    if ds.record_length - total < 1:
        raise ConfigError(f"dataset.record_length={ds.record_length} leaves no row for the "
                          f"{total} bytes of dataset.hdf5_fields: it counts a sample's row "
                          "and its fields")


def validate_access(cfg):
    io, ds, rd = cfg.io, cfg.dataset, cfg.reader
    if ds.npz_layout == "stacked" and (ds.format != "npz" or rd.access != "numpy"
                                       or ds.compression != "none"):
        raise ConfigError("dataset.npz_layout=stacked holds a file's samples side by side in "
                          "one array: it needs dataset.format=npz, reader.access=numpy and no "
                          "compression")
    if ds.npz_layout == "shot" and (ds.format != "npz" or rd.access != "numpy"
                                    or ds.compression != "none"
                                    or ds.num_samples_per_file != 1):
        raise ConfigError("dataset.npz_layout=shot holds one shot per file: it needs "
                          "dataset.format=npz, reader.access=numpy, no compression and "
                          "dataset.num_samples_per_file=1")
    if rd.parquet_open != "batch" and rd.access != "parquet":
        raise ConfigError(f"reader.parquet_open={rd.parquet_open} is how reader.access=parquet "
                          f"opens its files, not reader.access={rd.access}")
    _parquet_columns(ds, rd)
    if ds.hdf5_vlen and (not formats.traits(ds.format).rows or ds.volumes
                         or ds.enable_chunking or ds.compression != "none"
                         or io.layout != "multi" or backends.of(cfg).collective):
        raise ConfigError("dataset.hdf5_vlen keeps each sample a variable-length sequence of "
                          "bytes in an HDF5 file's 1-D dataset: it needs dataset.format="
                          f"{formats.listed(lambda t: t.rows)}, no volumes, chunks or "
                          "compression, io.layout multi and independent reads (libhdf5 "
                          "writes and reads its heap one process at a time)")
    if rd.buffer_size and rd.access not in ("numpy", "image", "buffered", "pickle"):
        raise ConfigError("reader.buffer_size is the buffered file of reader.access=numpy, "
                          "image, buffered or pickle; other patterns read in "
                          "reader.transfer_size pieces")
    if rd.reopen:
        if rd.access != "sample" or io.read_type != "on_demand":
            raise ConfigError("reader.reopen opens a file per sample read on demand: it needs "
                              "reader.access=sample and io.read_type=on_demand "
                              "(reader.access=numpy opens per sample anyway)")
        b = backends.of(cfg)
        # a shared file is each rank's own handle through POSIX and STDIO (opened lazily,
        # so it can be opened anew); through libhdf5 it is opened once for the run
        own = io.layout == "multi" or (io.layout == "shared" and b.library != backends.HDF5)
        if not own or not b.reopen:
            raise ConfigError("reader.reopen applies to a rank's own files through "
                              f"{backends.listed(lambda b: b.reopen)} (io.layout=multi), or "
                              "to a shared file through those but HDF5")
        if rd.worker_files != "shared":
            raise ConfigError(f"reader.worker_files={rd.worker_files} keeps a read thread's "
                              "files open: with reader.reopen every sample opens its file")
    if rd.shuffle_block != 1 and (rd.sample_shuffle == "off" or io.read_type != "on_demand"
                                  or rd.access != "sample"):
        raise ConfigError(f"reader.shuffle_block={rd.shuffle_block} shuffles runs of samples "
                          "read on demand: it needs reader.sample_shuffle, "
                          "io.read_type=on_demand and reader.access=sample")
    if rd.shuffle_window and (rd.sample_shuffle == "off" or io.read_type != "on_demand"
                              or rd.access != "sample" or rd.shuffle_block != 1
                              or rd.shuffle_scope != "global" or rd.sharding != "block"
                              or ds.num_files_train * ds.num_samples_per_file
                              % rd.shuffle_window):
        raise ConfigError(f"reader.shuffle_window={rd.shuffle_window} shuffles the samples "
                          "within windows that divide the dataset: it needs "
                          "reader.sample_shuffle, io.read_type=on_demand, reader.access=sample, "
                          "reader.shuffle_block=1, reader.shuffle_scope=global, "
                          "reader.sharding=block and a window dividing the dataset's samples")
    if rd.sharding_block != 1 and rd.sharding != "round_robin":
        raise ConfigError(f"reader.sharding_block={rd.sharding_block} is the turn of "
                          f"reader.sharding=round_robin, not reader.sharding={rd.sharding}")
    if rd.sharding != "block" and (rd.access != "sample" or io.read_type != "on_demand"
                                   or io.layout == "replicated"):
        raise ConfigError("reader.sharding=round_robin splits an epoch's samples among ranks: "
                          "it needs reader.access=sample, io.read_type=on_demand and a layout "
                          "that is not replicated")
    if rd.batch_order and (rd.hdf5_reads != "sample" or sorted(rd.batch_order)
                           != list(range(rd.batch_size))):
        raise ConfigError(f"reader.batch_order={rd.batch_order!r}: the order of a batch's "
                          "H5Dread calls needs reader.hdf5_reads=sample and a permutation of "
                          f"0 .. {rd.batch_size - 1} (reader.batch_size {rd.batch_size})")
    def per_read(b):
        return b.library == backends.HDF5 and not b.collective

    if rd.hdf5_dataset_open != "file" and (not formats.traits(cfg.dataset.format).rows
                                           or not per_read(backends.of(cfg))):
        raise ConfigError("reader.hdf5_dataset_open=read opens an HDF5 dataset for each "
                          f"independent H5Dread: it needs dataset.format "
                          f"{formats.listed(lambda t: t.rows)} and io.interface "
                          f"{backends.listed(per_read)}, not {cfg.dataset.format} through "
                          f"{cfg.io.interface}")
    if rd.hdf5_chunk_cache != "default" and not formats.traits(cfg.dataset.format).rows:
        raise ConfigError(f"reader.hdf5_chunk_cache={rd.hdf5_chunk_cache} is an HDF5 "
                          f"reader's: it needs dataset.format "
                          f"{formats.listed(lambda t: t.rows)}, not {cfg.dataset.format}")
    if rd.hdf5_reads != "batch" and not formats.traits(cfg.dataset.format).rows:
        raise ConfigError("reader.hdf5_reads=sample reads HDF5 rows by one H5Dread a sample: "
                          "it needs an HDF5 dataset.format")
    if rd.worker_files != "shared" and (rd.read_threads < 1 or rd.access != "sample"
                                        or io.read_type != "on_demand"
                                        or io.layout != "multi"):
        raise ConfigError(f"reader.worker_files={rd.worker_files} gives each read thread its "
                          "own open files: it needs reader.read_threads of 1 or more, "
                          "reader.access=sample, io.read_type=on_demand and io.layout=multi")
    if rd.shuffle_scope != "global" and (rd.access == "stream"
                                         or io.read_type != "on_demand"):
        raise ConfigError("reader.shuffle_scope=rank shuffles each rank's share of the samples "
                          "read on demand: it needs io.read_type=on_demand and a reader.access "
                          "that reads samples (not stream)")
    if rd.eof_reads and (rd.access != "stream" or not backends.of(cfg).reads_past_end):
        raise ConfigError("reader.eof_reads are reads at the end of a streamed file: they need "
                          "reader.access=stream and io.interface "
                          f"{backends.listed(lambda b: b.reads_past_end)}")
    if rd.whole_file and (rd.access != "sample" or io.layout != "multi"
                          or backends.of(cfg).library == backends.HDF5):
        raise ConfigError("reader.whole_file reads a sample's file whole in one call: it "
                          "needs reader.access=sample, io.layout=multi and an io.interface of "
                          "byte ranges (not HDF5)")
    if rd.epoch_overrun and (rd.read_threads or io.read_type != "on_demand"
                             or io.write_each_epoch):
        raise ConfigError(f"reader.epoch_overrun={rd.epoch_overrun} reads the next epoch's "
                          "first batches on the rank's own thread: it needs "
                          "reader.read_threads=0, io.read_type=on_demand and "
                          "io.write_each_epoch=false")
    if rd.interleave > 1 and rd.access != "stream":
        raise ConfigError(f"reader.interleave={rd.interleave} is the files a stream reads at "
                          "once: it needs reader.access=stream")
    if rd.torch_tensors != 1 and rd.access != "torch":
        raise ConfigError(f"reader.torch_tensors is the tensors torch.load reads of a "
                          f"sample's file: it needs reader.access=torch, not {rd.access}")
    if rd.pickle_frame and (rd.access != "pickle" or rd.pickle_tail):
        raise ConfigError(f"reader.pickle_frame={rd.pickle_frame} is the frames of a pickle "
                          "of many objects: it needs reader.access=pickle and no "
                          "reader.pickle_tail")
    if rd.pickle_tail and rd.access != "pickle":
        raise ConfigError(f"reader.pickle_tail is a pickle's last frame: it needs "
                          f"reader.access=pickle, not {rd.access}")
    if rd.stream_pass != "epoch" and (rd.access != "stream" or rd.interleave > 1):
        raise ConfigError(f"reader.stream_pass={rd.stream_pass} is a stream's pass over its "
                          "whole file for each sample, one file at a time: it needs "
                          "reader.access=stream and reader.interleave 1")
    if rd.access == "sample":
        if rd.shuffle_size:
            raise ConfigError("reader.shuffle_size is the shuffle buffer of reader.access=stream; "
                              "with reader.access=sample samples are shuffled by index")
        return
    where = f"reader.access={rd.access}"
    if io.read_type == "memory":
        raise ConfigError(f"{where} reads on demand; io.read_type=memory already reads the "
                          "input front to back at start (in reader.transfer_size pieces)")
    if rd.access == "stream":
        if not formats.traits(ds.format).byte_ranges:
            raise ConfigError(f"{where}: dataset.format={ds.format} is read through "
                              f"lib{formats.traits(ds.format).library}, not as a byte stream")
        if not backends.of(cfg).streams:
            raise ConfigError(f"{where} reads each rank's own files: io.interface must be "
                              f"{backends.listed(lambda b: b.streams)}, not {io.interface}")
        if io.layout != "multi":
            raise ConfigError(f"{where} splits the files among ranks: io.layout must be multi, "
                              f"not {io.layout}")
        if rd.sample_shuffle != "off" and rd.shuffle_size == 0:
            raise ConfigError(f"{where} with reader.sample_shuffle={rd.sample_shuffle} shuffles "
                              "samples in a buffer, as tf.data does: set reader.shuffle_size "
                              "(samples)")
        if rd.sample_shuffle == "off" and rd.shuffle_size:
            raise ConfigError(f"reader.shuffle_size={rd.shuffle_size} with "
                              "reader.sample_shuffle=off: no shuffle buffer is used")
    elif rd.access == "image":
        if not formats.traits(ds.format).opaque or ds.num_samples_per_file != 1:
            raise ConfigError(f"{where} reads an image per file: dataset.format="
                              f"{formats.listed(lambda t: t.opaque)} and "
                              "dataset.num_samples_per_file=1")
        if not backends.of(cfg).buffered:
            raise ConfigError(f"{where}: an image decoder reads through a buffered file; "
                              f"io.interface must be {backends.listed(lambda b: b.buffered)}, "
                              f"not {io.interface}")
        if rd.transfer_size == 0 or rd.shuffle_size:
            raise ConfigError(f"{where}: reader.transfer_size is the decoder's request size "
                              "(not 0), and there is no shuffle buffer")
    elif rd.access == "buffered":
        if not formats.traits(ds.format).byte_ranges or not backends.of(cfg).buffered:
            raise ConfigError(f"{where} reads samples' byte ranges through a buffered file: "
                              f"dataset.format={formats.listed(lambda t: t.byte_ranges)} and "
                              f"io.interface {backends.listed(lambda b: b.buffered)}")
        if rd.transfer_size or rd.shuffle_size:
            raise ConfigError(f"{where}: the buffered file chooses the reads' sizes "
                              "(reader.buffer_size): reader.transfer_size=0, and there is no "
                              "shuffle buffer")
    elif rd.access in ("file", "pickle", "torch"):
        # (a file's several samples each read it whole through f.read(): a zarr chunk read
        # for each of its rows; pickle and torch load one object a file)
        if not formats.traits(ds.format).byte_ranges \
                or (ds.num_samples_per_file != 1 and rd.access != "file") \
                or not backends.of(cfg).buffered:
            raise ConfigError(f"{where} reads a sample's file whole through Python's file: "
                              f"dataset.format={formats.listed(lambda t: t.byte_ranges)}, "
                              "dataset.num_samples_per_file=1 (but with reader.access=file) "
                              f"and io.interface {backends.listed(lambda b: b.buffered)}")
        if rd.transfer_size or rd.shuffle_size:
            raise ConfigError(f"{where}: Python asks for the whole file: "
                              "reader.transfer_size=0, and there is no shuffle buffer")
    elif rd.access == "parquet":
        if not backends.of(cfg).streams or io.layout != "multi":
            raise ConfigError(f"{where}: pyarrow reads each rank's own files: io.interface "
                              f"must be {backends.listed(lambda b: b.streams)} and io.layout "
                              f"multi, not {io.interface} and {io.layout}")
    else:
        fmt = formats.traits(ds.format)
        if not fmt.numpy_load:
            raise ConfigError(f"{where} is numpy.load of NPZ or NPY files: dataset.format must "
                              f"be {formats.listed(lambda t: t.numpy_load)}, not {ds.format}")
        if fmt.numpy_fromfile and not _python_file(backends.of(cfg)):
            raise ConfigError(f"{where} of NPY files reads the header through Python's file "
                              "and the array through C stdio, as numpy does: io.interface "
                              f"must be {backends.listed(_python_file)}, not {io.interface}")
        if ds.compression != "none":
            raise ConfigError(f"{where} reads stored members: dataset.compression must be none")
        if not backends.of(cfg).buffered:
            raise ConfigError(f"{where}: numpy reads through a buffered file; io.interface "
                              f"must be {backends.listed(lambda b: b.buffered)}, not "
                              f"{io.interface}")
        if rd.shuffle_size:
            raise ConfigError("reader.shuffle_size is the shuffle buffer of reader.access="
                              "stream")


def _parquet_columns(ds, rd):
    """A Parquet row's columns (positive shares of a sample), and a projection of them."""
    shares = ds.parquet_columns
    if shares and (not formats.traits(ds.format).row_groups or not all(
            isinstance(c, (int, float)) and not isinstance(c, bool) and c > 0 for c in shares)):
        raise ConfigError(f"dataset.parquet_columns={shares!r}: the shares of a sample's bytes "
                          "in each column of a Parquet row (positive numbers, with "
                          f"dataset.format={formats.listed(lambda t: t.row_groups)})")
    if rd.parquet_coalesce != "group" and rd.access != "parquet":
        raise ConfigError(f"reader.parquet_coalesce={rd.parquet_coalesce} is how reader.access="
                          f"parquet reads a file's row groups, not reader.access={rd.access}")
    read = rd.parquet_columns_read
    if not read:
        return
    width = len(shares) or 1
    if rd.access != "parquet" or not all(isinstance(c, int) and not isinstance(c, bool)
                                         and 0 <= c < width for c in read) \
            or len(set(read)) != len(read):
        raise ConfigError(f"reader.parquet_columns_read={read!r}: the columns reader.access="
                          f"parquet reads, distinct positions 0 .. {width - 1} in "
                          "dataset.parquet_columns")

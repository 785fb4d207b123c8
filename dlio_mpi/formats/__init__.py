"""Dataset formats as real programs write them, and for each, where a sample lies in a file.

Every format module has NAME, EXTENSION, TRAITS (a traits.FormatTraits: what the rest of the
emulator asks of the format, instead of comparing its name) and
    write_file(path, file_index, spec) -> FileIndex     write one complete file
    index_file(path, spec, file_index=None) -> FileIndex
                                                        rebuild the index from the file's headers
    sample_bytes(spec, file_index, sample_index)        the sample's bytes as the application
                                                        gets them (uint8 array)
    encoded_sample(spec, file_index, sample_index)      the sample as stored (framing, headers)
    sample_value(spec, file_index, sample_index)        what the format's real reader returns
raw, tfrecord, npy and csv also have layout(spec, file_index): the index, computed without I/O.
The functions here dispatch on spec.format."""
from dlio_mpi.formats import (content, csvtext, hdf5, indexed_binary, jpeg, npy, npz, parquet,
                              png, raw, tfrecord)
from dlio_mpi.formats.ranges import cut_ranges
from dlio_mpi.formats.spec import FORMATS, FileIndex, FormatError, FormatSpec

MODULES = {m.NAME: m for m in (raw, npy, npz, tfrecord, hdf5, csvtext, jpeg, png, indexed_binary,
                               parquet)}
# one module, two ways its application reads the samples
MODULES[indexed_binary.MMAP_NAME] = indexed_binary
assert set(MODULES) == set(FORMATS)
TRAITS = {name: m.TRAITS for name, m in MODULES.items()}
TRAITS[indexed_binary.MMAP_NAME] = indexed_binary.MMAP_TRAITS

__all__ = ["FORMATS", "FileIndex", "FormatError", "FormatSpec", "cut_ranges", "encoded_sample",
           "extension", "file_paths", "get", "index_file", "layout", "sample_bytes", "sample_sizes",
           "sample_value", "traits", "write_file", "write_memory"]


def get(name):
    """The module of format name."""
    try:
        return MODULES[name]
    except KeyError:
        raise ValueError(f"unknown format {name!r}: expected one of {', '.join(FORMATS)}") \
            from None


def traits(name):
    """The FormatTraits of dataset.format=name."""
    get(name)
    return TRAITS[name]


def listed(where, last="or"):
    """The formats for which where(traits) holds, for a message: "a, b or c"."""
    n = [t.name for t in TRAITS.values() if where(t)]
    return n[0] if len(n) == 1 else f"{', '.join(n[:-1])} {last} {n[-1]}"


def extension(spec):
    return get(spec.format).EXTENSION


def sample_sizes(spec, file_index):
    """Bytes of each sample of file file_index as the application gets them (int64 array)."""
    return content.sample_sizes(spec, file_index)


def write_file(path, file_index, spec, **kw):
    """Write file file_index of spec at path (the caller names it and renames it into place);
    returns its index. hdf5 takes comm= to write one file from all ranks of a communicator."""
    return get(spec.format).write_file(path, file_index, spec, **kw)


def file_paths(spec, path):
    """Every file on disk that dataset file ``path`` (final or temporary name) stands for:
    itself, and for HDF5 volumes kept apart its companion files."""
    if spec.volumes and spec.volume_files:
        from dlio_mpi.formats import volumes
        return volumes.paths(spec, path)
    t = traits(spec.format)
    if t.companions:
        i = path.rfind(t.extension)
        return [path] + [path[:i] + ext + path[i + len(t.extension):] for ext in t.companions]
    return [path]


def write_memory(spec, stream=64 << 20):
    """Bytes a rank holds in memory at once while writing one file of spec (an upper
    estimate): the largest sample (mean + 8 stdev), the buffer its format writes from (the
    whole file for npy and npz, pieces of about `stream` bytes, at least one sample, for the
    others; a chunk of HDF5 volumes) and the per-sample tables."""
    n = spec.samples_per_file
    big = int(spec.record_length + 8 * spec.record_length_stdev) + 4096
    whole = n * big
    piece = max(big, min(whole, stream))
    if spec.volumes:
        import numpy as np
        hold = 2 * max(int(np.prod(v[2])) * np.dtype(v[1]).itemsize for v in spec.volumes)
    elif spec.format == "npy":      # written from one array: the whole file
        hold = whole
    elif spec.format == "npz":
        hold = {"stacked": 2 * whole, "shot": 3 * big}.get(spec.npz_layout, whole + big)
    elif spec.format in ("csv", "hdf5"):
        hold = 2 * piece
    else:
        hold = piece
    return hold + 32 * n


def index_file(path, spec, file_index=None, **kw):
    """The index of the file at path, from its headers; FormatError if it is not a complete file
    of spec's format and sample count. Given file_index, also checks that the samples have the
    sizes spec draws for that file (raw files need it when sizes vary)."""
    idx = get(spec.format).index_file(path, spec, file_index, **kw)
    if file_index is not None:
        want = content.sample_sizes(spec, file_index)
        if (idx.sizes != want).any():
            i = int((idx.sizes != want).argmax())
            raise FormatError(path, f"sample {i} has {idx.sizes[i]} bytes, expected {want[i]} "
                                    f"for file {file_index} of this spec (another dataset?)")
    return idx


def layout(spec, file_index):
    """The index a file of spec will have, computed without I/O (raw, tfrecord, npy, csv)."""
    mod = get(spec.format)
    if not hasattr(mod, "layout"):
        raise ValueError(f"{spec.format}: the index depends on the writer; use index_file")
    return mod.layout(spec, file_index)


def sample_bytes(spec, file_index, sample_index):
    return get(spec.format).sample_bytes(spec, file_index, sample_index)


def encoded_sample(spec, file_index, sample_index):
    return get(spec.format).encoded_sample(spec, file_index, sample_index)


def sample_value(spec, file_index, sample_index):
    return get(spec.format).sample_value(spec, file_index, sample_index)

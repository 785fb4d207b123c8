"""HDF5 volumes: files holding N-D datasets of one shape (spec.volume_shape), each chunked in
its own chunk shape and compressed or not, read as crops (spec.crop_shape) at seeded random
positions, as a field-of-view trainer reads a volume (flood-filling networks read 49^3 crops
of an image and a label volume).

A sample is a crop: sample k of file i is the box at crop_start(spec, i, k) of every volume,
read in the order the volumes are listed. A chunk's content is seeded random bytes for the
first `fill` share of its bytes and zeros after, so that a compressed chunk is about that share
of its size (data that compresses like the real volumes: an image's chunks little, a label
volume's a lot).

A volume may be kept in a companion file (spec.volume_files, dataset.volumes[i].file), as
applications keep their image and label volumes in files of their own: the dataset's file
``img_0000000_of_1.h5`` holds the volumes without a file, ``img_0000000_of_1.raw.h5`` those of
file "raw" (the same name with the key before the extension, also for the temporary names
generation writes). Op-log file ids of companions: dlio_mpi.run.oplog_format.companion_id(k, the
dataset file's id), k counting the companion keys from 1 in the order the volumes name them
(dlio_mpi_analysis.loading.oplog names them back)."""
import numpy as np

from dlio_mpi.formats._files import file_size, open_file
from dlio_mpi.formats.spec import FileIndex, FormatError
from dlio_mpi.run.oplog_format import companion_id

CROP_SALT = 0xC0
EXT = ".h5"


def file_keys(spec):
    """The companion keys in the order the volumes name them ("" not included)."""
    return list(dict.fromkeys(k for k in spec.volume_files if k))


def companion(path, key):
    """The path of companion ``key`` of the dataset file at ``path`` (a final or a temporary
    name): the key goes before the last ``.h5``; ``path`` itself for the key ""."""
    if not key:
        return path
    i = path.rfind(EXT)
    return f"{path[:i]}.{key}{path[i:]}"


def paths(spec, path):
    """Every file of the dataset file at ``path``: itself, then its companions."""
    return [path] + [companion(path, k) for k in file_keys(spec)]


def volume_file(spec, v):
    """The key of the file volume v is kept in ("": the dataset's file)."""
    return spec.volume_files[v] if spec.volume_files else ""


def volume_file_id(spec, v, file_id):
    """The op-log file id of volume v's file, for the dataset file of id ``file_id``."""
    key = volume_file(spec, v)
    if not key:
        return file_id
    return companion_id(file_keys(spec).index(key) + 1, file_id)


def volume_dtype(vol):
    return np.dtype(vol[1])


def crop_bytes(spec):
    """Bytes of one sample: its crop of every volume."""
    cells = int(np.prod(spec.crop_shape))
    return sum(cells * volume_dtype(v).itemsize for v in spec.volumes)


def crop_start(spec, file_index, sample):
    """Where sample `sample` of file `file_index` lies: the crop's first index per dimension,
    at a seeded random position, or (spec.crop_placement "tiled") the sample-th of the crops
    that tile the volume, in row-major order of the tiles (again from the first after the
    last): a volume cut into parts, as ranks that share each sample by a domain decomposition
    read it, each its own part."""
    if spec.crop_placement == "tiled":
        tiles = np.asarray(spec.volume_shape) // np.asarray(spec.crop_shape)
        at = np.unravel_index(sample % int(np.prod(tiles)), tuple(tiles))
        return (np.asarray(at) * np.asarray(spec.crop_shape)).astype(np.int64)
    rng = np.random.default_rng([spec.seed, file_index, sample, CROP_SALT])
    top = np.asarray(spec.volume_shape) - np.asarray(spec.crop_shape)
    return rng.integers(0, top + 1).astype(np.int64)


def _chunk(spec, file_index, v, index, shape, dtype):
    """The content of chunk `index` (flat) of volume v: seeded bytes, then zeros."""
    nbytes = int(np.prod(shape)) * dtype.itemsize
    fill = int(round(spec.volumes[v][4] * nbytes))
    raw = np.zeros(nbytes, np.uint8)
    if fill:
        rng = np.random.default_rng([spec.seed, file_index, v, index, 0xF1])
        raw[:fill] = rng.integers(0, 256, fill, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


def write_file(path, file_index, spec, comm=None):
    """Write the file's volumes chunk by chunk in row-major chunk order, each into its file
    (path, or a companion of it), by one rank: with a communicator, rank 0 writes and the
    others return None. The chunk cache is off, so that each chunk reaches the file when it is
    written and the chunks lie in the file in row-major order, as in a volume written whole in
    order (with a cache, HDF5 keeps the partly written edge chunks longer and stores them
    after their neighbours, which changes the order in which a crop's reads meet them)."""
    # imported on every rank: it registers the lzf filter with libhdf5, which the native
    # engine's reads of an lzf dataset need in this process
    import h5py  # noqa: F401

    from dlio_mpi.files import safe_files

    if comm is not None and comm.Get_rank() != 0:
        return None
    shape = tuple(spec.volume_shape)
    for key in [""] + file_keys(spec):
        with safe_files.create_hdf5(companion(path, key), libver=spec.libver,
                                    rdcc_nbytes=0) as f:
            for v, (name, dtype, chunks, compression, _) in enumerate(spec.volumes):
                if volume_file(spec, v) != key:
                    continue
                dt = np.dtype(dtype)
                kw = {} if compression == "none" else {"compression": compression}
                d = f.create_dataset(name, shape=shape, dtype=dt, chunks=tuple(chunks), **kw)
                grid = [-(-s // c) for s, c in zip(shape, chunks)]
                for flat, cell in enumerate(np.ndindex(*grid)):
                    box = tuple(slice(g * c, min((g + 1) * c, s))
                                for g, c, s in zip(cell, chunks, shape))
                    d[box] = _chunk(spec, file_index, v, flat,
                                    tuple(b.stop - b.start for b in box), dt)
    return index_file(path, spec)


def index_file(path, spec, file_index=None):
    """The file's index (a crop per sample); FormatError unless it holds the spec's volumes
    in their shapes, types, chunks and compression."""
    import h5py

    size = file_size(path)
    for v, (name, dtype, chunks, compression, _) in enumerate(spec.volumes):
        where = companion(path, volume_file(spec, v))
        with open_file(where) as f:
            d = f.get(name)
            if not isinstance(d, h5py.Dataset):
                raise FormatError(where, f"no volume {name!r}")
            want = (tuple(spec.volume_shape), np.dtype(dtype), tuple(chunks),
                    None if compression == "none" else compression)
            have = (d.shape, d.dtype, d.chunks, d.compression)
            if have != want:
                raise FormatError(where, f"volume {name!r} is {have}, expected {want} "
                                         "(another dataset?)")
    n = spec.samples_per_file
    return FileIndex("hdf5", size, np.full(n, crop_bytes(spec), np.int64),
                     np.full(n, -1, np.int64), np.zeros(n, np.int64), exact=False,
                     compressed=any(v[3] != "none" for v in spec.volumes),
                     rows=np.arange(n, dtype=np.int64), dataset=spec.volumes[0][0])

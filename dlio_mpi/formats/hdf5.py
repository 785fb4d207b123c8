"""HDF5 files through h5py: one 2-D dataset (spec.dataset) of one row per sample, rows of one
size drawn per file; contiguous, or chunked (spec.chunk_rows whole rows per chunk, or one row
cut into chunks of spec.chunk_elems elements), optionally gzip or lzf compressed. A file may hold all samples of the dataset (the "one shared file" layout, then
written by all ranks of a communicator with the MPI-IO driver).

A sample may have further fields (spec.fields, an image's label), each a row of a dataset of
its own beside the rows' dataset: a sample's bytes are its row's, then its fields' in order.

A reader addresses samples by row and lets libhdf5 read; the index gives each sample's row, and
for an uncompressed contiguous dataset also the row's byte range in the file."""
import numpy as np

from dlio_mpi.run import collective
from dlio_mpi.run import sysinfo
from dlio_mpi.formats import content
from dlio_mpi.formats._files import check_count, file_size, open_error, open_file  # noqa: F401
from dlio_mpi.formats.spec import FileIndex, FormatError
from dlio_mpi.formats.traits import FormatTraits

NAME = "hdf5"
EXTENSION = ".h5"
TRAITS = FormatTraits(NAME, EXTENSION, library="hdf5", compressions=("gzip", "lzf"),
                      written_first=True, chunked=True)


def sample_bytes(spec, file_index, sample_index):
    """The row's data bytes."""
    return content.sample_data(spec, file_index, sample_index)


encoded_sample = sample_bytes


def sample_value(spec, file_index, sample_index):
    """The row as h5py gives it: a 1-D array of spec.dtype (without its fields)."""
    data = sample_bytes(spec, file_index, sample_index)
    return data[:len(data) - spec.field_bytes].view(np.dtype(spec.dtype))


def chunk_shape(spec, row_elems):
    """The dataset's chunk shape for rows of row_elems elements, or None (contiguous)."""
    if not (spec.chunked or spec.compression != "none"):
        return None
    if spec.chunk_elems:
        if spec.chunk_elems > row_elems:
            raise ValueError(f"a chunk of {spec.chunk_elems} elements is larger than a row of "
                             f"{row_elems}")
        return (1, spec.chunk_elems)
    return (min(spec.chunk_rows, spec.samples_per_file), row_elems)


def create_options(spec, row_elems):
    """Keyword arguments of h5py's create_dataset for spec's layout and filters."""
    kw = {}
    shape = chunk_shape(spec, row_elems)
    if shape is not None:
        kw["chunks"] = shape
    if spec.compression == "gzip":
        kw.update(compression="gzip", compression_opts=spec.compression_level)
    elif spec.compression == "lzf":
        kw.update(compression="lzf")
    return kw


def _rows(spec, file_index, lo, hi, row_bytes):
    """Samples [lo, hi): the rows' data, then each field's (a list of arrays of hi - lo
    rows, shaped as the datasets are)."""
    total = row_bytes + spec.field_bytes
    buf = np.empty((hi - lo) * total, dtype=np.uint8)
    content.fill(spec.content, file_index, np.arange(lo, hi), np.full(hi - lo, total), buf)
    whole = buf.reshape(hi - lo, total)
    out = [np.ascontiguousarray(whole[:, :row_bytes]).view(np.dtype(spec.dtype))]
    at = row_bytes
    for _, nbytes, dtype, _ in spec.fields:
        part = np.ascontiguousarray(whole[:, at:at + nbytes]).view(np.dtype(dtype))
        out.append(part.reshape(hi - lo) if part.shape[1] == 1 else part)
        at += nbytes
    return out


def _field_datasets(f, spec, n):
    """Create the fields' datasets in the open h5py file f, of n rows each."""
    made = []
    for name, nbytes, dtype, chunk_rows in spec.fields:
        dt = np.dtype(dtype)
        shape = (n,) if nbytes == dt.itemsize else (n, nbytes // dt.itemsize)
        kw = {"chunks": (min(chunk_rows, n),) + shape[1:]} if chunk_rows else {}
        made.append(f.create_dataset(name, shape=shape, dtype=dt, **kw))
    return made


def rank_rows(n, chunk, ranks, rank):
    """[lo, hi) of the rows rank writes: whole chunks, as evenly as possible."""
    chunks = -(-n // chunk)
    lo = chunks * rank // ranks * chunk
    hi = chunks * (rank + 1) // ranks * chunk
    return min(lo, n), min(hi, n)


def write_file(path, file_index, spec, comm=None, block_bytes=64 << 20):
    if spec.volumes:
        from dlio_mpi.formats import volumes
        return volumes.write_file(path, file_index, spec, comm)
    if spec.vlen:
        return _write_sequences_file(path, file_index, spec, comm)
    return _write_rows_file(path, file_index, spec, comm, block_bytes)


def _write_sequences_file(path, file_index, spec, comm=None):
    """A file of variable-length samples (spec.vlen), written by one rank: libhdf5 keeps each
    sequence in its global heap as it is assigned, which its MPI-IO driver does not do
    collectively."""
    import h5py       # imported when HDF5 is used: it costs start-up time

    from dlio_mpi.files import safe_files

    if comm is not None and comm.Get_size() > 1:
        raise FormatError(path, "variable-length samples (dataset.hdf5_vlen) are written by "
                                "one rank: a file of a rank's own (io.layout multi)")
    # a sample's size counts its fields, as a row's does
    sizes = np.maximum(1, content.sample_sizes(spec, file_index) - spec.field_bytes)
    n = spec.samples_per_file
    data = np.empty(int(sizes.sum()), np.uint8)
    content.fill(spec.content, file_index, np.arange(n), sizes, data)
    ends = np.cumsum(sizes)
    with safe_files.create_hdf5(path, libver=spec.libver) as f:
        d = f.create_dataset(spec.dataset, shape=(n,), dtype=h5py.vlen_dtype(np.uint8))
        fields = _field_datasets(f, spec, n)
        for i in range(n):
            d[i] = data[ends[i] - sizes[i]:ends[i]]
        if fields:
            for ds, part in zip(fields, _rows(spec, file_index, 0, n, 0)[1:]):
                ds[:] = part
    return index_file(path, spec, file_index)


def _write_rows_file(path, file_index, spec, comm=None, block_bytes=64 << 20):
    """Write the file, in blocks of about block_bytes. With a communicator of several ranks
    (collective: every rank calls it with the same path), every rank writes its share of whole
    chunks of rows through the MPI-IO driver, all in the same number of collective writes, and
    every rank gets the index (built by rank 0)."""
    import h5py       # imported when HDF5 is used: it costs start-up time

    from dlio_mpi.files import safe_files

    sizes = content.sample_sizes(spec, file_index)
    n, row_bytes = spec.samples_per_file, int(sizes[0]) - spec.field_bytes
    elems = row_bytes // spec.itemsize
    opts = create_options(spec, elems)
    parallel = comm is not None and comm.Get_size() > 1
    if not parallel:
        with safe_files.create_hdf5(path, libver=spec.libver) as f:
            d = f.create_dataset(spec.dataset, shape=(n, elems), dtype=np.dtype(spec.dtype),
                                 **opts)
            every = [d] + _field_datasets(f, spec, n)
            step = max(1, block_bytes // row_bytes)
            if "chunks" in opts:
                step = max(opts["chunks"][0], step // opts["chunks"][0] * opts["chunks"][0])
            for lo in range(0, n, step):
                hi = min(n, lo + step)
                for ds, data in zip(every, _rows(spec, file_index, lo, hi, row_bytes)):
                    ds[lo:hi] = data
        return index_file(path, spec)
    error = None
    try:
        with safe_files.create_hdf5(path, comm, libver=spec.libver) as f:
            d = f.create_dataset(spec.dataset, shape=(n, elems), dtype=np.dtype(spec.dtype),
                                 **opts)
            every = [d] + _field_datasets(f, spec, n)
            chunk = opts["chunks"][0] if "chunks" in opts else 1
            ranks = comm.Get_size()
            lo, hi = rank_rows(n, chunk, ranks, comm.Get_rank())
            step = max(chunk, max(1, block_bytes // row_bytes) // chunk * chunk)
            chunks = -(-n // chunk)
            most = -(-chunks // ranks) * chunk              # rows of the largest share
            dxpl = h5py.h5p.create(h5py.h5p.DATASET_XFER)
            dxpl.set_dxpl_mpio(h5py.h5fd.MPIO_COLLECTIVE)
            romio = sysinfo.romio_in_use()
            for a in range(lo, lo + most, step):   # the same number of collective writes on all
                b = min(hi, a + step) if error is None else a      # after an error: nothing
                parts = _rows(spec, file_index, a, b, row_bytes) if b > a else \
                    [np.zeros((1,) + ds.shape[1:], dtype=ds.dtype) for ds in every]
                for ds, data in zip(every, parts):    # each dataset in one collective write
                    fspace = ds.id.get_space()
                    mspace = h5py.h5s.create_simple(data.shape)
                    if b > a:
                        fspace.select_hyperslab((a,) + (0,) * (ds.ndim - 1),
                                                (b - a,) + ds.shape[1:])
                    else:
                        fspace.select_none()
                        mspace.select_none()
                    try:
                        ds.id.write(mspace, fspace, data, dxpl=dxpl)
                    except Exception as e:  # noqa: BLE001 - keep joining the collective writes
                        error = error or f"rank {comm.Get_rank()}: writing {path}: {e}"
                        if romio:           # ROMIO cannot finish the call the others are in
                            collective.end_hdf5_job(comm, error, path)
    except Exception as e:          # agree on the outcome: no rank may be left waiting
        error = error or f"rank {comm.Get_rank()}: writing {path}: {e}"
    collective.agree(comm, error.splitlines()[0] if error else None)
    idx, error = None, None
    if comm.Get_rank() == 0:
        try:
            idx = index_file(path, spec)
        except FormatError as e:
            error = e
    idx, error = comm.bcast((idx, error), root=0)
    if error:
        raise error
    return idx


def _sequences_index(path, spec, file_index, d, size):
    """The index of a file of variable-length samples: each sample's bytes lie in libhdf5's
    global heap (no range of their own); their sizes are those spec draws for the file."""
    import h5py

    if not spec.vlen or h5py.check_vlen_dtype(d.dtype) != np.dtype(np.uint8) or d.ndim != 1:
        raise FormatError(path, f"dataset {spec.dataset!r} is {d.dtype} of shape {d.shape}, "
                                f"expected {'1-D variable-length uint8' if spec.vlen else '2-D'}"
                                " (dataset.hdf5_vlen)")
    n = d.shape[0]
    check_count(path, n, spec, f"rows in dataset {spec.dataset!r}")
    sizes = content.sample_sizes(spec, file_index if file_index is not None else 0)
    return FileIndex(NAME, size, sizes, np.full(n, -1, np.int64), np.zeros(n, np.int64),
                     exact=False, rows=np.arange(n, dtype=np.int64), dataset=spec.dataset)


def index_file(path, spec, file_index=None):
    if spec.volumes:
        from dlio_mpi.formats import volumes
        return volumes.index_file(path, spec, file_index)
    import h5py       # imported when HDF5 is used: it costs start-up time

    size = file_size(path)
    with open_file(path) as f:
        superblock = f.id.get_create_plist().get_version()[0]
        if (superblock >= 2) != (spec.libver == "latest"):
            raise FormatError(path, f"superblock version {superblock}: not the file format of "
                                    f"libver={spec.libver} (another dataset?)")
        d = f.get(spec.dataset)
        if not isinstance(d, h5py.Dataset):
            raise FormatError(path, f"no dataset {spec.dataset!r}")
        if spec.vlen or h5py.check_vlen_dtype(d.dtype) is not None:
            return _sequences_index(path, spec, file_index, d, size)
        want = np.dtype(spec.dtype)
        if d.dtype != want or d.ndim != 2:
            raise FormatError(path, f"dataset {spec.dataset!r} is {d.dtype} of shape {d.shape}, "
                                    f"expected 2-D {want}")
        n, elems = d.shape
        check_count(path, n, spec, f"rows in dataset {spec.dataset!r}")
        row_bytes = elems * want.itemsize
        try:
            expect = chunk_shape(spec, elems)
        except ValueError as e:
            raise FormatError(path, str(e)) from None
        if d.chunks != expect and not (expect is not None and d.chunks is not None
                                       and expect[0] >= n and d.chunks[1:] == expect[1:]):
            raise FormatError(path, f"dataset {spec.dataset!r} has chunks {d.chunks}, this "
                                    f"dataset's spec makes {expect} (another dataset?)")
        for name, nbytes, dtype, chunk_rows in spec.fields:
            fd = f.get(name)
            want = (n,) if nbytes == np.dtype(dtype).itemsize \
                else (n, nbytes // np.dtype(dtype).itemsize)
            if not isinstance(fd, h5py.Dataset) or fd.shape != want \
                    or fd.dtype != np.dtype(dtype) or bool(fd.chunks) != bool(chunk_rows):
                raise FormatError(path, f"no field dataset {name!r} of {np.dtype(dtype)} "
                                        f"shaped {want}{' chunked' if chunk_rows else ''}")
        compressed = bool(d.compression) or bool(d.id.get_create_plist().get_nfilters())
        offsets = np.full(n, -1, dtype=np.int64)
        lengths = np.zeros(n, dtype=np.int64)
        base = None if d.chunks is not None else d.id.get_offset()
        if spec.fields:
            base = None         # a sample's bytes lie in several datasets: no one range
        if base is not None and not compressed:
            offsets = base + row_bytes * np.arange(n, dtype=np.int64)
            lengths[:] = row_bytes
            if offsets[-1] + row_bytes > size:
                raise FormatError(path, f"dataset data runs past the end of the file ({size} "
                                        "bytes; truncated?)")
    return FileIndex(NAME, size, np.full(n, row_bytes + spec.field_bytes, dtype=np.int64),
                     offsets, lengths,
                     exact=base is not None and not compressed, compressed=compressed,
                     rows=np.arange(n, dtype=np.int64), dataset=spec.dataset)

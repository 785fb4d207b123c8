"""Small file helpers shared by the format modules."""
import errno as errnos
import io
import os

import numpy as np
from numpy.lib import format as npformat

from dlio_mpi.formats.spec import FormatError


def file_size(path):
    try:
        return os.stat(path).st_size
    except OSError as e:
        raise FormatError(path, f"cannot stat: {e.strerror or e}") from None


def open_read(path):
    try:
        return os.open(path, os.O_RDONLY)
    except OSError as e:
        raise FormatError(path, f"cannot open: {e.strerror or e}") from None


def pread_exact(fd, path, offset, n):
    """n bytes at offset, or FormatError naming where the file ends."""
    data = os.pread(fd, n, offset)
    if len(data) != n:
        raise FormatError(path, f"ends at {offset + len(data)} inside {n} bytes read at offset "
                                f"{offset} (truncated?)")
    return data


def check_count(path, n, spec, what):
    if n != spec.samples_per_file:
        raise FormatError(path, f"{n} {what}, expected {spec.samples_per_file} "
                                f"(samples_per_file)")


def npy_header(dtype, shape):
    """The header numpy.save writes for a C-ordered array of dtype and shape (format 1.0)."""
    buf = io.BytesIO()
    npformat.write_array_header_1_0(buf, {"descr": npformat.dtype_to_descr(np.dtype(dtype)),
                                          "fortran_order": False, "shape": tuple(shape)})
    return buf.getvalue()


def parse_npy_header(fp, path, where="file"):
    """(dtype, shape, fortran_order, header bytes) of the .npy stream fp, positioned at its start,
    or FormatError."""
    start = fp.tell()
    try:
        major, minor = npformat.read_magic(fp)
        if (major, minor) == (1, 0):
            shape, fortran, dtype = npformat.read_array_header_1_0(fp)
        elif major in (2, 3):
            shape, fortran, dtype = npformat.read_array_header_2_0(fp)
        else:
            raise ValueError(f"unsupported .npy version {major}.{minor}")
    except (ValueError, OSError, EOFError, SyntaxError) as e:
        raise FormatError(path, f"{where}: not a .npy array header ({e})") from None
    return dtype, shape, fortran, fp.tell() - start


def write_all(f, data):
    mv = memoryview(data).cast("B")
    while len(mv):
        n = f.write(mv)
        mv = mv[n:]


def open_file(path):
    """The HDF5 file at path, open for reading, or FormatError (one line) naming it."""
    import h5py

    try:
        return h5py.File(path, "r")
    except OSError as e:
        raise open_error(path, e) from None


def open_error(path, error):
    """The FormatError of an HDF5 file that h5py could not open: a file the system refused
    (permission, missing, a directory) is named by its errno; only a file that opened but is
    not HDF5 as far as libhdf5 can tell may be truncated."""
    code = getattr(error, "errno", None)
    if code in (errnos.EISDIR, errnos.ENOENT, errnos.EACCES, errnos.EPERM, errnos.ENOTDIR,
                errnos.ELOOP, errnos.ENAMETOOLONG):
        return FormatError(path, f"cannot open: {os.strerror(code)}")
    msg = str(error).splitlines()[0] if str(error) else type(error).__name__
    if code:
        return FormatError(path, f"not a readable HDF5 file ({msg})")
    return FormatError(path, f"not a readable HDF5 file ({msg}; truncated?)")


class OsFile:
    """A file read with os.pread: what the index readers read through when no opener of the
    run's engines is given."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_RDONLY)

    def size(self):
        return os.fstat(self.fd).st_size

    def pread(self, n, offset):
        return os.pread(self.fd, n, offset)

    def close(self):
        os.close(self.fd)

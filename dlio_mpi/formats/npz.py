"""NPZ files as numpy.savez (compression none) or numpy.savez_compressed (compression zip)
write them: sample i of a file is the member x_<i>.npy, a 1-D array of spec.dtype.

A stored member's range is its .npy bytes (header included), which numpy.load reads; a
compressed member's range is its deflated data, which a reader reads whole and inflates.
index_file takes the members from the zip central directory and computes each one's data offset
from its local header."""
import io
import os
import re
import struct
import zipfile

import numpy as np

from dlio_mpi.formats import content
from dlio_mpi.formats._files import (check_count, file_size, npy_header, open_read,
                                     parse_npy_header, pread_exact)
from dlio_mpi.formats.spec import FileIndex, FormatError

NAME = "npz"
EXTENSION = ".npz"
_LOCAL = struct.Struct("<4s5H3I2H")     # zip local file header, 30 bytes
_MEMBER = re.compile(r"x_(\d+)\.npy\Z")


def member_name(sample_index):
    return f"x_{sample_index}.npy"


def sample_bytes(spec, file_index, sample_index):
    """The array's data bytes."""
    return content.sample_data(spec, file_index, sample_index)


def sample_value(spec, file_index, sample_index):
    """The sample as numpy.load gives it: a 1-D array of spec.dtype."""
    return sample_bytes(spec, file_index, sample_index).view(np.dtype(spec.dtype))


def encoded_sample(spec, file_index, sample_index):
    """The member's .npy bytes (before any compression)."""
    data = sample_bytes(spec, file_index, sample_index)
    hdr = npy_header(spec.dtype, (len(data) // spec.itemsize,))
    return np.concatenate([np.frombuffer(hdr, dtype=np.uint8), data])


def write_file(path, file_index, spec):
    sizes = content.sample_sizes(spec, file_index)
    data = np.empty(int(sizes.sum()), dtype=np.uint8)
    content.fill(spec.seed, file_index, np.arange(len(sizes)), sizes, data)
    dtype = np.dtype(spec.dtype)
    ends = np.cumsum(sizes).tolist()
    arrays = {member_name(i)[:-4]: data[e - n:e].view(dtype)
              for i, (n, e) in enumerate(zip(sizes.tolist(), ends))}
    save = np.savez_compressed if spec.compression == "zip" else np.savez
    with open(path, "wb") as f:
        save(f, **arrays)
    return index_file(path, spec)


def _npy_header_at(fd, path, offset, limit, name):
    """Parse the .npy header of a stored member whose data starts at offset."""
    head = pread_exact(fd, path, offset, min(limit, 12))
    if len(head) < 10 or head[:6] != b"\x93NUMPY":
        raise FormatError(path, f"member {name}: not a .npy array at offset {offset}")
    if head[6] == 1:
        total = 10 + struct.unpack("<H", head[8:10])[0]
    else:
        total = 12 + struct.unpack("<I", head[8:12])[0]
    if total > limit:
        raise FormatError(path, f"member {name}: .npy header runs past the member")
    return parse_npy_header(io.BytesIO(pread_exact(fd, path, offset, total)), path,
                            f"member {name}")


def index_file(path, spec, file_index=None):
    size = file_size(path)
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as e:
        raise FormatError(path, f"not a readable zip archive ({e}; truncated?)") from None
    n = spec.samples_per_file
    by_sample = {}
    with zf:
        for info in zf.infolist():
            m = _MEMBER.match(info.filename)
            if not m or int(m.group(1)) >= n or int(m.group(1)) in by_sample:
                raise FormatError(path, f"unexpected member {info.filename!r} (expected "
                                        f"x_0.npy .. x_{n - 1}.npy)")
            by_sample[int(m.group(1))] = info
        check_count(path, len(by_sample), spec, "members")
        sizes = np.zeros(n, dtype=np.int64)
        offsets = np.zeros(n, dtype=np.int64)
        lengths = np.zeros(n, dtype=np.int64)
        compressed = False
        want = np.dtype(spec.dtype)
        fd = open_read(path)
        try:
            for i in range(n):
                info = by_sample[i]
                name = info.filename
                local = pread_exact(fd, path, info.header_offset, _LOCAL.size)
                fields = _LOCAL.unpack(local)
                if fields[0] != b"PK\x03\x04":
                    raise FormatError(path, f"member {name}: no local header at offset "
                                            f"{info.header_offset}")
                data_off = info.header_offset + _LOCAL.size + fields[-2] + fields[-1]
                if data_off + info.compress_size > size:
                    raise FormatError(path, f"member {name}: data at offset {data_off} runs past "
                                            f"the end of the file ({size} bytes; truncated?)")
                if info.compress_type == zipfile.ZIP_STORED:
                    dtype, shape, fortran, hlen = _npy_header_at(fd, path, data_off,
                                                                 info.file_size, name)
                    lengths[i] = info.file_size
                elif info.compress_type == zipfile.ZIP_DEFLATED:
                    compressed = True
                    try:
                        with zf.open(info) as member:
                            dtype, shape, fortran, hlen = parse_npy_header(member, path,
                                                                           f"member {name}")
                    except (zipfile.BadZipFile, OSError, EOFError) as e:
                        raise FormatError(path, f"member {name}: {e}") from None
                    lengths[i] = info.compress_size
                else:
                    raise FormatError(path, f"member {name}: unsupported zip compression "
                                            f"{info.compress_type}")
                if dtype != want or fortran or len(shape) != 1:
                    raise FormatError(path, f"member {name}: array of {dtype} shape {shape}, "
                                            f"expected a 1-D C-ordered {want} array")
                sizes[i] = shape[0] * dtype.itemsize
                if info.file_size != hlen + sizes[i]:
                    raise FormatError(path, f"member {name}: {info.file_size} bytes, expected "
                                            f"{hlen + sizes[i]} for shape {shape}")
                offsets[i] = data_off
        finally:
            os.close(fd)
    return FileIndex(NAME, size, sizes, offsets, lengths, exact=not compressed,
                     compressed=compressed)

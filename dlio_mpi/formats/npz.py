"""NPZ files as numpy.savez (compression none) or numpy.savez_compressed (compression zip)
write them: sample i of a file is the member x_<i>.npy, a 1-D array of spec.dtype.

A stored member's range is its .npy bytes (header included), which numpy.load reads; a
compressed member's range is its deflated data, which a reader reads whole and inflates.
index_file takes the members from the zip central directory and computes each one's data offset
from its local header: for a file as numpy.savez writes it with three preads and a parse of the
canonical .npy header, and otherwise through zipfile and numpy's header parser.""" 
import io
import os
import re
import struct
import zipfile

import numpy as np

from dlio_mpi.files import safe_files
from dlio_mpi.formats import content
from dlio_mpi.formats._files import (OsFile, check_count, file_size, npy_header, open_read,
                                     parse_npy_header, pread_exact)
from dlio_mpi.formats.spec import FileIndex, FormatError
from dlio_mpi.formats.traits import FormatTraits

NAME = "npz"
EXTENSION = ".npz"
# framing: a member's zip local header and name, and its npy header, about 128 bytes
TRAITS = FormatTraits(NAME, EXTENSION, compressions=("zip",), index_logged=True,
                      numpy_load=True, framing=128)
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
    if spec.npz_layout == "stacked":
        return _write_stacked(path, file_index, spec)
    if spec.npz_layout == "shot":
        return _write_shot(path, file_index, spec)
    sizes = content.sample_sizes(spec, file_index)
    data = np.empty(int(sizes.sum()), dtype=np.uint8)
    content.fill(spec.content, file_index, np.arange(len(sizes)), sizes, data)
    dtype = np.dtype(spec.dtype)
    ends = np.cumsum(sizes).tolist()
    arrays = {member_name(i)[:-4]: data[e - n:e].view(dtype)
              for i, (n, e) in enumerate(zip(sizes.tolist(), ends))}
    save = np.savez_compressed if spec.compression == "zip" else np.savez
    with safe_files.create(path) as f:
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


_EOCD = struct.Struct("<4s4H2IH")      # end of central directory record, 22 bytes
_CDIR = struct.Struct("<4s6H3I5H2I")    # central directory entry, 46 bytes
# the header numpy writes for a 1-D C-ordered array (any other goes to numpy's own parser)
_NPY_1D = re.compile(rb"\{'descr': '([<>|=]?[a-zA-Z]\d*)', 'fortran_order': False, "
                     rb"'shape': \((\d+),\), \} *\n")
_DTYPES = {}
_HEAD = 512                             # bytes read at a member: local header and .npy header


def _fast_index(path, spec, opener=None):
    """The index of a file as numpy.savez writes it (stored members, no zip64 central
    directory, no archive comment), read with two preads and one per member, no zipfile;
    None for anything else, which index_file's general path then reads (and reports on).
    opener(path) gives the file (size, pread, close): os calls by default, the native engine
    when the reads are to be in the op log."""
    n = spec.samples_per_file
    try:
        fd = (opener or OsFile)(path)
    except OSError:
        return None
    try:
        size = fd.size()
        if size < _EOCD.size:
            return None
        sig, disk, cd_disk, entries, total, cd_size, cd_off, comment = _EOCD.unpack(
            fd.pread(_EOCD.size, size - _EOCD.size))
        if (sig != b"PK\x05\x06" or disk or cd_disk or comment or entries != total
                or entries != n or cd_off + cd_size + _EOCD.size != size):
            return None
        cd = fd.pread(cd_size, cd_off)
        if len(cd) != cd_size:
            return None
        want = np.dtype(spec.dtype)
        sizes = np.zeros(n, dtype=np.int64)
        offsets = np.zeros(n, dtype=np.int64)
        lengths = np.zeros(n, dtype=np.int64)
        seen = bytearray(n)
        pos = 0
        for _ in range(n):
            if pos + _CDIR.size > cd_size:
                return None
            (sig, _, _, flags, method, _, _, _, csize, usize, name_len, extra_len, comm_len,
             _, _, _, local) = _CDIR.unpack_from(cd, pos)
            name = cd[pos + _CDIR.size:pos + _CDIR.size + name_len]
            pos += _CDIR.size + name_len + extra_len + comm_len
            if (sig != b"PK\x01\x02" or method != zipfile.ZIP_STORED or flags & 0x41
                    or csize != usize or usize == 0xFFFFFFFF or local == 0xFFFFFFFF
                    or not (name.startswith(b"x_") and name.endswith(b".npy"))
                    or not name[2:-4].isdigit()):
                return None
            i = int(name[2:-4])
            if i >= n or seen[i] or name[2:3] == b"0" and len(name) > 7:
                return None
            seen[i] = 1
            head = fd.pread(_HEAD, local)
            if len(head) < _LOCAL.size or head[:4] != b"PK\x03\x04":
                return None
            fields = _LOCAL.unpack_from(head)
            start = _LOCAL.size + fields[-2] + fields[-1]
            m = _NPY_1D.match(head, start + 10)
            if (head[start:start + 8] != b"\x93NUMPY\x01\x00" or m is None
                    or m.end() != start + 10 + int.from_bytes(head[start + 8:start + 10],
                                                              "little")):
                return None
            descr = m.group(1)
            dtype = _DTYPES.get(descr)
            if dtype is None:
                dtype = _DTYPES[descr] = np.dtype(descr.decode())
            nbytes = int(m.group(2)) * dtype.itemsize
            if dtype != want or usize != m.end() - start + nbytes \
                    or local + start + usize > size:
                return None
            sizes[i], offsets[i], lengths[i] = nbytes, local + start, usize
        if pos != cd_size:
            return None
    except (OSError, ValueError, TypeError, struct.error):
        return None
    finally:
        fd.close()
    return FileIndex(NAME, size, sizes, offsets, lengths, exact=True, compressed=False)


def _write_stacked(path, file_index, spec):
    """A stacked file, as the DLIO benchmark writes NPZ: member x holds the file's samples as
    columns (one size per file), y their labels."""
    from dlio_mpi.readers.numpy_reads import stacked_arrays

    sizes = content.sample_sizes(spec, file_index)
    n, row = spec.samples_per_file, int(sizes[0])
    dtype = np.dtype(spec.dtype)
    arrays = stacked_arrays(row // dtype.itemsize, n, dtype)
    data = np.empty(n * row, dtype=np.uint8)
    content.fill(spec.content, file_index, np.arange(n), np.full(n, row), data)
    arrays["x"][:] = data.view(dtype).reshape(n, row // dtype.itemsize).T
    with safe_files.create(path) as f:
        np.savez(f, **arrays)
    return index_file(path, spec)


def _stacked_index(path, spec):
    size = file_size(path)
    n = spec.samples_per_file
    try:
        with zipfile.ZipFile(path) as zf:
            names = sorted(zf.namelist())
            if names != ["x.npy", "y.npy"]:
                raise FormatError(path, f"members {names}, expected x.npy and y.npy (stacked)")
            with zf.open("x.npy") as x:
                dtype, shape, _, _ = parse_npy_header(x, path, "member x.npy")
    except (OSError, zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as e:
        raise FormatError(path, f"not a readable stacked NPZ file ({e}; truncated?)") from None
    if dtype != np.dtype(spec.dtype) or len(shape) != 2 or shape[1] != n:
        raise FormatError(path, f"x is {dtype} of shape {shape}, expected {spec.dtype} "
                                f"(elements, {n})")
    nbytes = shape[0] * dtype.itemsize
    return FileIndex(NAME, size, np.full(n, nbytes, np.int64), np.full(n, -1, np.int64),
                     np.zeros(n, np.int64), exact=False)


def _write_shot(path, file_index, spec):
    """One FRNN shot (numpy_reads.shot_arrays) holding sample 0's bytes as its signals."""
    from dlio_mpi.readers.numpy_reads import shot_arrays

    with safe_files.create(path) as f:
        np.savez(f, **shot_arrays(content.sample_data(spec, file_index, 0)))
    return index_file(path, spec, file_index)


def _shot_index(path, spec, file_index):
    """A shot file: its four members, and the size the sample's shot file has (the signals'
    bytes are pickled, so their range is not given: the load reads the file as numpy does)."""
    from dlio_mpi.readers.numpy_reads import SHOT_MEMBERS, shot_reads

    if file_index is None:
        raise FormatError(path, "a shot file is indexed with its file number")
    size = file_size(path)
    n = int(content.sample_sizes(spec, file_index)[0])
    try:
        with zipfile.ZipFile(path) as zf:
            names = sorted(zf.namelist())
    except (OSError, zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as e:
        raise FormatError(path, f"not a readable shot NPZ file ({e}; truncated?)") from None
    if names != sorted(f"{m}.npy" for m in SHOT_MEMBERS):
        raise FormatError(path, f"members {names}, expected those of a shot "
                                f"({', '.join(SHOT_MEMBERS)})")
    want = shot_reads(n)[0]
    if size != want:
        raise FormatError(path, f"{size} bytes, a shot of a {n}-byte sample has {want}")
    return FileIndex(NAME, size, np.array([n], np.int64), np.array([-1], np.int64),
                     np.zeros(1, np.int64), exact=False)


def index_file(path, spec, file_index=None, opener=None):
    """The FileIndex of an NPZ file: the fast path for files as numpy.savez writes them (its
    reads through opener, see _fast_index), the general one (zipfile, compressed members,
    every check with its message) otherwise; a stacked file's (x and y); a shot file's."""
    if spec.npz_layout == "stacked":
        return _stacked_index(path, spec)
    if spec.npz_layout == "shot":
        return _shot_index(path, spec, file_index)
    fast = _fast_index(path, spec, opener)
    return fast if fast is not None else _general_index(path, spec)


def _general_index(path, spec):
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

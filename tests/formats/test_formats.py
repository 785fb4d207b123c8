"""Dataset formats: files read back by their real readers hold the expected deterministic
content, the index's byte ranges hold exactly each sample, index_file agrees with write_file,
sizes follow the configured distribution, damaged or foreign files raise FormatError, and the
transfer-size cutter is exact."""
import csv
import io
import os
import struct
import zlib

import crc32c
import h5py
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlio_mpi import formats
from dlio_mpi.formats import FileIndex, FormatError, FormatSpec, content, cut_ranges, tfrecord
from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

FILE = 2   # a file index other than 0, so that the file index takes part in sizes and content

CASES = {
    "raw": dict(format="raw", samples_per_file=9, record_length=3000, record_length_stdev=700),
    "raw-fixed": dict(format="raw", samples_per_file=4, record_length=4096),
    "npy-one": dict(format="npy", samples_per_file=1, record_length=5000,
                    record_length_stdev=1000, dtype="float32"),
    "npy-rows": dict(format="npy", samples_per_file=6, record_length=2048,
                     record_length_stdev=300, dtype="int16"),
    "npz": dict(format="npz", samples_per_file=7, record_length=3000, record_length_stdev=700),
    "npz-big": dict(format="npz", samples_per_file=2, record_length=content.BLOCK * 2 + 96,
                    dtype="float64"),
    "npz-zip": dict(format="npz", samples_per_file=5, record_length=3000, compression="zip"),
    "npz-many": dict(format="npz", samples_per_file=40, record_length=800,
                     record_length_stdev=300, dtype="int64"),
    "tfrecord": dict(format="tfrecord", samples_per_file=11, record_length=2500,
                     record_length_stdev=800),
    "hdf5": dict(format="hdf5", samples_per_file=10, record_length=1024, dtype="float32"),
    "hdf5-chunked": dict(format="hdf5", samples_per_file=10, record_length=1000, chunked=True,
                         chunk_rows=3),
    "hdf5-gzip": dict(format="hdf5", samples_per_file=7, record_length=900,
                      record_length_stdev=200, compression="gzip", chunk_rows=2),
    "hdf5-lzf": dict(format="hdf5", samples_per_file=4, record_length=1200, compression="lzf",
                     dtype="uint16"),
    "csv": dict(format="csv", samples_per_file=8, record_length=2000, record_length_stdev=400),
    "hdf5-gzip-fill": dict(format="hdf5", samples_per_file=6, record_length=20000,
                           compression="gzip", chunk_rows=1, content_fill=0.25),
}


@pytest.fixture(params=sorted(CASES))
def written(request, tmp_path):
    """(spec, path, index returned by write_file) of one file of each case."""
    spec = FormatSpec(seed=11, **CASES[request.param])
    path = tmp_path / f"file{formats.extension(spec)}"
    idx = formats.write_file(str(path), FILE, spec)
    return spec, str(path), idx


# -- readers written here, independent of the package ---------------------------------------

def _mask(c):
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def parse_tfrecords(data):
    """Payloads of the TFRecord bytes data, checking both CRCs of every record."""
    out, pos = [], 0
    while pos < len(data):
        assert len(data) - pos >= 16, f"trailing {len(data) - pos} bytes at {pos}"
        (n,) = struct.unpack_from("<Q", data, pos)
        (lcrc,) = struct.unpack_from("<I", data, pos + 8)
        assert _mask(crc32c.crc32c(data[pos:pos + 8])) == lcrc, f"length CRC at {pos}"
        payload = data[pos + 12:pos + 12 + n]
        assert len(payload) == n, f"short payload at {pos}"
        (dcrc,) = struct.unpack_from("<I", data, pos + 12 + n)
        assert _mask(crc32c.crc32c(payload)) == dcrc, f"data CRC at {pos}"
        out.append(bytes(payload))
        pos += 16 + n
    return out


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def read_back(spec, path):
    """Each sample as the format's real reader returns it."""
    n = spec.samples_per_file
    if spec.format == "raw":
        data = read_bytes(path)
        sizes = formats.sample_sizes(spec, FILE)
        ends = np.cumsum(sizes)
        assert len(data) == ends[-1]
        return [data[e - s:e] for s, e in zip(sizes, ends)]
    if spec.format == "npy":
        arr = np.load(path)
        return [arr] if n == 1 else list(arr)
    if spec.format == "npz":
        with np.load(path) as z:
            assert sorted(z.files) == sorted(f"x_{i}" for i in range(n))
            return [z[f"x_{i}"] for i in range(n)]
    if spec.format == "tfrecord":
        return parse_tfrecords(read_bytes(path))
    if spec.format == "hdf5":
        with h5py.File(path, "r") as f:
            return list(f[spec.dataset][...])
    if spec.format == "csv":
        with open(path, newline="") as f:
            return [np.array([int(v) for v in row]) for row in csv.reader(f)]
    raise AssertionError(spec.format)


# -- content through the real readers -------------------------------------------------------

def test_real_reader_gets_expected_content(written):
    spec, path, idx = written
    got = read_back(spec, path)
    assert len(got) == spec.samples_per_file == idx.num_samples
    for i, g in enumerate(got):
        want = formats.sample_value(spec, FILE, i)
        if spec.format in ("raw", "tfrecord"):
            assert bytes(g) == bytes(want), f"sample {i}"
        elif spec.format == "csv":
            assert np.array_equal(g, want), f"sample {i}"
        else:
            assert g.dtype == np.dtype(spec.dtype) and g.shape == want.shape, f"sample {i}"
            assert g.tobytes() == want.tobytes(), f"sample {i}"
        assert len(formats.sample_bytes(spec, FILE, i)) == idx.sizes[i]


def test_content_is_deterministic_and_distinct():
    spec = FormatSpec(format="raw", samples_per_file=4, record_length=content.BLOCK + 777,
                      seed=5)
    a = formats.sample_bytes(spec, 3, 1)
    assert np.array_equal(a, formats.sample_bytes(spec, 3, 1))
    others = [formats.sample_bytes(spec, 3, 2), formats.sample_bytes(spec, 4, 1),
              formats.sample_bytes(spec.replace(seed=6), 3, 1)]
    for b in others:
        assert len(b) == len(a) and (a != b).mean() > 0.9
    # the second piece of a sample is no copy of its first
    assert not np.array_equal(a[:777], a[content.BLOCK:content.BLOCK + 777])
    # a sample made alone equals the same sample made among others
    buf = np.empty(3 * len(a), dtype=np.uint8)
    content.fill(5, 3, [0, 1, 2], [len(a)] * 3, buf)
    assert np.array_equal(buf[len(a):2 * len(a)], a)


@pytest.mark.parametrize("fill", [0.25, 0.5])
def test_content_fill_compresses_to_its_share(fill, tmp_path):
    """dataset.content_fill: each page that share random, the rest zeros: gzip stores it in
    about that share (random content hardly compresses), and samples stay distinct; a
    chunked HDF5 file through gzip takes about that share of its rows' bytes on disk."""
    spec = FormatSpec(format="raw", samples_per_file=4, record_length=256 * 1024, seed=5,
                      content_fill=fill)
    a = formats.sample_bytes(spec, 3, 1)
    ratio = len(zlib.compress(a.tobytes(), 4)) / len(a)
    assert fill * 0.95 < ratio < fill * 1.1
    assert len(zlib.compress(formats.sample_bytes(spec.replace(content_fill=1.0), 3, 1)
                             .tobytes(), 4)) / len(a) > 0.99
    b = formats.sample_bytes(spec, 3, 2)
    assert (a != b).mean() > fill * 0.9
    h5 = FormatSpec(format="hdf5", samples_per_file=32, record_length=16384, seed=5,
                    compression="gzip", chunk_rows=1, content_fill=fill)
    path = tmp_path / "f.h5"
    formats.write_file(str(path), 0, h5)
    assert fill * 0.9 < os.path.getsize(path) / (32 * 16384) < fill * 1.15
    with h5py.File(path) as f:
        assert np.array_equal(f["records"][7], formats.sample_bytes(h5, 0, 7))


# -- the index -------------------------------------------------------------------------------

def test_index_file_equals_write_file(written):
    spec, path, idx = written
    assert isinstance(idx, FileIndex)
    assert idx.file_size == os.path.getsize(path)
    if spec.format == "raw" and spec.record_length_stdev:
        with pytest.raises(ValueError, match="need the file index"):
            formats.index_file(path, spec)
    else:
        assert formats.index_file(path, spec) == idx
    assert formats.index_file(path, spec, FILE) == idx
    if spec.format in ("raw", "tfrecord", "npy", "csv"):
        assert formats.layout(spec, FILE) == idx
    assert np.array_equal(idx.sizes, formats.sample_sizes(spec, FILE))


@pytest.mark.parametrize("case", sorted(c for c in CASES if c.startswith("npz")))
def test_npz_fast_index_equals_the_general_one(case, tmp_path):
    """NPZ files as numpy writes them take the fast path, which gives what zipfile and numpy's
    header parser give; compressed ones take the general path."""
    from dlio_mpi.formats import npz

    spec = FormatSpec(seed=11, **CASES[case])
    path = str(tmp_path / "file.npz")
    idx = formats.write_file(path, FILE, spec)
    fast, general = npz._fast_index(path, spec), npz._general_index(path, spec)
    assert general == idx
    if spec.compression == "zip":
        assert fast is None
    else:
        assert fast == general
        with open(path, "r+b") as f:          # a comment after the archive: general path
            f.seek(0, 2)
            f.write(b"!")
        assert npz._fast_index(path, spec) is None


def test_index_ranges_hold_the_samples(written):
    spec, path, idx = written
    fd = os.open(path, os.O_RDONLY)
    try:
        for i in range(idx.num_samples):
            off, ln = idx.ranges([i])
            if spec.format == "hdf5" and not idx.exact:
                assert off[0] == -1 and idx.rows[i] == i
                continue
            got = os.pread(fd, int(ln[0]), int(off[0]))
            assert len(got) == ln[0], f"sample {i}: range past the end"
            want = formats.encoded_sample(spec, FILE, i)
            if idx.compressed:                                   # a deflated npz member
                assert zlib.decompress(got, -15) == want.tobytes(), f"sample {i}"
                continue
            assert got == want.tobytes(), f"sample {i}"
            value = formats.sample_value(spec, FILE, i)
            if spec.format == "npz":
                arr = np.load(io.BytesIO(got))
                assert arr.dtype == value.dtype and arr.tobytes() == value.tobytes()
            elif spec.format == "tfrecord":
                assert parse_tfrecords(got) == [value.tobytes()]
            elif spec.format == "csv":
                assert got.endswith(b"\n") and np.array_equal(
                    [int(v) for v in got.decode().strip().split(",")], value)
    finally:
        os.close(fd)
    assert idx.whole_file == (spec.format == "csv")
    assert idx.compressed == (spec.compression != "none")
    if spec.format == "hdf5":
        assert idx.dataset == spec.dataset and np.array_equal(idx.rows, np.arange(len(idx.rows)))
        assert idx.exact == (not spec.chunked and spec.compression == "none")
    else:
        assert idx.rows is None and idx.exact == (not idx.compressed)


def test_ranges_of_a_batch_and_equality_can_fail():
    spec = FormatSpec(format="tfrecord", samples_per_file=6, record_length=100,
                      record_length_stdev=30)
    idx = formats.layout(spec, 0)
    off, ln = idx.ranges([4, 1])
    assert list(off) == [idx.offsets[4], idx.offsets[1]] and list(ln) == [idx.lengths[4],
                                                                          idx.lengths[1]]
    assert idx != formats.layout(spec, 1)
    assert idx != formats.layout(spec.replace(format="raw"), 0)
    with pytest.raises(ValueError):
        idx.sizes[0] = 5                                   # indexes are read-only


# -- sizes -----------------------------------------------------------------------------------

def test_variable_sizes_follow_the_stdev():
    spec = FormatSpec(format="tfrecord", samples_per_file=4000, record_length=10000,
                      record_length_stdev=2000, seed=3)
    s = formats.sample_sizes(spec, 0)
    assert abs(s.mean() - 10000) < 4 * 2000 / np.sqrt(len(s))
    assert abs(s.std() - 2000) < 0.06 * 2000
    assert np.array_equal(s, formats.sample_sizes(spec, 0))                 # seeded
    assert not np.array_equal(s, formats.sample_sizes(spec, 1))             # per file
    assert not np.array_equal(s, formats.sample_sizes(spec.replace(seed=4), 0))
    fixed = formats.sample_sizes(spec.replace(record_length_stdev=0), 0)
    assert (fixed == 10000).all()
    wide = formats.sample_sizes(spec.replace(record_length=10, record_length_stdev=1000), 0)
    assert wide.min() == 1 and (wide == 1).mean() > 0.4                     # clipped at 1 byte


def test_row_formats_draw_one_size_per_file():
    spec = FormatSpec(format="hdf5", samples_per_file=5, record_length=4000,
                      record_length_stdev=800, dtype="float32")
    per_file = []
    for f in range(600):
        s = formats.sample_sizes(spec, f)
        assert (s == s[0]).all() and s[0] % 4 == 0
        per_file.append(s[0])
    per_file = np.array(per_file)
    assert abs(per_file.mean() - 4000) < 4 * 800 / np.sqrt(len(per_file))
    assert abs(per_file.std() - 800) < 0.15 * 800
    csv_sizes = formats.sample_sizes(spec.replace(format="csv", samples_per_file=50), 0)
    assert (csv_sizes % 4 == 0).all() and len(set(csv_sizes)) > 10


# -- damaged and foreign files -----------------------------------------------------------------

def _one_line(err, path):
    msg = str(err.value)
    assert isinstance(err.value, ValueError)
    assert path in msg and "\n" not in msg, msg
    return msg


@pytest.mark.parametrize("cut", ["half", "last byte"])
def test_truncated_file_raises(written, cut):
    spec, path, idx = written
    os.truncate(path, idx.file_size // 2 if cut == "half" else idx.file_size - 1)
    with pytest.raises(FormatError) as err:
        formats.index_file(path, spec, FILE)
    _one_line(err, path)


FOREIGN = {"raw": "tfrecord", "npy": "npz", "npz": "npy", "tfrecord": "raw", "hdf5": "npz",
           "csv": "raw"}


def test_file_of_another_format_raises(written, tmp_path):
    spec, path, idx = written
    other = FormatSpec(format=FOREIGN[spec.format], samples_per_file=spec.samples_per_file,
                       record_length=spec.record_length)
    foreign = str(tmp_path / "foreign.dat")
    formats.write_file(foreign, FILE, other)
    with pytest.raises(FormatError) as err:
        formats.index_file(foreign, spec, FILE if spec.format == "raw" else None)
    _one_line(err, foreign)


def test_tfrecord_errors_say_where(tmp_path):
    spec = FormatSpec(format="tfrecord", samples_per_file=5, record_length=300)
    path = str(tmp_path / "a.tfrecord")
    idx = formats.write_file(path, 0, spec)
    raw = str(tmp_path / "b.bin")
    formats.write_file(raw, 0, spec.replace(format="raw"))
    with pytest.raises(FormatError, match=r"bad length CRC at offset 0\b"):
        tfrecord.index_file(raw, spec)
    with pytest.raises(FormatError, match=r"5 records, expected 6"):
        formats.index_file(path, spec.replace(samples_per_file=6))
    with open(path, "r+b") as f:                       # damage one payload byte of record 3
        f.seek(int(idx.offsets[3]) + 20)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0xFF]))
    assert formats.index_file(path, spec) == idx       # headers only: not seen
    with pytest.raises(FormatError, match=rf"bad data CRC in record at offset {idx.offsets[3]}"):
        formats.index_file(path, spec, check_data=True)
    os.truncate(path, int(idx.offsets[2]) + 7)
    with pytest.raises(FormatError, match=rf"at offset {idx.offsets[2]}.*truncated"):
        formats.index_file(path, spec)


def test_csv_errors_say_where(tmp_path):
    spec = FormatSpec(format="csv", samples_per_file=3, record_length=40)
    path = str(tmp_path / "a.csv")
    idx = formats.write_file(path, 0, spec)
    with open(path, "ab") as f:
        f.write(b"1,2")
    with pytest.raises(FormatError, match=f"ends inside a line starting at offset "
                                          f"{idx.file_size} "):
        formats.index_file(path, spec)
    with open(path, "r+b") as f:
        f.seek(5)
        f.write(b"\x00")
    with pytest.raises(FormatError, match="byte 0x00 at offset 5 is not CSV"):
        formats.index_file(path, spec)


def test_masked_crc_check_value():
    assert crc32c.crc32c(b"123456789") == 0xE3069283          # CRC-32C (Castagnoli)
    assert tfrecord.masked_crc(b"123456789") == _mask(0xE3069283)
    assert tfrecord.frame_header(0) == b"\0" * 8 + struct.pack("<I", _mask(crc32c.crc32c(
        b"\0" * 8)))


def test_a_file_of_another_dataset_is_refused(tmp_path):
    spec = FormatSpec(format="npz", samples_per_file=4, record_length=500,
                      record_length_stdev=100)
    path = str(tmp_path / "x.npz")
    formats.write_file(path, 0, spec)
    with pytest.raises(FormatError, match="another dataset"):
        formats.index_file(path, spec.replace(seed=spec.seed + 1), 0)
    with pytest.raises(FormatError, match="expected a 1-D C-ordered float32"):
        formats.index_file(path, spec.replace(dtype="float32"))


@pytest.mark.parametrize("key,value", [("format", "orc"), ("samples_per_file", 0),
                                       ("record_length", -1), ("record_length_stdev", -2.0),
                                       ("seed", -1), ("compression", "gzip"),
                                       ("dtype", "object"), ("dataset", "a/b"),
                                       ("compression_level", 2.5), ("chunk_rows", True),
                                       ("content_fill", 0.0), ("content_fill", 1.5)])
def test_spec_checks_its_values(key, value):
    with pytest.raises(ValueError, match=f"format spec: {key}="):
        FormatSpec(format="npz", **{key: value}) if key != "format" else FormatSpec(format=value)


# -- transfer-size pieces --------------------------------------------------------------------

def test_cut_ranges_examples():
    o, n = cut_ranges([0, 100, 50], [10, 5, 0], 4)
    assert o.tolist() == [0, 4, 8, 100, 104] and n.tolist() == [4, 4, 2, 4, 1]
    o, n, w = cut_ranges([6, 100], [10, 5], 4, aligned=True, return_index=True)
    assert o.tolist() == [6, 8, 12, 100, 104] and n.tolist() == [2, 4, 4, 4, 1]
    assert w.tolist() == [0, 0, 0, 1, 1]
    o, n = cut_ranges([3, 9], [5, 2], 0)
    assert o.tolist() == [3, 9] and n.tolist() == [5, 2]
    with pytest.raises(ValueError):
        cut_ranges([0], [1], -1)
    with pytest.raises(ValueError):
        cut_ranges([0, 1], [1], 4)


@settings(max_examples=300, deadline=None)
@given(ranges=st.lists(st.tuples(st.integers(0, 1 << 40), st.integers(0, 5000)), max_size=20),
       transfer=st.integers(0, 1500), aligned=st.booleans())
def test_cut_ranges_is_exact(ranges, transfer, aligned):
    offs = [r[0] for r in ranges]
    lens = [r[1] for r in ranges]
    po, pl, which = cut_ranges(offs, lens, transfer, aligned=aligned, return_index=True)
    assert po.dtype == pl.dtype == np.int64 and len(po) == len(pl) == len(which)
    assert (pl >= 1).all()
    if transfer:
        assert (pl <= transfer).all()
    assert (np.diff(which) >= 0).all()
    for i, (o, n) in enumerate(ranges):
        sel = which == i
        ro, rl = po[sel], pl[sel]
        if n == 0:
            assert not sel.any()
            continue
        assert ro[0] == o and ro[-1] + rl[-1] == o + n               # covers the range ...
        assert (ro[1:] == ro[:-1] + rl[:-1]).all()                   # ... without gap or overlap
        if transfer == 0:
            assert len(ro) == 1
        elif aligned:
            assert ((ro // transfer) == ((ro + rl - 1) // transfer)).all()
            assert len(ro) == (o + n - 1) // transfer - o // transfer + 1
        else:
            assert (rl[:-1] == transfer).all()


# -- one shared HDF5 file written by several ranks ---------------------------------------------

@pytest.mark.mpi
def test_shared_hdf5_file_written_by_two_ranks(tmp_path):
    p = run_mpi(2, "check_formats_generate.py", tmp_path, timeout=120)
    for r in range(2):
        assert f"rank {r}: ok" in p.stdout, p.stdout[-3000:]


def test_hdf5_file_refused_by_the_system_is_not_called_truncated(tmp_path):
    """An HDF5 path the system will not open is named by its errno; only a file that opened
    and is not HDF5 may be truncated."""
    import errno

    from dlio_mpi.formats.hdf5 import open_error, open_file
    folder = tmp_path / "is_a_directory.h5"
    folder.mkdir()
    with pytest.raises(FormatError) as e:
        open_file(folder)
    assert str(e.value) == f"{folder}: cannot open: Is a directory"
    refused = OSError(errno.EACCES, "Unable to open file (unable to open file: errno = 13, "
                                    "error message = 'Permission denied')")
    assert str(open_error("/d/f.h5", refused)) == "/d/f.h5: cannot open: Permission denied"
    junk = tmp_path / "junk.h5"
    junk.write_bytes(b"not HDF5 " * 1000)
    with pytest.raises(FormatError) as e:
        open_file(junk)
    assert str(e.value) == (f"{junk}: not a readable HDF5 file (Unable to open file (file "
                            "signature not found); truncated?)")


def test_hdf5_file_without_read_permission_says_permission_denied():
    """chmod 000, opened by an unprivileged user (root reads it regardless)."""
    import shutil
    import subprocess
    import sys
    import tempfile

    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root and setpriv to open the file as another user")
    folder = tempfile.mkdtemp(prefix="dlio_mpi_perm_")
    try:
        os.chmod(folder, 0o755)
        path = os.path.join(folder, "f.h5")
        with h5py.File(path, "w") as f:
            f["x"] = np.arange(4)
        os.chmod(path, 0)
        code = ("import sys\nfrom dlio_mpi.formats.hdf5 import open_file\n"
                "try:\n    open_file(sys.argv[1])\nexcept Exception as e:\n    print(e)\n")
        p = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                            sys.executable, "-c", code, path], capture_output=True, text=True,
                           timeout=60, cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
        assert p.stdout == f"{path}: cannot open: Permission denied\n", p.stderr
    finally:
        shutil.rmtree(folder)

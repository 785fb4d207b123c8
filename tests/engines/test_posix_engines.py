"""POSIX, O_DIRECT, mmap and STDIO engines against the reference engines and the file's known
content, on random ranges (including ranges crossing EOF and zero-length ranges)."""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from datautil import drop_dac_capabilities
from dlio_mpi import engines
from dlio_mpi.engines.reference import MmapRef, PosixRef, StdioRef

SIZE = 300_001          # not a multiple of any block size: the last block is partial


def expected(data, offsets, lengths):
    """Packed output and per-range counts computed from the content itself."""
    out = np.zeros(int(sum(lengths)), dtype=np.uint8)
    got = []
    pos = 0
    for o, n in zip(offsets, lengths):
        chunk = data[o:o + n]
        out[pos:pos + chunk.size] = chunk
        got.append(chunk.size)
        pos += n
    return out, np.array(got, dtype=np.int64)


ranges = st.lists(
    st.tuples(st.integers(0, SIZE + 5000), st.integers(0, 70_000)), min_size=0, max_size=12)
xfers = st.sampled_from([0, 1, 4096, 65536, 1 << 20])


@pytest.fixture(scope="module")
def shared_file(tmp_path_factory):
    from datautil import pattern
    data = pattern(SIZE, seed=7)
    path = tmp_path_factory.mktemp("posix") / "data.bin"
    data.tofile(path)
    return path, data


def fill(n):
    # a poisoned output buffer: bytes not written stay 0xAB in both engines
    return np.full(n, 0xAB, dtype=np.uint8)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rs=ranges, xfer=xfers)
@pytest.mark.parametrize("kind", ["posix", "mmap", "stdio"])
def test_native_equals_reference_and_content(shared_file, kind, rs, xfer):
    path, data = shared_file
    offs = [r[0] for r in rs]
    lens = [r[1] for r in rs]
    total = sum(lens)
    want, want_got = expected(data, offs, lens)
    if kind == "posix":
        nat, ref = engines.PosixFile(path), PosixRef(path)
    elif kind == "mmap":
        nat, ref = engines.PosixFile(path, mmap=True), MmapRef(path)
    else:
        nat, ref = engines.StdioFile(path, bufsize=8192), StdioRef(path, bufsize=8192)
    with nat, ref:
        a, a_got = nat.readv(offs, lens, xfer=xfer, out=fill(total), per_range=True)
        b, b_got = ref.readv(offs, lens, xfer=xfer, out=fill(total), per_range=True)
    assert np.array_equal(a_got, want_got)
    assert np.array_equal(b_got, want_got)
    assert np.array_equal(a, b)
    # bytes past EOF are left untouched; compare only what was read
    pos = 0
    for o, n, g in zip(offs, lens, want_got):
        assert np.array_equal(a[pos:pos + g], want[pos:pos + g])
        assert (a[pos + g:pos + n] == 0xAB).all()
        pos += n


def test_read_returns_short_at_eof_and_exact_raises(shared_file):
    path, data = shared_file
    with engines.PosixFile(path) as f:
        assert np.array_equal(f.read(SIZE - 10, 100), data[-10:])
        assert f.read(SIZE + 10, 100).size == 0
        assert f.size() == SIZE
        with pytest.raises(engines.ShortReadError) as ei:
            f.readv([SIZE - 10], [100], exact=True)
    msg = str(ei.value)
    assert msg.startswith("rank 0: unexpected end of file")
    assert str(path) in msg and str(SIZE - 10) in msg and "\n" not in msg


def test_missing_file_names_the_file(tmp_path):
    missing = tmp_path / "nope.bin"
    for opener in (engines.PosixFile, engines.StdioFile):
        with pytest.raises(engines.EngineError) as ei:
            opener(missing)
        assert ei.value.errno == 2
        assert str(missing) in str(ei.value)


def test_permission_denied_names_the_file(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "secret.bin"
    path.write_bytes(b"x" * 100)
    os.chmod(path, 0o000)
    code = ("import sys\nfrom dlio_mpi import engines\n"
            "try:\n    engines.PosixFile(sys.argv[1])\nexcept engines.EngineError as e:\n"
            "    print(e.errno, e); sys.exit(0)\nsys.exit(3)\n")
    p = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                       preexec_fn=drop_dac_capabilities if os.geteuid() == 0 else None)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.startswith("13 ") and str(path) in p.stdout


def test_writes_then_sync_and_read_back(tmp_path):
    path = tmp_path / "w.bin"
    payload = np.arange(10_000, dtype=np.uint8)
    log = engines.OpLog(64)
    with engines.PosixFile(path, "w", oplog=log, file_id=5) as f:
        n = f.writev([0, 20_000], [4000, 6000], payload, xfer=1024)
        f.sync()
        f.sync(data_only=True)
    assert n == 10_000
    raw = np.fromfile(path, dtype=np.uint8)
    assert raw.size == 26_000
    assert np.array_equal(raw[:4000], payload[:4000])
    assert np.array_equal(raw[20_000:], payload[4000:])
    a = log.arrays()
    ops = [engines.OPS[o] for o in a["op"]]
    assert ops.count("write") == 4 + 6 and ops.count("fsync") == 1 and ops.count("fdatasync") == 1
    assert (a["file"] == 5).all()


def test_stdio_writes(tmp_path):
    path = tmp_path / "s.bin"
    log = engines.OpLog(64)
    with engines.StdioFile(path, "w", bufsize=1 << 16, oplog=log, file_id=4) as f:
        f.writev([0, 100], [100, 50], np.full(150, 7, dtype=np.uint8))
        f.sync()
        f.sync(data_only=True)
    assert path.read_bytes() == b"\x07" * 150
    a = log.arrays()
    ops = [engines.OPS[o] for o in a["op"]]
    assert ops.count("fsync") == 1 and ops.count("fdatasync") == 1
    assert set(a["iface"][a["op"] >= engines.OP["fsync"]]) == {engines.IFACE["stdio"]}


def test_stdio_refuses_o_direct(tmp_path):
    path = tmp_path / "s.bin"
    path.write_bytes(b"abc")
    with pytest.raises(engines.EngineError, match="O_DIRECT cannot be used through STDIO"):
        engines.StdioFile(path, direct=True)


def test_fadvise_hints(shared_file):
    path, data = shared_file
    with engines.PosixFile(path, advice=os.POSIX_FADV_RANDOM) as f:
        f.fadvise(0, 0, os.POSIX_FADV_WILLNEED)
        assert np.array_equal(f.read(0, 10), data[:10])


def test_errors_name_their_rank_and_their_errno():
    """An engine's error carries the rank its message names, read back by the failure line
    without parsing the message; the end of a file is ENODATA."""
    import errno

    from dlio_mpi.run import collective
    from dlio_mpi.run.exits import _error_line

    with pytest.raises(engines.EngineError) as ei:
        engines.PosixFile("/nonexistent/dir/x.bin")
    assert ei.value.rank == 0 and ei.value.errno == errno.ENOENT
    assert _error_line(3, ei.value) == (str(ei.value), 0)
    short = engines.end_of_file("/d/f.bin", "wanted 8 bytes from offset 4, got 2")
    assert isinstance(short, engines.ShortReadError) and short.errno == errno.ENODATA
    assert str(short) == ("rank 0: unexpected end of file in /d/f.bin: wanted 8 bytes from "
                          "offset 4, got 2") and collective.named_rank(short) == 0
    plain = OSError(errno.EIO, "rank 0: not named by a type")
    assert collective.named_rank(plain) is None
    assert _error_line(3, plain) == ("rank 3: [Errno 5] rank 0: not named by a type", 3)
    assert collective.named_rank(collective.RankError("rank 2: x", 2)) == 2

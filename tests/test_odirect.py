"""O_DIRECT: alignment from the file system, aligned transfers equal to the content, misaligned
requests refused with a clear error, reads crossing EOF."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlio_mpi import engines
from dlio_mpi.reference import PosixRef


@pytest.fixture(scope="module")
def dfile(tmp_path_factory):
    from datautil import pattern
    d = tmp_path_factory.mktemp("direct")
    try:
        engines.dio_probe(d)
    except engines.EngineError as e:
        pytest.skip(f"no O_DIRECT here: {e}")
    size = 64 * 4096 + 1000        # ends in a partial block
    data = pattern(size, seed=3)
    path = d / "direct.bin"
    data.tofile(path)
    return path, data


def test_alignment_is_reported_and_sane(dfile):
    path, _ = dfile
    mem, off, src = engines.dio_alignment(path)
    assert src in ("statx", "blocksize")
    for v in (mem, off):
        assert v >= 1 and (v & (v - 1)) == 0 and v <= 65536
    with engines.PosixFile(path, direct=True) as f:
        assert f.alignment == (mem, off)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(blocks=st.lists(st.tuples(st.integers(0, 70), st.integers(0, 8)), max_size=8),
       xfer_blocks=st.sampled_from([0, 1, 2, 16]))
def test_aligned_reads_equal_content(dfile, blocks, xfer_blocks):
    path, data = dfile
    a = engines.dio_alignment(path)[1]
    offs = [b[0] * a for b in blocks]
    lens = [b[1] * a for b in blocks]
    with engines.PosixFile(path, direct=True) as f, PosixRef(path, direct=True) as r:
        out, got = f.readv(offs, lens, xfer=xfer_blocks * a, per_range=True)
        buf = engines.aligned_empty(sum(lens), 4096)
        ref, ref_got = r.readv(offs, lens, xfer=xfer_blocks * a, out=buf, per_range=True)
    assert np.array_equal(got, ref_got)
    pos = 0
    for o, n, g in zip(offs, lens, got):
        assert g == max(0, min(n, data.size - o))
        assert np.array_equal(out[pos:pos + g], data[o:o + g])
        assert np.array_equal(ref[pos:pos + g], data[o:o + g])
        pos += n


def test_read_crossing_eof(dfile):
    path, data = dfile
    a = engines.dio_alignment(path)[1]
    last = (data.size // a) * a
    with engines.PosixFile(path, direct=True) as f:
        out, total = f.readv([last], [4 * a])
    assert total == data.size - last
    assert np.array_equal(out[:total], data[last:])


@pytest.mark.parametrize("off_delta,len_delta", [(1, 0), (0, 1), (512 + 1, 0)])
def test_misaligned_request_is_refused(dfile, off_delta, len_delta):
    path, _ = dfile
    a = engines.dio_alignment(path)[1]
    with engines.PosixFile(path, direct=True) as f:
        with pytest.raises(engines.AlignmentError) as ei:
            f.readv([a + off_delta], [a + len_delta])
    msg = str(ei.value)
    assert "misaligned O_DIRECT request" in msg and str(path) in msg
    assert str(a + off_delta) in msg and "\n" not in msg


def test_misaligned_transfer_size_and_buffer(dfile):
    path, _ = dfile
    a = engines.dio_alignment(path)[1]
    with engines.PosixFile(path, direct=True) as f:
        with pytest.raises(engines.AlignmentError, match="transfer size"):
            f.readv([0], [2 * a], xfer=a + 1)
        buf = engines.aligned_empty(4 * a + 1, 4096)[1:]
        with pytest.raises(engines.AlignmentError, match="buffer"):
            f.readv([0], [a], out=buf)


def test_direct_write_and_sync(dfile, tmp_path):
    path, _ = dfile
    a = engines.dio_alignment(path)[1]
    out = tmp_path / "w.bin"
    buf = engines.aligned_empty(4 * a, 4096)
    buf[:] = 9
    with engines.PosixFile(out, "w", direct=True) as f:
        assert f.writev([0], [4 * a], buf, xfer=a) == 4 * a
        f.sync()
        with pytest.raises(engines.AlignmentError):
            f.writev([3], [a], buf)
    assert out.read_bytes() == b"\x09" * (4 * a)


def test_zero_length_requests(dfile):
    path, _ = dfile
    with engines.PosixFile(path, direct=True) as f:
        out, total = f.readv([0], [0])
        assert total == 0 and out.size == 0
        out, total = f.readv([], [])
        assert total == 0

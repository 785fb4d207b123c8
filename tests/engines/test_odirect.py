"""O_DIRECT: alignment from the file system, aligned transfers equal to the content, misaligned
requests refused with a clear error, reads crossing EOF."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlio_mpi import engines
from dlio_mpi.engines.reference import PosixRef

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec


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


def _direct_run(tmp_path, *extra, check=True):
    import json

    from mpirun import run_mpi
    data, out = tmp_path / "data", tmp_path / "out"
    p = run_mpi(2, "run_cli.py", "run", f"dataset.data_folder={data}", f"output.folder={out}",
                "dataset.num_files_train=4", "dataset.num_samples_per_file=4",
                "dataset.record_length=1000", "dataset.record_length_stdev=0",
                "reader.batch_size=2", "train.epochs=1", "train.computation_time=0",
                "io.interface=posix_direct", *extra, check=check, timeout=120)
    s = out / "latest" / "summary.json"
    return p, (json.loads(s.read_text())["dlio_mpi"] if s.exists() else None), data, out


def test_misaligned_transfer_size_is_a_config_error(dfile, tmp_path):
    """reader.transfer_size not a multiple of the O_DIRECT alignment: a configuration value,
    so one config-error line and exit 2, the run marked failed, no summary."""
    p, s, data, out = _direct_run(tmp_path, "reader.transfer_size=1000", check=False)
    align = engines.dio_alignment(data)[1]
    line = (f"dlio_mpi: config error: io.interface=posix_direct needs reader.transfer_size in "
            f"multiples of {align} bytes on {data} (reader.transfer_size=1000)")
    assert p.returncode == 2, p.stdout
    assert [l for l in p.stdout.splitlines() if l.startswith("dlio_mpi")] == [line], p.stdout
    assert s is None
    assert '"status": "failed"' in (out / "status.json").read_text()


def test_widened_reads_are_warned_and_counted(dfile, tmp_path):
    """1000-byte records read through O_DIRECT: each read widened to the aligned range around
    it; the run says so in one warning line and the summary gives the widening of file 0."""
    p, s, data, _ = _direct_run(tmp_path)
    align = engines.dio_alignment(data)[1]
    offs = np.arange(4) * 1000
    start = offs - offs % align
    end = np.minimum(-(-(offs + 1000) // align) * align, 4000)
    read = end - start
    w = s["facts"]["odirect_widening"]
    assert w == {"alignment": align, "sample_bytes_max": 1000, "read_bytes_max": int(read.max()),
                 "file0_sample_bytes": 4000, "file0_read_bytes": int(read.sum())}
    assert s["bytes_moved"] == 4 * int(read.sum())        # every file is laid out as file 0
    warning = (f"io.interface=posix_direct: O_DIRECT alignment ({align} bytes on "
               f"{data}) widens each sample read to up to {int(read.max())} bytes (samples of "
               f"1000 bytes at most); bytes moved include the widening (file 0: "
               f"{int(read.sum())} bytes read for 4000 bytes of samples)")
    assert p.stdout.count(warning) == 1, p.stdout


def test_aligned_records_are_not_warned(dfile, tmp_path):
    p, s, data, _ = _direct_run(tmp_path, "dataset.record_length=4096")
    assert "odirect_widening" not in s["facts"] and "widens" not in p.stdout
    assert s["bytes_moved"] == 16 * 4096

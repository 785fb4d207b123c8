"""Parquet files (MLPerf Storage's dlrm): written with pyarrow and read back by pyarrow (rows,
column, values); the reads the emulator plans for a batch equal those pyarrow itself makes
(strace of ParquetFile(...).read_row_group(i, columns=[...]): the footer, then each row group's
column chunk); a run at 2 ranks reading every sample's row group each epoch."""
import re
import shutil
import subprocess
import sys

import pytest

from datautil import load_npz, own_summary
from dlio_mpi import formats
from dlio_mpi.config import loader as config
from dlio_mpi.formats import content, parquet
from dlio_mpi.formats.spec import FormatSpec
from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

SPEC = FormatSpec(format="parquet", samples_per_file=20, record_length=3000,
                  record_length_stdev=400, seed=5, row_group_rows=6)


def test_written_file_reads_back_with_pyarrow(tmp_path):
    import pyarrow.parquet as pq
    path = str(tmp_path / "f.parquet")
    written = formats.write_file(path, 3, SPEC)
    pf = pq.ParquetFile(path)
    assert pf.metadata.num_rows == 20 and pf.metadata.num_row_groups == 4
    assert [pf.metadata.row_group(g).num_rows for g in range(4)] == [6, 6, 6, 2]
    table = pf.read()
    assert table.column_names == ["data"]
    values = table.column("data").to_pylist()
    for s in range(20):
        assert values[s] == content.sample_data(SPEC, 3, s).tobytes()
    assert len({len(v) for v in values}) > 1
    assert formats.index_file(path, SPEC, 3) == written


def test_a_file_of_another_row_count_is_refused(tmp_path):
    path = str(tmp_path / "f.parquet")
    formats.write_file(path, 0, SPEC)
    with pytest.raises(formats.FormatError, match="20 rows, expected 21"):
        formats.index_file(path, SPEC.replace(samples_per_file=21), 0)


PYARROW_READS = """
import sys
import pyarrow.parquet as pq
f = pq.ParquetFile(sys.argv[1])
for g in sys.argv[2:]:
    f.read_row_group(int(g), columns=["data"])
"""


def pyarrow_preads(path, groups):
    """(offset, length) of every pread64 pyarrow issues on path reading the row groups."""
    p = subprocess.run(["strace", "-f", "-e", "trace=openat,pread64,read", "-o", "/dev/stdout",
                        sys.executable, "-c", PYARROW_READS, path, *map(str, groups)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    fd, reads = None, []
    for line in p.stdout.splitlines():
        m = re.search(r'openat\(AT_FDCWD, "([^"]+)".*\) = (\d+)', line)
        if m and m.group(1) == path:
            fd = m.group(2)
            continue
        m = re.search(r"pread64\((\d+), .*, (\d+), (\d+)\) = \d+", line)
        if fd is not None and m and m.group(1) == fd:
            reads.append((int(m.group(3)), int(m.group(2))))
        assert not (fd is not None and re.search(rf"\bread\({fd},", line)), line
    return reads


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace not installed")
@pytest.mark.parametrize("spec,groups", [
    (SPEC, [1, 3]),
    # a file larger than pyarrow's footer read, one row group a sample
    (SPEC.replace(samples_per_file=30, record_length=8000, row_group_rows=1), [0, 7, 29]),
])
def test_planned_reads_equal_pyarrows(tmp_path, spec, groups):
    path = str(tmp_path / "f.parquet")
    idx = formats.write_file(path, 0, spec)
    rows = spec.row_group_rows
    local = [g * rows for g in groups]          # a sample of each row group, in turn
    offs, lens = parquet.batch_reads(idx, parquet.metadata_bytes(path), local)
    assert pyarrow_preads(path, groups) == list(zip(offs.tolist(), lens.tolist()))


def test_parquet_is_read_as_pyarrow_unless_told():
    cfg = config.load(["workload=default", "dataset.format=parquet",
                       "dataset.parquet_row_group_size=64"])
    assert cfg.reader.access == "parquet" and cfg.dataset.parquet_row_group_size == 64
    with pytest.raises(config.ConfigError, match="reader.access=parquet"):
        config.load(["workload=default", "dataset.format=parquet", "reader.access=numpy"])


def test_run_at_two_ranks_reads_every_row_group(tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    files, spf, rows, epochs = 4, 12, 3, 2
    run_mpi(2, "run_cli.py", "run", "workload=default", "dataset.format=parquet",
            f"dataset.data_folder={data}", f"output.folder={out}",
            f"dataset.num_files_train={files}", f"dataset.num_samples_per_file={spf}",
            "dataset.record_length=5000", f"dataset.parquet_row_group_size={rows}",
            "reader.batch_size=4", f"train.epochs={epochs}", "train.computation_time=0",
            "io.keep_oplog=true", "workflow.generate_data=true", timeout=180)
    s = own_summary(out)
    assert s["steps_per_epoch"] == files * spf // (2 * 4)
    spec = FormatSpec(format="parquet", samples_per_file=spf, record_length=5000,
                      row_group_rows=rows)
    chunks, footers = set(), set()
    for f in range(files):
        path = str(data / "train" / sorted(p.name for p in (data / "train").iterdir())[f])
        idx = formats.index_file(path, spec)
        meta = parquet.metadata_bytes(path)
        chunks |= {(f, o, n) for o, n in zip(idx.offsets.tolist(), idx.lengths.tolist())}
        fo, fl = parquet.footer_reads(idx.file_size, meta)
        footers |= {(f, o, n) for o, n in zip(fo, fl)}
    for e in range(epochs):
        seen = set()
        for r in range(2):
            z = load_npz(out / "latest" / f"oplog_rank{r:05d}.npz")
            reads = z[f"e{e}_op"] == 0
            got = set(zip(z[f"e{e}_file"][reads].tolist(), z[f"e{e}_offset"][reads].tolist(),
                          z[f"e{e}_bytes"][reads].tolist()))
            assert got <= chunks | footers, got - chunks - footers
            seen |= got & chunks
        assert s["epochs"][e]["samples"] == files * spf
        assert seen == chunks          # every row group of every file read this epoch


def test_a_file_kept_open_reads_its_footer_once_an_epoch(tmp_path):
    """reader.parquet_open=file: the batches read on in a file through the ParquetFile opened
    when they moved on to it, its footer read once an epoch; batch (the default) reads it again
    for every batch."""
    files, spf = 4, 6
    footers = {}
    for way in ("file", "batch"):
        data, out = tmp_path / way / "data", tmp_path / way / "out"
        run_mpi(1, "run_cli.py", "run", "workload=default", "dataset.format=parquet",
                f"dataset.data_folder={data}", f"output.folder={out}",
                f"dataset.num_files_train={files}", f"dataset.num_samples_per_file={spf}",
                "dataset.record_length=5000", "dataset.parquet_row_group_size=1",
                "reader.batch_size=2", "train.epochs=1", "train.computation_time=0",
                "reader.sample_shuffle=off", f"reader.parquet_open={way}",
                "io.keep_oplog=true", "workflow.generate_data=true", timeout=180)
        z = load_npz(out / "latest" / "oplog_rank00000.npz")
        reads = z["e0_op"] == 0
        ends = z["e0_offset"][reads] + z["e0_bytes"][reads]
        sizes = {f: (data / "train" / name).stat().st_size for f, name in
                 enumerate(sorted(p.name for p in (data / "train").iterdir()))}
        at_end = ends == [sizes[int(f)] for f in z["e0_file"][reads]]
        footers[way] = int(at_end.sum())
        assert int((~at_end).sum()) == files * spf        # every row group once
    assert footers == {"file": files, "batch": files * spf // 2}
    with pytest.raises(config.ConfigError, match="reader.parquet_open=file is how"):
        config.load(["workload=default", "reader.parquet_open=file"])

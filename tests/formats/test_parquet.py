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


def pyarrow_preads(path, groups, program=PYARROW_READS, *args):
    """(offset, length) of every pread64 pyarrow issues on path reading the row groups (with
    `program`, given path, args and the row groups)."""
    p = subprocess.run(["strace", "-f", "-e", "trace=openat,pread64,read", "-o", "/dev/stdout",
                        sys.executable, "-c", program, path, *args, *map(str, groups)],
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


COLUMNS = SPEC.replace(samples_per_file=12, record_length=40000, record_length_stdev=3000,
                       row_group_rows=3, columns=(20000, 235, 12000, 700))


def test_a_table_of_columns_holds_each_sample_split_by_their_shares(tmp_path):
    import pyarrow.parquet as pq
    path = str(tmp_path / "f.parquet")
    idx = formats.write_file(path, 2, COLUMNS)
    table = pq.read_table(path)
    assert table.column_names == ["data", "data_1", "data_2", "data_3"]
    for s in range(12):
        parts = [table.column(c)[s].as_py() for c in table.column_names]
        sample = content.sample_data(COLUMNS, 2, s).tobytes()
        assert b"".join(parts) == sample
        assert abs(len(parts[1]) - len(sample) * 235 / 32935) <= 1
    # a row group's chunks side by side, the index's range from the first to the last
    assert idx.chunks.shape == (4, 4, 2)
    assert (idx.chunks[:, 1:, 0] == idx.chunks[:, :-1, 0] + idx.chunks[:, :-1, 1]).all()
    assert idx.offsets[3] == idx.chunks[1, 0, 0]
    assert idx.lengths[3] == idx.chunks[1, 3, 0] + idx.chunks[1, 3, 1] - idx.chunks[1, 0, 0]
    with pytest.raises(formats.FormatError, match="columns"):
        formats.index_file(path, SPEC.replace(samples_per_file=12), 2)


PYARROW_PROJECTED = """
import sys
import pyarrow.parquet as pq
f = pq.ParquetFile(sys.argv[1])
columns, groups = sys.argv[2].split(","), [int(g) for g in sys.argv[4:]]
if sys.argv[3] == "group":
    for g in groups:
        f.read_row_group(g, columns=columns)
else:
    f.read_row_groups(groups, columns=columns)
"""


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace not installed")
@pytest.mark.parametrize("together", ["group", "batch"])
@pytest.mark.parametrize("read", [[0, 3], [0, 1], [1, 2], [2], []])
def test_planned_reads_of_chosen_columns_equal_pyarrows(tmp_path, read, together):
    """pyarrow's pre-buffering: a row group's chunks of the chosen columns, those 8 KiB apart
    or less in one read; read_row_groups takes the row groups' chunks at once (a row group's
    last chosen chunk and the next's first, adjacent, in one read)."""
    path = str(tmp_path / "f.parquet")
    idx = formats.write_file(path, 0, COLUMNS)
    names = [parquet.column_names(COLUMNS)[c] for c in (read or range(4))]
    groups = [0, 2] if together == "group" else [2, 3]
    reads = pyarrow_preads(path, groups, PYARROW_PROJECTED, ",".join(names), together)
    chunks = parquet.chosen_chunks(idx, read)
    offs, lens = parquet.batch_reads(idx, parquet.metadata_bytes(path), [g * 3 for g in groups],
                                     True, chunks, 3, together == "batch")
    assert reads == list(zip(offs.tolist(), lens.tolist()))
    # the hole between label and weight (the aux chunk) is never read
    if read == [0, 3]:
        aux = idx.chunks[groups[0], 2]
        assert all(o + n <= aux[0] or o >= aux[0] + aux[1] for o, n in reads)


def test_a_projection_is_checked():
    loaded = config.load(["workload=default", "dataset.format=parquet",
                          "dataset.parquet_columns=[4,1,2]", "reader.parquet_columns_read=[0,2]",
                          "reader.parquet_coalesce=batch"])
    assert loaded.reader.parquet_columns_read == [0, 2]
    for bad, match in [
        (["dataset.parquet_columns=[4,0]"], "dataset.parquet_columns"),
        (["dataset.parquet_columns=[4,1]", "reader.parquet_columns_read=[2]"],
         "distinct positions 0 .. 1"),
        (["reader.parquet_columns_read=[0,0]"], "distinct positions 0 .. 0"),
    ]:
        with pytest.raises(config.ConfigError, match=match):
            config.load(["workload=default", "dataset.format=parquet", *bad])
    with pytest.raises(config.ConfigError, match="dataset.parquet_columns"):
        config.load(["workload=default", "dataset.format=npz", "dataset.parquet_columns=[1,2]"])
    with pytest.raises(config.ConfigError, match="reader.parquet_coalesce=batch is how"):
        config.load(["workload=default", "reader.parquet_coalesce=batch"])


def test_a_run_reads_the_chosen_columns_of_every_row_group(tmp_path):
    """At 2 ranks, every row group's chosen chunks read each epoch and no byte of the
    others (the one skipped, 20 KB, is too far for pyarrow to read across)."""
    data, out = tmp_path / "data", tmp_path / "out"
    files, spf = 4, 6
    run_mpi(2, "run_cli.py", "run", "workload=default", "dataset.format=parquet",
            f"dataset.data_folder={data}", f"output.folder={out}",
            f"dataset.num_files_train={files}", f"dataset.num_samples_per_file={spf}",
            "dataset.record_length=60000", "dataset.parquet_row_group_size=1",
            "dataset.parquet_columns=[10,6,5]", "reader.parquet_columns_read=[0,2]",
            "reader.batch_size=2", "train.epochs=1", "train.computation_time=0",
            "io.keep_oplog=true", "workflow.generate_data=true", timeout=180)
    spec = FormatSpec(format="parquet", samples_per_file=spf, record_length=60000,
                      row_group_rows=1, columns=(10, 6, 5))
    wanted, skipped = set(), set()
    names = sorted(p.name for p in (data / "train").iterdir())
    sizes = [(data / "train" / name).stat().st_size for name in names]
    for f, name in enumerate(names):
        idx = formats.index_file(str(data / "train" / name), spec)
        wanted |= {(f, int(o), int(n)) for o, n in idx.chunks[:, [0, 2]].reshape(-1, 2)}
        skipped |= {(f, int(o), int(n)) for o, n in idx.chunks[:, 1]}
    got = set()
    for r in range(2):
        z = load_npz(out / "latest" / f"oplog_rank{r:05d}.npz")
        reads = z["e0_op"] == 0
        got |= set(zip(z["e0_file"][reads].tolist(), z["e0_offset"][reads].tolist(),
                       z["e0_bytes"][reads].tolist()))
    got -= {r for r in got if r[1] + r[2] == sizes[r[0]]}     # the footers aside
    assert wanted == got
    for f, o, n in skipped:
        assert not any(g == f and go < o + n and o < go + gn for g, go, gn in got)

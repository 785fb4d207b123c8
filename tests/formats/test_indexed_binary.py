"""The DLIO benchmark's indexed binary files (.bin, and .bin.off.idx and .bin.sz.idx beside it):
the index files hold, byte for byte, what DLIO's generator writes for the same sample sizes,
the files read as DLIO's indexed_binary reader reads them (each index file into an int64 array,
then a seek and a read of each sample), damaged index files refused in one line, and a run
reading each rank's files' index files once and whole, then each sample at its index entry,
through a memory mapping for mmap_indexed_binary."""
import json
import struct

import numpy as np
import pytest

from datautil import load_npz
from dlio_mpi import formats
from dlio_mpi.config import loader as config
from dlio_mpi.formats.spec import FormatError, FormatSpec
from dlio_mpi.run.oplog_format import COMPANION_ID_BASE, OP, companion_id
from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

SPEC = FormatSpec(format="indexed_binary", samples_per_file=9, record_length=3000,
                  record_length_stdev=500, seed=7)


def dlio_index_files(sample_size, samples):
    """What the DLIO benchmark's generator (one file a rank, the whole file in one buffer)
    writes: struct 'Q' offsets from 0 by sample_size, then the sizes."""
    offsets = range(0, sample_size * samples, sample_size)
    return (struct.pack("Q" * samples, *offsets),
            struct.pack("Q" * samples, *[sample_size] * samples))


def dlio_read_longs(path, n):
    """As DLIO's IndexedBinaryReader.read_longs reads an index file."""
    a = np.empty(n, dtype=np.int64)
    with open(path, "rb") as f:
        f.readinto(a)
    return a


def test_index_files_hold_what_dlios_generator_writes(tmp_path):
    spec = FormatSpec(format="indexed_binary", samples_per_file=16, record_length=32761,
                      seed=3)
    path = str(tmp_path / "t.bin")
    formats.write_file(path, 0, spec)
    assert formats.file_paths(spec, path) == [path, path + ".off.idx", path + ".sz.idx"]
    off, sz = dlio_index_files(32761, 16)
    assert (tmp_path / "t.bin.off.idx").read_bytes() == off
    assert (tmp_path / "t.bin.sz.idx").read_bytes() == sz


def test_written_files_read_as_dlios_reader_reads_them(tmp_path):
    path = str(tmp_path / "t.bin")
    written = formats.write_file(path, 0, SPEC)
    n = SPEC.samples_per_file
    offsets = dlio_read_longs(path + ".off.idx", n)
    sizes = dlio_read_longs(path + ".sz.idx", n)
    assert len(set(sizes.tolist())) > 1       # sizes spread: offsets matter
    idx = formats.index_file(path, SPEC, 0)
    assert idx == written
    assert list(idx.offsets) == list(offsets) and list(idx.lengths) == list(sizes)
    with open(path, "rb") as f:
        for i in range(n):
            f.seek(int(offsets[i]))
            image = np.empty(int(sizes[i]), dtype=np.uint8)
            f.readinto(image)
            assert bytes(image) == bytes(formats.sample_bytes(SPEC, 0, i))


@pytest.mark.parametrize("fmt", ["indexed_binary", "mmap_indexed_binary"])
@pytest.mark.parametrize("which,damage", [
    (".off.idx", lambda b: b[:-8]),
    (".sz.idx", lambda b: b + b"\0" * 8),
    (".sz.idx", lambda b: b""),
])
def test_a_damaged_index_file_is_one_line_naming_it(tmp_path, fmt, which, damage):
    spec = SPEC.replace(format=fmt)
    path = str(tmp_path / "t.bin")
    formats.write_file(path, 0, spec)
    index = tmp_path / ("t.bin" + which)
    index.write_bytes(damage(index.read_bytes()))
    with pytest.raises(FormatError) as e:
        formats.index_file(path, spec, 0)
    assert str(e.value).startswith(str(index)) and "expected 72 bytes" in str(e.value)
    assert "\n" not in str(e.value)


def test_a_missing_index_file_is_one_line_naming_it(tmp_path):
    path = str(tmp_path / "t.bin")
    formats.write_file(path, 0, SPEC)
    (tmp_path / "t.bin.sz.idx").unlink()
    with pytest.raises(FormatError, match=r"t\.bin\.sz\.idx: cannot open"):
        formats.index_file(path, SPEC, 0)


def test_a_bin_shorter_than_its_index_says_is_refused(tmp_path):
    path = tmp_path / "t.bin"
    formats.write_file(str(path), 0, SPEC)
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(FormatError, match="truncated"):
        formats.index_file(str(path), SPEC, 0)


def test_mmap_indexed_binary_reads_through_a_mapping_unless_told():
    base = ["workload=default", "dataset.num_samples_per_file=4"]
    assert config.load(base + ["dataset.format=mmap_indexed_binary"]).io.interface == "mmap"
    assert config.load(base + ["dataset.format=indexed_binary"]).io.interface == "posix"
    assert config.load(base + ["dataset.format=mmap_indexed_binary",
                               "io.interface=posix"]).io.interface == "posix"


@pytest.mark.mpi
@pytest.mark.parametrize("fmt,interface", [("mmap_indexed_binary", "mmap"),
                                           ("indexed_binary", "posix")])
def test_a_run_reads_each_sample_at_its_index_entry(tmp_path, fmt, interface):
    """Two ranks, two epochs, one shared file: each rank reads the file's index files once,
    whole, in one read after an open (indexed_binary; mapped, so not read, for
    mmap_indexed_binary), then each of its samples at its index entry."""
    spf = 12
    args = ["workload=default", f"dataset.format={fmt}", "dataset.num_files_train=1",
            f"dataset.num_samples_per_file={spf}", "dataset.record_length=3000",
            "dataset.record_length_stdev=400", "dataset.num_files_eval=0",
            "dataset.num_subfolders_train=0", "reader.batch_size=3",
            "reader.sample_shuffle=seed", "train.epochs=2", "train.computation_time=0",
            "workflow.evaluation=false", "workflow.generate_data=true", "io.keep_oplog=true",
            f"dataset.data_folder={tmp_path / 'd'}", f"output.folder={tmp_path / 'o'}"]
    run_mpi(2, "run_cli.py", "run", "-q", *args, timeout=180)
    s = json.loads((tmp_path / "o" / "latest" / "summary.json").read_text())
    assert s["dlio_mpi"]["config"]["io"]["interface"] == interface
    cfg = config.load(args)
    from dlio_mpi.data.dataset import format_spec
    spec = format_spec(cfg)
    path = str(next((tmp_path / "d" / "train").glob("*.bin")))
    idx = formats.index_file(path, spec, 0)
    got = []
    for rank in range(2):
        z = load_npz(tmp_path / "o" / "latest" / f"oplog_rank{rank:05d}.npz")
        phases = [k[:-len("_op")] for k in z if k.endswith("_op")]
        ops = {c: np.concatenate([z[f"{p}_{c}"] for p in phases])
               for c in ("op", "file", "offset", "bytes")}
        data = (ops["file"] < COMPANION_ID_BASE) & (ops["op"] == OP["read"]) \
            & (ops["bytes"] > 0)
        got += list(zip(ops["offset"][data].tolist(), ops["bytes"][data].tolist()))
        for k in (1, 2):
            mine = ops["file"] == companion_id(k, 0)
            if fmt == "mmap_indexed_binary":
                assert not mine.any()
                continue
            reads = mine & (ops["op"] == OP["read"])
            assert (mine & (ops["op"] == OP["open"])).sum() == 1
            assert list(zip(ops["offset"][reads], ops["bytes"][reads])) == [(0, 8 * spf)]
    # each sample read once an epoch by one of the ranks
    assert sorted(got) == sorted(2 * list(zip(idx.offsets.tolist(), idx.lengths.tolist())))
    # clean removes the index files with their .bin
    assert sorted(p.name.split(".", 1)[1] for p in (tmp_path / "d" / "train").iterdir()) \
        == ["bin", "bin.off.idx", "bin.sz.idx"]
    run_mpi(1, "run_cli.py", "clean", *args, timeout=120)
    assert not any((tmp_path / "d" / "train").glob("*"))


@pytest.mark.mpi
def test_generation_makes_a_missing_index_file_again(tmp_path):
    """A .bin whose .sz.idx is gone is no complete file: generate writes it anew, with what
    DLIO's generator writes."""
    args = ["workload=default", "dataset.format=indexed_binary", "dataset.num_files_train=2",
            "dataset.num_samples_per_file=8", "dataset.record_length=4096",
            "dataset.record_length_stdev=0", "dataset.num_files_eval=0",
            "dataset.num_subfolders_train=0", "reader.batch_size=2", "train.epochs=1",
            "train.computation_time=0", "workflow.evaluation=false", "workflow.generate_data=true",
            f"dataset.data_folder={tmp_path / 'd'}", f"output.folder={tmp_path / 'o'}"]
    run_mpi(1, "run_cli.py", "run", "-q", *args, timeout=120)
    train = tmp_path / "d" / "train"
    assert len(list(train.iterdir())) == 6
    lost = next(train.glob("*_0000001_of_2.bin.sz.idx"))
    lost.unlink()
    run_mpi(1, "run_cli.py", "generate", *args, timeout=120)
    off, sz = dlio_index_files(4096, 8)
    assert lost.read_bytes() == sz
    assert all(p.read_bytes() == off for p in train.glob("*.off.idx"))

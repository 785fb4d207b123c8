"""Megatron's indexed dataset (.bin and .idx): the files written here read as
Megatron-DeepSpeed's MMapIndexedDataset reads them (its header through a buffered file, its
arrays and samples viewed in numpy.memmap mappings), an index Megatron's builder wrote (uint16
tokens, documents of several samples) indexed the same way, and a run reading each sample at
the offset and length of its index entry, through a memory mapping for mmap_indexed_binary."""
import json
import struct

import numpy as np
import pytest

from datautil import load_npz
from dlio_mpi import engines, formats
from dlio_mpi.config import loader as config
from dlio_mpi.formats.spec import FormatError, FormatSpec
from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

SPEC = FormatSpec(format="indexed_binary", samples_per_file=9, record_length=3000,
                  record_length_stdev=500, seed=7)


def megatron_index(idx_path):
    """sizes (tokens), pointers, document index and dtype, as MMapIndexedDataset.Index reads
    them."""
    codes = {1: np.uint8, 8: np.uint16, 4: np.int32}
    with open(idx_path, "rb") as stream:
        assert stream.read(9) == b"MMIDIDX\x00\x00"
        assert struct.unpack("<Q", stream.read(8)) == (1,)
        (code,) = struct.unpack("<B", stream.read(1))
        (count,) = struct.unpack("<Q", stream.read(8))
        (docs,) = struct.unpack("<Q", stream.read(8))
        offset = stream.tell()
    buf = memoryview(np.memmap(idx_path, mode="r", order="C"))
    sizes = np.frombuffer(buf, dtype=np.int32, count=count, offset=offset)
    pointers = np.frombuffer(buf, dtype=np.int64, count=count, offset=offset + sizes.nbytes)
    doc_idx = np.frombuffer(buf, dtype=np.int64, count=docs,
                            offset=offset + sizes.nbytes + pointers.nbytes)
    return sizes, pointers, doc_idx, np.dtype(codes[code])


def test_written_files_read_as_megatrons_indexed_dataset_reads_them(tmp_path):
    path = str(tmp_path / "t.bin")
    written = formats.write_file(path, 0, SPEC)
    assert formats.file_paths(SPEC, path) == [path, str(tmp_path / "t.idx")]
    sizes, pointers, doc_idx, dtype = megatron_index(tmp_path / "t.idx")
    assert dtype == np.uint8 and list(doc_idx) == list(range(10))
    idx = formats.index_file(path, SPEC, 0)
    assert idx == written
    assert list(idx.offsets) == list(pointers)
    assert list(idx.lengths) == list(sizes * dtype.itemsize)
    assert len(set(idx.lengths.tolist())) > 1       # sizes spread: pointers matter
    data = np.memmap(path, mode="r", order="C")
    with engines.PosixFile(path, mmap=True) as mapped, engines.PosixFile(path) as plain:
        for i in range(SPEC.samples_per_file):
            want = np.frombuffer(data, dtype=dtype, count=int(sizes[i]), offset=int(pointers[i]))
            assert bytes(want) == bytes(formats.sample_bytes(SPEC, 0, i))
            off, n = int(idx.offsets[i]), int(idx.lengths[i])
            assert bytes(mapped.read(off, n)) == bytes(want)
            assert bytes(plain.read(off, n)) == bytes(want)


def test_an_index_megatrons_builder_wrote_is_read(tmp_path):
    """uint16 tokens (Megatron's choice for a vocabulary under 65500), documents of several
    samples: offsets and lengths in bytes from the pointers and token counts."""
    tokens = np.array([5, 1, 7, 3, 2, 8], dtype=np.int32)
    pointers = np.cumsum(tokens * 2) - tokens * 2
    docs = np.array([0, 2, 5, 6], dtype=np.int64)
    (tmp_path / "m.idx").write_bytes(
        b"MMIDIDX\x00\x00" + struct.pack("<QBQQ", 1, 8, len(tokens), len(docs))
        + tokens.tobytes() + pointers.astype(np.int64).tobytes() + docs.tobytes())
    (tmp_path / "m.bin").write_bytes(np.arange(tokens.sum(), dtype=np.uint16).tobytes())
    spec = FormatSpec(format="mmap_indexed_binary", samples_per_file=6)
    idx = formats.index_file(str(tmp_path / "m.bin"), spec)
    assert list(idx.offsets) == list(pointers) and list(idx.lengths) == list(tokens * 2)
    assert idx.file_size == 2 * tokens.sum()


@pytest.mark.parametrize("damage,words", [
    (lambda b: b"XXIDIDX\x00\x00" + b[9:], "not Megatron's index magic"),
    (lambda b: b[:20], "shorter than the 34-byte header"),
    (lambda b: b[:-8], "expected"),
])
def test_a_damaged_index_is_one_line_naming_it(tmp_path, damage, words):
    path = str(tmp_path / "t.bin")
    formats.write_file(path, 0, SPEC)
    idx = tmp_path / "t.idx"
    idx.write_bytes(damage(idx.read_bytes()))
    with pytest.raises(FormatError) as e:
        formats.index_file(path, SPEC, 0)
    assert str(e.value).startswith(str(idx)) and words in str(e.value)
    assert "\n" not in str(e.value)


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
    args = ["workload=default", f"dataset.format={fmt}", "dataset.num_files_train=1",
            "dataset.num_samples_per_file=12", "dataset.record_length=3000",
            "dataset.record_length_stdev=400", "dataset.num_files_eval=0",
            "dataset.num_subfolders_train=0", "reader.batch_size=3",
            "reader.sample_shuffle=seed", "train.epochs=1", "train.computation_time=0",
            "workflow.evaluation=false", "workflow.generate_data=true", "io.keep_oplog=true",
            f"dataset.data_folder={tmp_path / 'd'}", f"output.folder={tmp_path / 'o'}"]
    run_mpi(1, "run_cli.py", "run", "-q", *args, timeout=180)
    s = json.loads((tmp_path / "o" / "latest" / "summary.json").read_text())
    assert s["dlio_mpi"]["config"]["io"]["interface"] == interface
    cfg = config.load(args)
    from dlio_mpi.data.dataset import format_spec
    spec = format_spec(cfg)
    path = str(next((tmp_path / "d" / "train").glob("*.bin")))
    idx = formats.index_file(path, spec, 0)
    z = load_npz(tmp_path / "o" / "latest" / "oplog_rank00000.npz")
    reads = (z["e0_op"] == 0) & (z["e0_bytes"] > 0)
    got = sorted(zip(z["e0_offset"][reads].tolist(), z["e0_bytes"][reads].tolist()))
    assert got == sorted(zip(idx.offsets.tolist(), idx.lengths.tolist()))
    # clean removes the .idx with its .bin
    assert sorted(p.suffix for p in (tmp_path / "d" / "train").iterdir()) == [".bin", ".idx"]
    run_mpi(1, "run_cli.py", "clean", *args, timeout=120)
    assert not any((tmp_path / "d" / "train").glob("*"))

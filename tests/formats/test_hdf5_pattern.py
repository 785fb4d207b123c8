"""HDF5 through sec2: the reads the emulator's engine makes (its logging driver records every
pread libhdf5 issues) are the reads h5py makes for the same rows, call for call (strace of a
Python process reading with h5py), for both file formats, contiguous and chunked."""
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from dlio_mpi import engines
from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "scripts", "benchmarks"))
import metaops  # noqa: E402
from datautil import own_summary

STRACE = shutil.which("strace")
PREAD = re.compile(r"pread64\((\d+), .*, (\d+), (\d+)\)\s+=\s+(\d+)")
OPEN = re.compile(r'openat\(AT_FDCWD, "(.*?)".*=\s+(\d+)$')


def strace_reads(path, code, tmp_path):
    """(offset, bytes) of every pread64 of path while python runs code."""
    trace = tmp_path / "strace.txt"
    subprocess.run([STRACE, "-e", "trace=openat,pread64", "-o", str(trace), sys.executable,
                    "-c", code], check=True)
    fds, reads = set(), []
    for line in trace.read_text().splitlines():
        m = OPEN.match(line.strip())
        if m and m.group(1) == str(path):
            fds.add(m.group(2))
            continue
        m = PREAD.match(line.strip())
        if m and m.group(1) in fds:
            reads.append((int(m.group(3)), int(m.group(4))))
    return reads


def engine_posix_reads(path, name, reads, check=None, **options):
    """(offset, length) of the POSIX reads beneath the engine's H5Dread of each (start, count)
    of rows of dataset `name` (the sec2 driver, the op log's view), check(start, rows) on
    each read's rows."""
    log = engines.OpLog(1 << 12)
    with engines.H5Dataset(path, name, driver="sec2", oplog=log, file_id=1, **options) as d:
        for start, count in reads:
            out, n = d.read_rows([start], [count])
            if check is not None:
                check(start, out[:n])
    a = log.arrays()
    mine = (a["op"] == engines.OP["read"]) & (a["iface"] == engines.IFACE["posix"])
    return list(zip(a["offset"][mine].tolist(), a["bytes"][mine].tolist()))


def h5py_reads(path, rows, tmp_path):
    """The preads of path while h5py opens it and reads rows of dataset records."""
    code = (f"import h5py\nf = h5py.File({str(path)!r}, 'r')\nd = f['records']\n"
            + "".join(f"d[{r}]\n" for r in rows) + "f.close()\n")
    return strace_reads(path, code, tmp_path)


@pytest.mark.skipif(STRACE is None, reason="strace not installed (scripts/setup.sh installs it)")
@pytest.mark.parametrize("libver", ["earliest", "latest"])
@pytest.mark.parametrize("chunks", [None, (1, 4096), (2, 16384)])
def test_engine_reads_are_h5pys(tmp_path, libver, chunks):
    import h5py

    path = tmp_path / "f.h5"
    data = np.random.default_rng(3).integers(0, 255, (8, 16384), dtype=np.uint8)
    with h5py.File(path, "w", libver=libver) as f:
        f.create_dataset("records", data=data, chunks=chunks)
    rows = [3, 5, 0]
    want = h5py_reads(path, rows, tmp_path)
    log = engines.OpLog(1 << 12)
    with engines.H5Dataset(path, "records", driver="sec2", oplog=log, file_id=1) as d:
        for r in rows:
            out, n = d.read_rows([r], [1])
            assert np.array_equal(out[:n], data[r])
    a = log.arrays()
    mine = (a["op"] == engines.OP["read"]) & (a["iface"] == engines.IFACE["posix"])
    got = list(zip(a["offset"][mine].tolist(), a["bytes"][mine].tolist()))
    assert len(want) > len(rows) and got == want


@pytest.mark.skipif(STRACE is None, reason="strace not installed (scripts/setup.sh installs it)")
@pytest.mark.parametrize("chunks", [None, (16, 8192)])
def test_a_dataset_opened_for_each_read_reads_as_h5pys_indexing(tmp_path, chunks):
    """h5py's f["records"][i:i+8] opens the dataset for each read (a Dataset's __getitem__):
    libhdf5's chunk cache is empty each time, so the two halves of a chunk read the chunk
    twice. The engine with dataset_per_read makes the same preads, call for call; without
    it the chunk is read once."""
    import h5py

    path = tmp_path / "f.h5"
    data = np.random.default_rng(4).integers(0, 255, (64, 8192), dtype=np.uint8)
    with h5py.File(path, "w") as f:
        f.create_dataset("records", data=data, chunks=chunks)
    starts = [8, 0, 40, 16, 32]
    code = (f"import h5py\nf = h5py.File({str(path)!r}, 'r')\n"
            + "".join(f"f['records'][{s}:{s + 8}]\n" for s in starts) + "f.close()\n")
    want = strace_reads(path, code, tmp_path)

    def engine_reads(per_read):
        def check(s, out):
            assert np.array_equal(out.reshape(8, -1), data[s:s + 8])
        return engine_posix_reads(path, "records", [(s, 8) for s in starts], check,
                                  dataset_per_read=per_read)

    got = engine_reads(True)
    assert got == want
    if chunks:
        whole = [r for r in got if r[1] == 16 * 8192]
        assert len(whole) == len(starts)        # each read its chunk, 0 and 2 twice
        # kept open: chunks 0, 2 and 1 once each, from libhdf5's cache after
        assert len([r for r in engine_reads(False) if r[1] == 16 * 8192]) == 3


@pytest.mark.skipif(STRACE is None, reason="strace not installed (scripts/setup.sh installs it)")
def test_no_chunk_cache_reads_as_h5py_without_one(tmp_path):
    """h5py's File(rdcc_nbytes=0): a row inside an uncompressed chunk is read from the file
    alone, the chunk never whole. The engine with chunk_cache=False makes the same preads,
    call for call; with libhdf5's cache each row's chunk is read whole."""
    import h5py

    path = tmp_path / "f.h5"
    data = np.random.default_rng(5).integers(0, 255, (64, 4096), dtype=np.uint8)
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=data, chunks=(8, 4096))
    rows = [9, 0, 43, 17, 60, 33]
    code = (f"import h5py\nf = h5py.File({str(path)!r}, 'r', rdcc_nbytes=0)\n"
            + "".join(f"f['x'][{r}]\n" for r in rows) + "f.close()\n")
    want = strace_reads(path, code, tmp_path)

    def engine_reads(cache):
        def check(r, out):
            assert np.array_equal(out, data[r])
        return engine_posix_reads(path, "x", [(r, 1) for r in rows], check,
                                  chunk_cache=cache)

    got = engine_reads(False)
    assert got == want
    assert [n for _, n in got].count(4096) == len(rows)
    assert [n for _, n in engine_reads(True)].count(8 * 4096) == len(rows)


def test_a_dataset_opened_for_each_read_is_refused_collective_or_writing(tmp_path):
    import h5py
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("records", data=np.zeros((4, 16), np.uint8))
    with pytest.raises(ValueError, match="read independently"):
        engines.H5Dataset(path, "records", driver="sec2", mode="r+", dataset_per_read=True)


def h5py_box_reads(path, name, boxes, tmp_path):
    """The preads of path while h5py opens it and reads boxes of dataset name."""
    code = (f"import h5py\nf = h5py.File({str(path)!r}, 'r')\nd = f[{name!r}]\n"
            + "".join("d[" + ", ".join(f"{s}:{s + c}" for s, c in zip(st, ct)) + "]\n"
                      for st, ct in boxes) + "f.close()\n")
    return strace_reads(path, code, tmp_path)


@pytest.mark.skipif(STRACE is None, reason="strace not installed (scripts/setup.sh installs it)")
@pytest.mark.parametrize("compression", [None, "gzip"])
def test_engine_box_reads_are_h5pys(tmp_path, compression):
    """A 3-D crop of a chunked volume (a field of view): the same chunk reads as h5py's."""
    import h5py

    path = tmp_path / "v.h5"
    data = np.zeros((40, 40, 40), dtype=np.int64)
    data[::3, ::5, :] = np.arange(40)
    with h5py.File(path, "w") as f:
        f.create_dataset("labels", data=data, chunks=(9, 11, 13), compression=compression)
    boxes = [((3, 7, 11), (17, 17, 17)), ((20, 0, 5), (17, 17, 17))]
    want = h5py_box_reads(path, "labels", boxes, tmp_path)
    log = engines.OpLog(1 << 12)
    with engines.H5Dataset(path, "labels", driver="sec2", oplog=log, file_id=1) as d:
        for st, ct in boxes:
            out, n = d.read_box(st, ct)
            box = tuple(slice(s, s + c) for s, c in zip(st, ct))
            assert np.array_equal(out[:n].view(np.int64).reshape(ct), data[box])
    a = log.arrays()
    mine = (a["op"] == engines.OP["read"]) & (a["iface"] == engines.IFACE["posix"])
    assert list(zip(a["offset"][mine].tolist(), a["bytes"][mine].tolist())) == want
    assert ((a["op"] == engines.OP["read"]) & (a["iface"] == engines.IFACE["hdf5_sec2"])).sum() \
        == len(boxes)


def data_file_bytes_by_strace(tmp_path, interface, epochs):
    """(bytes the file system returned for reads of the dataset's files, opens of them, the
    run's bytes_moved) of a 1-rank run of io.interface under strace."""
    data, out, trace = tmp_path / f"d{interface}", tmp_path / f"o{interface}", tmp_path / "t"
    common = [f"dataset.data_folder={data}", "dataset.format=hdf5", "dataset.num_files_train=4",
              "dataset.num_samples_per_file=4", "dataset.record_length=16k",
              f"train.epochs={epochs}", "train.computation_time=0", f"io.interface={interface}"]
    run = [sys.executable, "-m", "dlio_mpi", "run", *common]
    subprocess.run(run + [f"output.folder={tmp_path}/gen"], check=True, capture_output=True)
    subprocess.run([STRACE, "-f", "--seccomp-bpf", "-qq", "-y", "-o", str(trace),
                    "-e", "trace=openat,read,pread64,readv,preadv,preadv2",
                    *run, f"output.folder={out}"], check=True, capture_output=True)
    got = opens = 0
    mine = re.compile(rf"^\d+\s+(\w+)\((\d+)<{re.escape(str(data))}/train/[^>]*>.*=\s+(\d+)$")
    opened = re.compile(rf'^\d+\s+openat\(AT_FDCWD<[^>]*>, "{re.escape(str(data))}/train/')
    for line in trace.read_text().splitlines():
        m = mine.match(line)
        if m and m.group(1) != "openat":
            got += int(m.group(3))
        elif opened.match(line) and "= -1" not in line:
            opens += 1
    return got, opens, own_summary(out)["bytes_moved"]


@pytest.mark.skipif(STRACE is None, reason="strace not installed (scripts/setup.sh installs it)")
def test_bytes_moved_against_the_file_system_for_each_hdf5_driver(tmp_path):
    """As the README says: through sec2 bytes_moved is every byte the file system returned for
    the data files; through the MPI-IO driver it is the dataset's bytes, and the file system
    also returned libhdf5's metadata reads, the same number of bytes for each open of a file."""
    got, opens, moved = data_file_bytes_by_strace(tmp_path, "hdf5_sec2", 2)
    assert got == moved and opens >= 4
    per_open = set()
    for epochs in (1, 2):
        got, opens, moved = data_file_bytes_by_strace(tmp_path, "hdf5", epochs)
        assert moved == epochs * 4 * 4 * 16384
        assert got > moved and (got - moved) % opens == 0, (got, moved, opens)
        per_open.add((got - moved) // opens)
    assert len(per_open) == 1, per_open


@pytest.mark.skipif(STRACE is None, reason="strace not installed (scripts/setup.sh installs it)")
def test_a_shared_hdf5_file_read_collectively_is_opened_only_through_mpi_io(tmp_path):
    """hdf5_coll on one shared file, 2 ranks, 2 epochs: each rank opens the data file once,
    the MPI-IO driver's open (right after MPI-IO's lock test file), and nothing else opens it
    (no index open through another driver), so Darshan records the file as MPI-IO's."""
    common = [f"dataset.data_folder={tmp_path}/d", "dataset.format=hdf5",
              "io.interface=hdf5_coll", "io.layout=shared", "dataset.num_files_train=1",
              "dataset.num_samples_per_file=16", "dataset.record_length=16k", "train.epochs=2",
              "train.computation_time=0", "reader.batch_size=4"]
    run_mpi(2, "run_cli.py", "run", *common, f"output.folder={tmp_path}/gen", timeout=120)
    sdir = tmp_path / "s"
    sdir.mkdir()
    run_mpi(2, "run_cli.py", "run", *common, f"output.folder={tmp_path}/o", timeout=120,
            rank_wrap=metaops.strace_wrap(STRACE, sdir))
    data = f"{tmp_path}/d/train/img_0000000_of_1.h5"
    for r in (0, 1):
        opens = [p for call, p in metaops.read(sdir / f"rank.{r}")
                 if call.startswith("open") and p and p.startswith(data)]
        assert len([p for p in opens if p == data]) == 1, (r, opens)
        assert opens[-1] == data and opens[-2].startswith(data + ".locktest"), (r, opens)


@pytest.mark.skipif(STRACE is None, reason="strace not installed (scripts/setup.sh installs it)")
def test_variable_length_rows_read_as_h5py_reads_them(tmp_path):
    """dataset.hdf5_vlen: h5py's ds[i] of a dataset of variable-length bytes reads the row's
    descriptor, then the sequence's heap collection (a 4 KiB block and the rest); the
    engine's read of the row with a native sequence type (the dataset opened for each read,
    as f['records'][i] does) makes the same preads, call for call, and counts the sequence's
    bytes."""
    import h5py

    from dlio_mpi import formats
    from dlio_mpi.formats.spec import FormatSpec

    path = tmp_path / "f.h5"
    spec = FormatSpec(format="hdf5", samples_per_file=24, record_length=12000,
                      record_length_stdev=5000, seed=7, vlen=True)
    formats.write_file(str(path), 0, spec)
    rows = [5, 0, 17, 9, 23, 12]
    code = (f"import h5py\nf = h5py.File({str(path)!r}, 'r')\n"
            + "".join(f"f['records'][{r}]\n" for r in rows) + "f.close()\n")
    want = strace_reads(path, code, tmp_path)
    # f['records'] opens the dataset anew for each read: its sieve buffer starts empty
    assert engine_posix_reads(path, "records", [(r, 1) for r in rows],
                              dataset_per_read=True) == want
    with h5py.File(path, "r") as f:
        lengths = [len(f["records"][r]) for r in rows]
    with engines.H5Dataset(path, "records", driver="sec2") as d:
        assert [d.read_rows([r], [1])[1] for r in rows] == lengths

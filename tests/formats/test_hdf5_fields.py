"""HDF5 samples with further fields (dataset.hdf5_fields: an image's label in a dataset of its
own beside the images' rows): each read of rows reads the same rows of every field after, as a
program reading f["images"][i] then f["labels"][i] does, call for call beneath libhdf5."""
import shutil

import numpy as np
import pytest

from dlio_mpi import engines, formats
from dlio_mpi.config import loader as config
from dlio_mpi.data.dataset import format_spec
from datautil import load_npz, own_summary
from mpirun import run_mpi
from test_hdf5_pattern import STRACE, strace_reads

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

FIELDS = "[{name: labels, bytes: 8, dtype: int64}, {name: boxes, bytes: 16, dtype: int32}]"
BASE = ["workload=default", "dataset.format=hdf5", "io.interface=hdf5_sec2",
        "dataset.num_files_train=4", "dataset.num_samples_per_file=16",
        "dataset.record_length=4120", f"dataset.hdf5_fields={FIELDS}",
        "reader.read_threads=0", "reader.batch_size=4"]


def images_and_labels(path, n=16, chunks=None):
    import h5py
    rng = np.random.default_rng(5)
    images = rng.integers(0, 255, (n, 4096), dtype=np.uint8)
    labels = rng.integers(0, 1000, n).astype(np.int64)
    with h5py.File(path, "w") as f:
        f.create_dataset("images", data=images, chunks=chunks)
        f.create_dataset("labels", data=labels)
    return images, labels


@pytest.mark.skipif(STRACE is None, reason="strace not installed (scripts/setup.sh installs it)")
@pytest.mark.parametrize("chunks", [None, (4, 4096)])
def test_a_sample_and_its_label_read_as_h5pys_indexing(tmp_path, chunks):
    """h5py's f["images"][i], f["labels"][i] for each sample (each dataset opened for its
    read): the engine with the labels a field and the dataset opened per read makes the same
    preads, and returns the row then its label."""
    path = tmp_path / "f.h5"
    images, labels = images_and_labels(path, chunks=chunks)
    rows = [3, 9, 0, 3]
    code = (f"import h5py\nf = h5py.File({str(path)!r}, 'r')\n"
            + "".join(f"f['images'][{r}]\nf['labels'][{r}]\n" for r in rows) + "f.close()\n")
    want = strace_reads(path, code, tmp_path)
    log = engines.OpLog(1 << 12)
    with engines.H5Dataset(path, "images", driver="sec2", oplog=log, file_id=1,
                           dataset_per_read=True, fields=("labels",)) as d:
        assert d.row_bytes == 4096 + 8
        for r in rows:
            out, n = d.read_rows([r], [1])
            assert n == 4104
            assert np.array_equal(out[:4096], images[r])
            assert out[4096:4104].view(np.int64)[0] == labels[r]
    a = log.arrays()
    posix = (a["op"] == engines.OP["read"]) & (a["iface"] == engines.IFACE["posix"])
    got = list(zip(a["offset"][posix].tolist(), a["bytes"][posix].tolist()))
    # the same preads; the one out of place is the labels' object header, read when the
    # engine opens the file (it knows its fields' sizes from then on), not at the first label
    assert sorted(got) == sorted(want) and len(got) > 2 * len(rows)
    assert [r for r in got if r[1] != 512] == [r for r in want if r[1] != 512]
    h5 = (a["op"] == engines.OP["read"]) & (a["iface"] == engines.IFACE["hdf5_sec2"])
    assert a["bytes"][h5].tolist() == [4096, 8] * len(rows)     # an H5Dread each


def test_a_batch_of_rows_then_their_fields(tmp_path):
    """A read of several rows reads them in one H5Dread (ascending rows), then the same rows
    of each field in one more: the buffer holds the rows, then each field's rows."""
    path = tmp_path / "f.h5"
    images, labels = images_and_labels(path)
    with engines.H5Dataset(path, "images", driver="sec2", fields=("labels",)) as d:
        out, n = d.read_rows([7, 2], [1, 2])
    assert n == 3 * 4104
    assert np.array_equal(out[:3 * 4096].reshape(3, -1), images[[2, 3, 7]])
    assert out[3 * 4096:n].view(np.int64).tolist() == labels[[2, 3, 7]].tolist()


def test_fields_that_cannot_be_read_are_named(tmp_path):
    import h5py
    path = tmp_path / "f.h5"
    images_and_labels(path)
    with h5py.File(path, "a") as f:
        f.create_dataset("short", data=np.zeros(3, np.int64))
    with pytest.raises(Exception, match="has no dataset named masks"):
        engines.H5Dataset(path, "images", driver="sec2", fields=("labels", "masks"))
    with pytest.raises(Exception, match="dataset short in .* has 3 rows, dataset images 16"):
        engines.H5Dataset(path, "images", driver="sec2", fields=("short",))
    with pytest.raises(ValueError, match="read only"):
        engines.H5Dataset(path, "images", driver="sec2", mode="r+", fields=("labels",))


def test_files_with_fields_are_written_and_indexed(tmp_path):
    """The generator writes a dataset a field, a row a sample; a sample's bytes are its row's,
    then its fields'; the engine reads back exactly those bytes. A file without a field's
    dataset is refused by its index."""
    import h5py
    spec = format_spec(config.load(BASE))
    assert spec.field_bytes == 24 and spec.fields[0] == ("labels", 8, "int64", 0)
    idx = formats.write_file(tmp_path / "f.h5", 2, spec)
    assert idx.num_samples == 16 and (idx.sizes == 4120).all() and not idx.exact
    with h5py.File(tmp_path / "f.h5") as f:
        assert (f["records"].shape, f["labels"].shape, f["boxes"].shape) == (
            (16, 4096), (16,), (16, 4))
        assert (f["labels"].dtype, f["boxes"].dtype) == (np.dtype("int64"), np.dtype("int32"))
        assert f["labels"].chunks is None
    with engines.H5Dataset(tmp_path / "f.h5", "records", driver="sec2",
                           fields=("labels", "boxes")) as d:
        for k in (0, 5, 15):
            out, n = d.read_rows([k], [1])
            assert bytes(out[:n]) == bytes(formats.sample_bytes(spec, 2, k))
    assert formats.get("hdf5").sample_value(spec, 2, 5).shape == (4096,)
    other = spec.replace(fields=spec.fields + (("masks", 4, "uint8", 0),))
    with pytest.raises(formats.FormatError, match="masks"):
        formats.index_file(tmp_path / "f.h5", other)


@pytest.mark.parametrize("overrides,words", [
    (["dataset.hdf5_fields=[{name: labels}]"], "at least name and bytes"),
    (["dataset.hdf5_fields=[{name: labels, bytes: 12, dtype: int64}]"], "whole number"),
    (["dataset.hdf5_fields=[{name: records, bytes: 8}]"], "each once"),
    (["dataset.hdf5_fields=[{name: a, bytes: 8, colour: red}]"], "unknown key 'colour'"),
    (["dataset.hdf5_fields=[{name: a, bytes: 8, dtype: str}]"], "numeric type"),
    (["dataset.record_length=24"], "leaves no row"),
    (["dataset.format=npz", "io.interface=posix"], "dataset.format hdf5"),
    (["io.write_first=true", "io.interface=hdf5"], "io.write_first=false"),
])
def test_field_config_errors(overrides, words):
    with pytest.raises(config.ConfigError) as e:
        config.load(BASE + overrides)
    assert words in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("interface,layout,threads", [
    ("hdf5_sec2", "multi", 0), ("hdf5_sec2", "multi", 2), ("hdf5_coll", "shared", 0)])
def test_a_run_reads_every_sample_with_its_fields_once_an_epoch(tmp_path, interface, layout,
                                                                threads):
    """2 ranks, 2 epochs: every sample's row read once an epoch, each row read followed by
    one read of each field of the same rows (the main thread's reads, read-ahead threads',
    and collective ones: a batch's rows in one call, then its fields' in one each)."""
    files = 1 if layout == "shared" else 4
    args = BASE + [f"dataset.data_folder={tmp_path}/d", f"output.folder={tmp_path}/o",
                   "io.keep_oplog=true", "train.epochs=2", "train.computation_time=0",
                   f"io.interface={interface}", f"io.layout={layout}",
                   f"dataset.num_files_train={files}", f"reader.read_threads={threads}",
                   "reader.hdf5_reads=sample" if interface == "hdf5_sec2" else "train.seed=1"]
    run_mpi(2, "run_cli.py", "run", *args[1:], timeout=300)
    s = own_summary(tmp_path / "o")
    samples = files * 16
    assert s["steps_per_epoch"] == samples // 2 // 4
    h5 = {"hdf5_sec2": engines.IFACE["hdf5_sec2"], "hdf5_coll": engines.IFACE["hdf5_coll"]}
    for e in range(2):
        rows, sizes = [], []
        for r in range(2):
            z = load_npz(tmp_path / "o" / "latest" / f"oplog_rank{r:05d}.npz")
            op, iface, nb = z[f"e{e}_op"], z[f"e{e}_iface"], z[f"e{e}_bytes"]
            mine = (op == engines.OP["read"]) & (iface == h5[interface])
            sizes += nb[mine].tolist()
            off, fid = z[f"e{e}_offset"][mine], z[f"e{e}_file"][mine]
            big = nb[mine] >= 4096
            rows += list(zip(fid[big].tolist(), (off[big] // 4096).tolist(),
                             (nb[mine][big] // 4096).tolist()))
        # the rows' reads cover every sample once; each followed by one read of each field
        if interface == "hdf5_sec2":        # a read a sample: the row its offset names
            covered = sorted((f, start) for f, start, n in rows if n == 1)
            assert covered == [(f, k) for f in range(files) for k in range(16)]
        rows_bytes = sum(b for b in sizes if b >= 4096)
        assert rows_bytes == samples * 4096
        assert sum(b for b in sizes if b < 4096) == samples * 24
        assert sizes.count(0) == 0 and len([b for b in sizes if b < 4096]) == 2 * len(rows)
    shutil.rmtree(tmp_path / "d", ignore_errors=True)


def test_the_dlio_benchmarks_datasets_per_record_are_fields():
    """The DLIO benchmark's dataset.hdf5.num_dset_per_record splits a record into datasets
    read for each sample: emulated as the row and the other parts as fields, not reported as
    a key left out (a nested option it does not emulate still is)."""
    base = ["workload=default", "dataset.format=hdf5", "io.interface=hdf5_sec2",
            "dataset.record_length=9216"]
    c = config.load(base + ["dataset.hdf5={num_dset_per_record: 3}"])
    assert c.dataset.hdf5_fields == [{"name": "records_1", "bytes": 3072},
                                     {"name": "records_2", "bytes": 3072}]
    assert c.not_emulated == ()
    assert format_spec(c).field_bytes == 6144
    c = config.load(base + ["dataset.hdf5={num_dset_per_record: 3, max_shape: [8]}"])
    assert len(c.dataset.hdf5_fields) == 2 and c.not_emulated == ("dataset.hdf5",)
    c = config.load(base + ["dataset.hdf5={num_dset_per_record: 1}"])
    assert c.dataset.hdf5_fields == []

"""HDF5 samples of variable-length bytes (dataset.hdf5_vlen: encoded images in one file, as
h5py.vlen_dtype(uint8) keeps them): written with h5py, each sequence in libhdf5's global heap;
read through libhdf5 by the engine as h5py reads them: an H5Dread moves the rows' 16-byte
descriptors (what Darshan's H5D module counts), libhdf5 then reads each sequence's heap
collection, a 4 KiB block and the rest right after it; the bytes moved are the sequences'."""
import h5py
import numpy as np
import pytest

from datautil import load_npz, own_summary
from dlio_mpi import engines, formats
from dlio_mpi.config import loader as config
from dlio_mpi.formats import content
from dlio_mpi.formats.spec import FormatSpec
from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its runs launch ranks under mpiexec

SPEC = FormatSpec(format="hdf5", samples_per_file=12, record_length=30000,
                  record_length_stdev=6000, seed=3, vlen=True,
                  fields=(("labels", 8, "int64", 0),))


def test_written_sequences_read_back_with_h5py(tmp_path):
    path = str(tmp_path / "f.h5")
    idx = formats.write_file(path, 2, SPEC)
    sizes = content.sample_sizes(SPEC, 2)
    assert len(set(sizes.tolist())) > 1 and (idx.sizes == sizes).all()
    data = np.empty(int((sizes - 8).sum()), np.uint8)
    content.fill(SPEC.content, 2, np.arange(12), sizes - 8, data)
    ends = np.cumsum(sizes - 8)
    with h5py.File(path, "r") as f:
        d = f[SPEC.dataset]
        assert h5py.check_vlen_dtype(d.dtype) == np.uint8 and d.shape == (12,)
        for i in range(12):
            assert d[i].tobytes() == data[ends[i] - sizes[i] + 8:ends[i]].tobytes()
        assert f["labels"].shape == (12,)
    with pytest.raises(formats.FormatError, match="1-D variable-length|2-D"):
        formats.index_file(path, SPEC.replace(vlen=False), 2)


def test_a_run_reads_each_sequence_from_the_heap(tmp_path):
    """At 2 ranks, an H5Dread a sample moving its 16-byte descriptor; beneath them the heap
    collections (a 4 KiB block and the rest right after it), which hold every sequence: their
    bytes, each collection counted once, the sequences' and the collections' headers."""
    data, out = tmp_path / "data", tmp_path / "out"
    run_mpi(2, "run_cli.py", "run", "workload=default", "dataset.format=hdf5",
            "dataset.hdf5_vlen=true", "io.interface=hdf5_sec2",
            f"dataset.data_folder={data}", f"output.folder={out}",
            "dataset.num_files_train=4", "dataset.num_samples_per_file=8",
            "dataset.record_length=20000", "dataset.record_length_stdev=4000",
            "reader.batch_size=2", "reader.hdf5_reads=sample", "reader.read_threads=0",
            "train.epochs=1", "train.computation_time=0", "io.keep_oplog=true",
            "workflow.generate_data=true", timeout=180)
    names = {v: k for k, v in engines.IFACE.items()}
    descriptors, collections = [], {}
    for r in range(2):
        z = load_npz(out / "latest" / f"oplog_rank{r:05d}.npz")
        reads = z["e0_op"] == 0
        ops = list(zip(z["e0_file"][reads].tolist(), z["e0_offset"][reads].tolist(),
                       z["e0_bytes"][reads].tolist(),
                       [names[int(i)] for i in z["e0_iface"][reads]]))
        descriptors += [n for _, _, n, w in ops if w == "hdf5_sec2"]
        posix = [op for op in ops if op[3] == "posix"]
        for a, b in zip(posix, posix[1:]):
            if a[2] == 4096 and b[:2] == (a[0], a[1] + 4096):
                collections[a[:2]] = 4096 + b[2]
    assert descriptors == [16] * 32
    held = 0
    for path in sorted((data / "train").iterdir()):
        with h5py.File(path, "r") as f:
            held += sum(len(x) for x in f["records"][:])
    assert held <= sum(collections.values()) <= held + 32 * 4096
    assert own_summary(out)["epochs"][0]["bytes_moved"] >= sum(collections.values())


def test_variable_length_samples_are_checked():
    base = ["workload=default", "dataset.format=hdf5", "dataset.hdf5_vlen=true",
            "io.interface=hdf5_sec2"]
    assert config.load(base).dataset.hdf5_vlen is True
    for bad in (["dataset.enable_chunking=true"],
                ["io.layout=shared", "dataset.num_files_train=1"],
                ["dataset.format=npz", "io.interface=posix"]):
        with pytest.raises(config.ConfigError, match="dataset.hdf5_vlen"):
            config.load(base + bad)

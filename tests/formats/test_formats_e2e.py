"""End-to-end runs for every format through the interfaces that read it, under mpiexec at 1 to
4 ranks: every sample read exactly once per epoch (mapped back from the op logs through each
file's index), bytes moved equal to what the samples need, the files real files of their
format."""

import numpy as np
import pytest

from dlio_mpi import formats
from dlio_mpi.config import loader as config
from dlio_mpi.data.dataset import Dataset
from datautil import load_npz, own_summary
from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

CASES = [
    # n, format, interface, layout, extra overrides
    (3, "tfrecord", "posix", "multi", ["reader.read_threads=2", "reader.transfer_size=16k",
                                       "dataset.record_length_stdev=8k"]),
    (2, "npz", "posix", "multi", ["reader.read_threads=0"]),
    (2, "npz", "posix", "multi", ["dataset.compression=zip", "reader.read_threads=0"]),
    (3, "npy", "stdio", "multi", ["dataset.num_samples_per_file=1",
                                  "dataset.num_files_train=13"]),
    (2, "csv", "mmap", "multi", ["reader.read_threads=1"]),
    (4, "tfrecord", "posix_direct", "multi", ["reader.read_threads=0",
                                              "reader.transfer_size=64k"]),
    (3, "raw", "mpiio", "multi", ["dataset.record_length_stdev=4k", "reader.transfer_size=8k"]),
    (4, "tfrecord", "mpiio_coll", "shared", []),
    (2, "hdf5", "hdf5", "multi", []),
    (3, "hdf5", "hdf5_coll", "shared", []),
    (4, "hdf5", "hdf5", "shared", []),
    (1, "hdf5", "hdf5_sec2", "multi", ["dataset.compression=gzip", "reader.read_threads=2",
                                       "dataset.chunk_size=64k"]),
]


def sample_of(idx, offsets):
    """Which sample of a file each read offset falls in."""
    return np.searchsorted(idx.offsets, offsets, side="right") - 1


@pytest.mark.parametrize("n,fmt,interface,layout,extra", CASES,
                         ids=[f"{c[1]}-{c[2]}-{c[3]}-n{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_every_sample_once(tmp_path, n, fmt, interface, layout, extra):
    files = 1 if layout == "shared" else 5
    spf = 24 if layout == "shared" else 4
    args = [f"dataset.data_folder={tmp_path}/data", f"output.folder={tmp_path}/out",
            f"dataset.format={fmt}", f"dataset.num_files_train={files}",
            f"dataset.num_samples_per_file={spf}", "dataset.record_length=32k",
            "reader.batch_size=2", "train.epochs=2", "train.computation_time=0",
            "reader.sample_shuffle=seed", f"io.interface={interface}", f"io.layout={layout}",
            "io.keep_oplog=true", "reader.transfer_size=0"] + extra
    run_mpi(n, "run_cli.py", "run", *args, timeout=240)
    cfg = config.load(["workload=default"] + args)
    files, spf = cfg.dataset.num_files_train, cfg.dataset.num_samples_per_file
    data = Dataset(cfg)
    s = own_summary(tmp_path / "out")
    total = files * spf
    steps = total // (n * 2)
    read = steps * n * 2
    assert s["steps_per_epoch"] == steps
    # the files are real files of their format
    for f in range(files):
        idx = formats.index_file(data.path(f), data.spec, f)
        assert idx.num_samples == spf
    logs = [load_npz(tmp_path / "out" / "latest" / f"oplog_rank{r:05d}.npz") for r in range(n)]
    for e in range(2):
        need = index_bytes = 0
        per_sample = {}
        for z in logs:
            op, fl, off, nb = (z[f"e{e}_{k}"] for k in ("op", "file", "offset", "bytes"))
            reads = op == 0
            for f in np.unique(fl[reads]):
                idx = data.index(int(f))
                sel = reads & (fl == f)
                if fmt == "hdf5" or interface == "mpiio_coll":
                    continue            # whole batches per call: checked by bytes below
                smp = sample_of(idx, off[sel])
                for k, o, b in zip(smp, off[sel], nb[sel]):
                    if interface != "posix_direct" and (
                            k < 0 or o + b > idx.offsets[k] + idx.lengths[k]):
                        # a read of the file's index (an NPZ directory), not of a sample
                        assert fmt == "npz" and e == 0, (fmt, e, o, b)
                        index_bytes += int(b)
                        continue
                    per_sample[(int(f), int(k))] = per_sample.get((int(f), int(k)), 0) + int(b)
        moved = s["epochs"][e]["bytes_moved"]
        if fmt == "hdf5" or interface == "mpiio_coll":
            sizes = [data.index(f).lengths if fmt != "hdf5" else data.index(f).sizes
                     for f in range(files)]
            mean = float(np.mean(np.concatenate(sizes)))
            if "dataset.compression=gzip" not in extra:
                assert moved == pytest.approx(read * mean, rel=0.3)
            # compressed chunks through sec2: bytes are libhdf5's own reads, and a file kept
            # open serves the second epoch from its chunk cache
            assert moved > 0 or (e == 1 and "dataset.compression=gzip" in extra)
            continue
        if interface == "posix_direct":
            assert moved >= read * 32768        # aligned ranges cover every sample
            continue
        assert len(per_sample) == read, (len(per_sample), read)
        for (f, k), b in per_sample.items():
            assert b == data.index(f).lengths[k]
            need += b
        # the index reads are in the op log and in the bytes moved (the first epoch's)
        assert (index_bytes > 0) == (fmt == "npz" and e == 0)
        assert moved == need + index_bytes

"""reader.reopen with read threads, end to end under mpiexec (op log, and the Darshan-like
records the run's analysis reads): a loader's workers that open a sample's file, read it and
close it. Every sample of a rank's share is read exactly once an epoch, each read in an open
of its own (POSIX: the file's descriptor; HDF5: H5Fopen, the driver's open and libhdf5's
metadata reads after it), and no two opens of one file overlap."""
import numpy as np
import pytest

from dlio_mpi_analysis.characterization.characterize import load_job
from dlio_mpi.config import loader as config
from dlio_mpi.data.dataset import Dataset
from datautil import load_npz, own_summary
from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

FILES, SPF, BATCH, THREADS, EPOCHS, RANKS = 8, 4, 2, 2, 2, 2
OPEN, CLOSE, READ = 2, 3, 0


def _args(tmp_path, fmt, interface):
    return [f"dataset.data_folder={tmp_path}/data", f"output.folder={tmp_path}/out",
            f"dataset.format={fmt}", f"dataset.num_files_train={FILES}",
            f"dataset.num_samples_per_file={SPF}", "dataset.record_length=16k",
            f"io.interface={interface}", f"reader.batch_size={BATCH}",
            f"reader.read_threads={THREADS}", "reader.reopen=true",
            "reader.sample_shuffle=seed", f"train.epochs={EPOCHS}",
            "train.computation_time=0.002", "io.keep_oplog=true"]


@pytest.mark.parametrize("fmt,interface", [("raw", "posix"), ("hdf5", "hdf5_sec2")])
def test_each_sample_read_in_an_open_of_its_own(tmp_path, fmt, interface):
    args = _args(tmp_path, fmt, interface)
    run_mpi(RANKS, "run_cli.py", "run", *args, timeout=240)
    cfg = config.load(["workload=default"] + args)
    data = Dataset(cfg)
    s = own_summary(tmp_path / "out")
    assert s["read_threads"] == THREADS
    per_rank = FILES * SPF // RANKS
    iface = {"posix": 0, "hdf5_sec2": 8}[interface]
    for r in range(RANKS):
        z = load_npz(tmp_path / "out" / "latest" / f"oplog_rank{r:05d}.npz")
        for e in range(EPOCHS):
            op, fl, off, nb, fi, st, du = (z[f"e{e}_{k}"] for k in (
                "op", "file", "offset", "bytes", "iface", "start", "dur"))
            mine = fi == iface
            reads = (op == READ) & mine
            assert int(reads.sum()) == per_rank
            assert int(((op == OPEN) & mine).sum()) == per_rank
            assert int(((op == CLOSE) & mine).sum()) == per_rank
            if fmt == "raw":
                # every sample of the rank's share once: (file, offset) pairs all different,
                # each a sample's place in its file
                got = sorted(zip(fl[reads].tolist(), off[reads].tolist()))
                assert len(set(got)) == per_rank
                for f, o in got:
                    assert o in data.index(f).offsets.tolist()
                assert set(nb[reads].tolist()) == {16384}
            # a file's opens one at a time: each open after the previous close of the file
            for f in np.unique(fl[mine & (op == OPEN)]):
                o = np.sort(st[mine & (op == OPEN) & (fl == f)])
                c = np.sort((st + du)[mine & (op == CLOSE) & (fl == f)])
                assert (o[1:] >= c[:-1]).all()
    job = load_job(str(tmp_path / "out"), dxt=True)
    samples = FILES * SPF * EPOCHS
    if fmt == "hdf5":
        assert int(job.records["H5F"]["H5F_OPENS"].sum()) == samples
        assert int(job.records["H5D"]["H5D_READS"].sum()) == samples
        posix = job.records["POSIX"]
        assert int(posix["POSIX_OPENS"].sum()) == samples
        # libhdf5 reads the file's metadata after each open, beside the sample
        assert int(posix["POSIX_READS"].sum()) >= 2 * samples
    else:
        assert int(job.records["POSIX"]["POSIX_OPENS"].sum()) == samples
        assert int(job.records["POSIX"]["POSIX_READS"].sum()) == samples


def test_worker_files_refused_with_reopen(tmp_path):
    from dlio_mpi.config.errors import ConfigError
    with pytest.raises(ConfigError, match="reopen"):
        config.load(["workload=default"] + _args(tmp_path, "raw", "posix")
                    + ["reader.worker_files=epoch"])

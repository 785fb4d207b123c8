"""A data loader's workers, each with its own open files, and HDF5 read a sample an H5Dread,
end to end under mpiexec (op log): reader.worker_files gives batch k to read thread k mod
read_threads, whose own handle of each file it reads is opened when it first needs the file,
and closed at each epoch's end (epoch: workers new every epoch) or kept (run);
reader.hdf5_reads=sample makes one H5Dread per sample instead of one union of a batch's rows
of a file (collective calls too, in reader.batch_order)."""
import numpy as np
import pytest

from dlio_mpi_analysis.characterization.characterize import load_job
from dlio_mpi.data import sampler
from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

FILES, SPF, BATCH, THREADS, EPOCHS = 4, 8, 4, 2, 2
SHAPE = ["dataset.format=hdf5", f"dataset.num_files_train={FILES}",
         f"dataset.num_samples_per_file={SPF}", "dataset.record_length=16k",
         "io.interface=hdf5_sec2", f"reader.batch_size={BATCH}", "reader.transfer_size=0",
         f"reader.read_threads={THREADS}", "reader.sample_shuffle=seed",
         f"train.epochs={EPOCHS}", "train.computation_time=0", "io.keep_oplog=true"]


def _opens_expected(kind):
    """The (thread, file) handles opened: per epoch, or over the run."""
    opened = set()
    total = 0
    for e in range(EPOCHS):
        plan = sampler.rank_samples(FILES * SPF, 1, 0, BATCH, e, 123, True)
        mine = {(k % THREADS, int(f)) for k, batch in enumerate(plan)
                for f in np.unique(batch // SPF)}
        if kind == "epoch":
            total += len(mine)
        else:
            opened |= mine
    return total if kind == "epoch" else len(opened)


@pytest.mark.parametrize("kind", ["epoch", "run"])
def test_each_worker_opens_its_own_files(tmp_path, kind):
    out = tmp_path / "out"
    run_mpi(1, "run_cli.py", "run", f"dataset.data_folder={tmp_path}/data",
            f"output.folder={out}", *SHAPE, f"reader.worker_files={kind}",
            "reader.hdf5_reads=sample", timeout=240)
    job = load_job(str(out), dxt=True)
    h5f, h5d = job.records["H5F"], job.records["H5D"]
    assert int(h5f["H5F_OPENS"].sum()) == _opens_expected(kind)
    assert int(h5d["H5D_READS"].sum()) == FILES * SPF * EPOCHS      # one a sample
    assert int(h5d["H5D_BYTES_READ"].sum()) == FILES * SPF * EPOCHS * 16384


def test_shared_handles_and_batch_reads_by_default(tmp_path):
    """The default: the rank's handles shared by its threads, each file opened once, a
    batch's rows of a file in one H5Dread (fewer calls than samples)."""
    out = tmp_path / "out"
    run_mpi(1, "run_cli.py", "run", f"dataset.data_folder={tmp_path}/data",
            f"output.folder={out}", *SHAPE, timeout=240)
    job = load_job(str(out), dxt=True)
    assert int(job.records["H5F"]["H5F_OPENS"].sum()) == FILES
    assert int(job.records["H5D"]["H5D_READS"].sum()) < FILES * SPF * EPOCHS


def test_collective_reads_a_sample_a_call_in_the_batch_order(tmp_path):
    """hdf5_coll with reader.hdf5_reads=sample: one collective H5Dread a sample on every rank,
    a batch's calls in reader.batch_order (h5bench reads a timestep's datasets in an order of
    its own), not a batch's rows in one union."""
    out = tmp_path / "out"
    run_mpi(2, "run_cli.py", "run", f"dataset.data_folder={tmp_path}/data",
            f"output.folder={out}", "dataset.format=hdf5", "dataset.num_files_train=1",
            "dataset.num_samples_per_file=16", "dataset.record_length=16k",
            "io.interface=hdf5_coll", "io.layout=shared", "reader.batch_size=4",
            "reader.transfer_size=0", "reader.read_threads=0", "reader.sample_shuffle=off",
            "reader.hdf5_reads=sample", "reader.batch_order=[1,0,3,2]", "train.epochs=1",
            "train.computation_time=0", "io.keep_oplog=true", timeout=240)
    job = load_job(str(out), dxt=True).frames()
    assert int(job.records["H5D"]["H5D_READS"].sum()) == 16       # one a sample
    calls = job.dxt_segments["DXT_H5D"]
    for rank, mine in calls[calls["op"] == "read"].groupby("rank"):
        rows = (mine.sort_values("start")["offset"] // 16384).tolist()
        first = 8 * int(rank)                   # each rank's block of 8 rows, 2 batches
        assert rows == [first + k for k in (1, 0, 3, 2, 5, 4, 7, 6)]

"""An epoch's bounds with the C step loop (tests/mpi/check_epoch_bounds.py): it starts when the
barrier that starts it releases the rank, waited for inside the loop, no batch queued before,
and ends with its last step, whatever the rank does in Python around the loop; at 1, 2 and 4
ranks."""
import pytest

from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

ARGS = ["dataset.format=tfrecord", "io.interface=posix", "dataset.num_files_train=8",
        "dataset.num_samples_per_file=16", "dataset.record_length=4096",
        "reader.batch_size=4", "reader.read_threads=2", "reader.sample_shuffle=seed",
        "train.epochs=3", "train.computation_time=0.002"]


@pytest.mark.parametrize("n", [1, 2, 4])
def test_epoch_from_the_start_barrier_to_the_last_step(tmp_path, n):
    out = run_mpi(n, "check_epoch_bounds.py", tmp_path / "data", *ARGS)
    assert out.stdout.count(": ok") == n, out.stdout

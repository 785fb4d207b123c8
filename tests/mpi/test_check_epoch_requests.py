"""An epoch's read-ahead requests built at once (dlio_mpi.readers.epoch_requests) and the C step loop
(dlio_mpi.run.steploop) leave each rank's op log as queueing batch by batch in the Python loop
does: the same operations per epoch (op, file, offset, bytes), files opened in the same order,
the same epoch figures (tests/mpi/check_epoch_requests.py), on shuffled multi-file workloads:
TFRecord through POSIX (indexes computed), NPZ through STDIO (indexes read from the files'
headers) with preprocessing in the read threads, raw records through independent MPI-IO, and
more files than a rank keeps open (files closed and opened again within an epoch), at 1 and 2
ranks."""
import pytest

from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

COMMON = ["dataset.num_files_train=12", "dataset.num_samples_per_file=5",
          "dataset.record_length=3000", "dataset.record_length_stdev=700",
          "reader.batch_size=4", "reader.read_threads=3", "reader.prefetch_size=2",
          "reader.sample_shuffle=seed", "train.epochs=3", "train.computation_time=0.001"]

CASES = {
    "tfrecord-posix": ["dataset.format=tfrecord", "io.interface=posix"],
    "npz-stdio-preprocess": ["dataset.format=npz", "io.interface=stdio",
                             "reader.preprocess_time=0.0002"],
    "raw-mpiio": ["dataset.format=raw", "io.interface=mpiio", "dataset.record_length_stdev=0"],
    "few-open": ["dataset.format=tfrecord", "io.interface=posix", "dataset.num_files_train=48",
                 "dataset.num_samples_per_file=2"],
}
MAX_OPEN = {"few-open": ["--max-open", "10"]}


@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.parametrize("case", sorted(CASES))
def test_op_log_as_batch_by_batch(tmp_path, n, case):
    p = run_mpi(n, "check_epoch_requests.py", tmp_path / "data", *MAX_OPEN.get(case, []),
                *COMMON, *CASES[case], timeout=240)
    for r in range(n):
        assert f"rank {r}: ok" in p.stdout, p.stdout[-3000:]

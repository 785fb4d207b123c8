"""A stream read ahead (reader.access=stream, read threads) in the C step loop
(tests/mpi/check_stream_loop.py): every file's reads are the stream's, in its order, as with
requests queued step by step from Python; TFRecord through POSIX with reads at each file's end
and steps that read nothing (their samples in blocks read before), steps of many reads of one
file (without the order kept, the threads read a file's next steps beside each other), through
STDIO, through independent MPI-IO, files read three at a time (reader.interleave), and more
files than a rank keeps open, at 1 and 2 ranks."""
import re

import pytest

from mpirun import bind_to_none, run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

COMMON = ["dataset.num_files_train=10", "dataset.num_samples_per_file=12",
          "dataset.record_length=3000", "dataset.record_length_stdev=700",
          "dataset.format=tfrecord", "reader.batch_size=2", "reader.read_threads=4",
          "reader.prefetch_size=3", "reader.transfer_size=8k", "train.epochs=2",
          "train.computation_time=0.0005"]

CASES = {
    "posix-eof": ["io.interface=posix", "reader.eof_reads=1", "reader.file_shuffle=seed"],
    "posix-shuffled": ["io.interface=posix", "reader.sample_shuffle=seed",
                       "reader.shuffle_size=5"],
    "stdio": ["io.interface=stdio", "reader.eof_reads=2"],
    "mpiio": ["io.interface=mpiio", "reader.transfer_size=16k"],
    "long-steps": ["io.interface=posix", "dataset.record_length=200k",
                   "dataset.record_length_stdev=0", "reader.batch_size=4",
                   "reader.transfer_size=32k", "dataset.num_files_train=4"],
    "interleave": ["io.interface=posix", "reader.interleave=3", "reader.eof_reads=1",
                   "reader.file_shuffle=seed"],
    "few-open": ["io.interface=posix", "dataset.num_files_train=30",
                 "dataset.num_samples_per_file=3", "reader.file_shuffle=seed"],
}
MAX_OPEN = {"few-open": ["--max-open", "3"]}


@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.parametrize("case", sorted(CASES))
def test_stream_in_the_step_loop_reads_as_its_reader(tmp_path, n, case):
    # unbound: a rank's threads read on all the cores at once, as they would beside each
    # other without the order kept
    p = run_mpi(n, "check_stream_loop.py", tmp_path / "data", *MAX_OPEN.get(case, []),
                *COMMON, *CASES[case], timeout=240, launcher_args=bind_to_none())
    for r in range(n):
        m = re.search(rf"rank {r}: ok, (\d+) steps without reads", p.stdout)
        assert m, p.stdout[-3000:]
        if case not in ("mpiio", "long-steps"):
            assert int(m.group(1)) > 0      # a step whose samples were read before

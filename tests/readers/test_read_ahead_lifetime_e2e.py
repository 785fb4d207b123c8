"""A stream read ahead over thousands of one-record files, steps that each span more files than
the open-file policy's default limit: no file is closed while its reads are queued, every
record is read exactly once per epoch, through its own file. Before, the queued reads of a file
closed to make room failed ("Bad file descriptor", batch 200), or a step was queued with a
file it had itself closed ("file slot 0 is not open", batch 300)."""
import numpy as np
import pytest

from datautil import load_npz
from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

FILES, RECORD = 3000, 4096
SHAPE = ["dataset.format=tfrecord", f"dataset.num_files_train={FILES}",
         "dataset.num_samples_per_file=1", f"dataset.record_length={RECORD}",
         "dataset.record_length_stdev=0", "reader.access=stream", "reader.sample_shuffle=off",
         "reader.file_shuffle=off", "reader.prefetch_size=2", "train.epochs=2",
         "train.computation_time=0"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    data = tmp_path_factory.mktemp("lifetime") / "data"
    run_mpi(2, "run_cli.py", "generate", f"dataset.data_folder={data}", *SHAPE, timeout=300)
    return data


@pytest.mark.parametrize("batch,threads", [(200, 0), (200, 1), (200, 4), (300, 0), (300, 1),
                                           (300, 4)])
@pytest.mark.parametrize("repeat", [0, 1])
def test_stream_over_many_files_reads_each_record_once(dataset, tmp_path, batch, threads,
                                                       repeat):
    out = tmp_path / "out"
    run_mpi(1, "run_cli.py", "run", f"dataset.data_folder={dataset}", f"output.folder={out}",
            *SHAPE, f"reader.batch_size={batch}", f"reader.read_threads={threads}",
            "io.keep_oplog=true", timeout=180)
    z = load_npz(out / "latest" / "oplog_rank00000.npz")
    steps = FILES // batch
    for e in range(2):
        op, f, nbytes = z[f"e{e}_op"], z[f"e{e}_file"], z[f"e{e}_bytes"]
        reads = (op == 0) & (nbytes > 0)
        per_file = np.bincount(f[reads], weights=nbytes[reads], minlength=FILES)
        # the records of the steps run (the rest dropped), each file read whole, once
        read = per_file[per_file > 0]
        assert len(read) == steps * batch
        assert np.all(read == RECORD + 16)
        assert np.bincount(f[op == 2], minlength=FILES).max() <= 1   # opened once at most

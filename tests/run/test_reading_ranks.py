"""reader.reading_ranks: the first K ranks alone read the data (sharing each epoch's samples
as a job of K ranks would, writing it first with io.write_first); the others run the same
steps and phases without touching a data file."""
import numpy as np
import pytest

from dlio_mpi.config import loader as config
from dlio_mpi.config.errors import ConfigError
from datautil import load_npz
from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

RECORD = 40 * 1024


def _args(tmp_path, *extra):
    return [f"dataset.data_folder={tmp_path}/data", f"output.folder={tmp_path}/out",
            "dataset.format=raw", "dataset.num_files_train=6",
            "dataset.num_samples_per_file=4", f"dataset.record_length={RECORD}",
            "reader.batch_size=2", "train.epochs=2", "reader.transfer_size=16k",
            "reader.sample_shuffle=seed", "train.computation_time=0.001",
            "io.keep_oplog=true", *extra]


def _reads(tmp_path, n):
    """rank -> phase -> (file, offset, bytes) of its reads."""
    out = {}
    for r in range(n):
        z = load_npz(tmp_path / "out" / "latest" / f"oplog_rank{r:05d}.npz")
        out[r] = {}
        for k, phase in enumerate(z["phases"].tolist()):
            op, fl, off, nb = (z[f"e{k}_{c}"] for c in ("op", "file", "offset", "bytes"))
            mine = (op == 0) & (nb > 0)
            out[r][phase] = list(zip(fl[mine].tolist(), off[mine].tolist(), nb[mine].tolist()))
    return out


@pytest.mark.parametrize("n,k,extra", [
    (3, 2, ["io.interface=posix"]),
    (2, 1, ["io.interface=mpiio", "io.layout=shared", "dataset.num_files_train=1",
            "dataset.num_samples_per_file=24", "io.write_first=true"]),
])
def test_the_first_ranks_read_every_sample_once_an_epoch_the_others_none(tmp_path, n, k,
                                                                          extra):
    args = _args(tmp_path, f"reader.reading_ranks={k}", *extra)
    run_mpi(n, "run_cli.py", "run", *args, timeout=240)
    reads = _reads(tmp_path, n)
    phases = list(reads[0])
    assert all(list(reads[r]) == phases for r in range(n))     # the same phases everywhere
    for phase in (p for p in phases if p.startswith("train")):
        everyone = [x for r in range(k) for x in reads[r][phase]]
        pieces = sorted((f, off) for f, off, _ in everyone)
        assert len(pieces) == len(set(pieces))                 # nothing read twice
        assert sum(b for _, _, b in everyone) == 24 * RECORD   # every sample once
        assert all(reads[r][phase] for r in range(k))
        assert not any(reads[r][phase] for r in range(k, n))


def test_a_load_at_start_by_rank_zero_alone(tmp_path):
    """io.read_type=memory: rank 0 loads the whole input, the other rank nothing, and both
    train the same steps."""
    args = _args(tmp_path, "reader.reading_ranks=1", "io.read_type=memory",
                 "io.interface=posix")
    run_mpi(2, "run_cli.py", "run", *args, timeout=240)
    reads = _reads(tmp_path, 2)
    assert list(reads[0]) == list(reads[1])
    assert sum(b for _, _, b in reads[0]["load-1"]) == 24 * RECORD
    assert not any(reads[1][p] for p in reads[1])


@pytest.mark.parametrize("extra", [["io.interface=posix"],
                                   ["io.interface=hdf5", "dataset.format=hdf5"]])
def test_the_other_ranks_open_every_file_once_reading_none(tmp_path, extra):
    """reader.idle_ranks_open: the ranks that read nothing open each data file once, through
    the run's interface, and close it."""
    args = _args(tmp_path, "reader.reading_ranks=1", "reader.idle_ranks_open=true", *extra)
    run_mpi(2, "run_cli.py", "run", *args, timeout=240)
    z = load_npz(tmp_path / "out" / "latest" / "oplog_rank00001.npz")
    ops = np.concatenate([z[f"e{k}_op"] for k in range(len(z["phases"]))])
    files = np.concatenate([z[f"e{k}_file"] for k in range(len(z["phases"]))])
    assert not (ops == 0).any()
    assert sorted(set(files[ops == 2].tolist())) == list(range(6))
    assert (ops == 2).sum() == 6


def test_reading_ranks_that_the_job_cannot_have_are_refused():
    cfg = config.load(["workload=default", "reader.reading_ranks=3"])
    with pytest.raises(ConfigError, match="reader.reading_ranks=3 is more than the job's 2"):
        config.check_ranks(cfg, 2)
    cfg = config.load(["workload=default", "reader.reading_ranks=1", "workflow.evaluation=true",
                       "dataset.num_files_eval=2"])
    with pytest.raises(ConfigError, match="does not combine with an evaluation phase"):
        config.check_ranks(cfg, 2)
    config.check_ranks(config.load(["workload=default", "reader.reading_ranks=2"]), 2)
    with pytest.raises(ConfigError, match="reader.reading_ranks"):
        config.load(["workload=default", "reader.reading_ranks=-1"])

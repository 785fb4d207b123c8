"""torchrun with a checkpoint after every epoch written by torch.distributed.checkpoint (real
logs in tests/fixtures/darshan/torchrun_dcp_checkpoint, truth in truth.json): 3 non-MPI logs,
the launcher's (it read Python's modules, no data) and the 2 ranks', each rank saving its own
`__R_0.distcp` and rank 0 the `.metadata`. The launcher is no rank; each log's counter times
are taken to the job's clock, as its DXT segments are, so that the checkpoints fall where the
ranks wrote them among their reads (with the launcher 3 s earlier, they fell before the first
step: a checkpoint every step, 0.35)."""
import numpy as np
import pytest

from dlio_mpi_analysis.loading.loader import load
from dlio_mpi_analysis.loading.trace_ops import READ_OP
from fitted_runs import TRUTH, fitted_shape, log, replay_like, run_changed

pytestmark = pytest.mark.mpi      # its replays launch ranks under mpiexec

NAME = "torchrun_dcp_checkpoint"


def test_the_launcher_with_module_reads_is_no_rank():
    job = load(log(NAME))
    assert job.nprocs == TRUTH[NAME]["ranks"] == 2
    assert job.process_roles == {"main": 2, "helper": 1}


def test_counter_times_are_the_job_s():
    """A rank's first data read by its counters is its first DXT read: both on the job's
    clock (the ranks' logs began 3 s after the launcher's)."""
    job = load(log(NAME), dxt=True)
    posix = job.records["POSIX"]
    trace = job.dxt_segments["DXT_POSIX"]
    data = [i for i, n in job.names.items() if n.endswith(".npy")]
    for rank in (0, 1):
        mine = (np.asarray(posix["rank"]) == rank) & np.isin(np.asarray(posix["id"]), data)
        first = np.asarray(posix["POSIX_F_READ_START_TIMESTAMP"])[mine]
        reads = (np.asarray(trace["rank"]) == rank) & np.isin(np.asarray(trace["id"]), data) \
            & (np.asarray(trace["op"]) == READ_OP)
        assert float(first[first > 0].min()) == pytest.approx(
            float(np.asarray(trace["start"])[reads].min()), abs=0.01)


def test_a_checkpoint_after_each_epoch():
    f, w = fitted_shape(NAME, "sample_bytes", "read_threads")
    ck = w["checkpoint"]
    assert (ck["checkpoint_after_epoch"], ck["epochs_between_checkpoints"]) == (1, 1)
    assert "steps_between_checkpoints" not in ck
    assert ck["fsync"] is True
    # rank 0's .metadata the weights, the ranks' .distcp files the optimizer's state
    assert (ck["writers"], ck["format"], ck["optimizer_writers"]) \
        == ("rank0", "model_optimizer", "all")
    weights = w["model"]["model_size_bytes"]
    assert weights == 1537
    assert weights * (1 + ck["optimizer_multiplier"]) == pytest.approx(16809290 // 2)


def test_replay_and_a_checkpoint_every_step(tmp_path):
    r = replay_like(NAME, tmp_path)
    assert r.emulated["write_ops"] == pytest.approx(r.real["write_ops"], rel=0.2)

    def every_step(w):
        for key in ("checkpoint_after_epoch", "epochs_between_checkpoints"):
            w["checkpoint"].pop(key, None)
        w["checkpoint"]["steps_between_checkpoints"] = 1
    (tmp_path / "wrong").mkdir()
    wrong = run_changed(NAME, tmp_path / "wrong", every_step)
    assert wrong.score < 0.6, wrong.table

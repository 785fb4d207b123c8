"""The gradient exchange of every step (tests/mpi/check_exchange.py) at 2 and 4 ranks: a
barrier (a futex barrier per node, across "nodes" too) and an allreduce, waiting by sleeping
(the default) or in the blocking MPI call; every rank leaves after the last one entered, the
allreduce gives the sum, and a sleeping wait takes less CPU than a spinning one. A run with
io.allreduce_bytes and each io.exchange_wait completes its steps and records the time slice
its rank threads were given."""

import pytest

from mpirun import run_mpi
from datautil import own_summary

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("wait", ["sleep", "mpi"])
@pytest.mark.parametrize("nbytes", [0, 4096])
def test_exchange_under_mpiexec(n, wait, nbytes):
    p = run_mpi(n, "check_exchange.py", wait, nbytes, timeout=120)
    for r in range(n):
        assert f"rank {r}: ok" in p.stdout, p.stdout[-3000:]


@pytest.mark.parametrize("n,groups", [(2, 2), (4, 2), (5, 3)])
def test_node_barrier_across_nodes(n, groups):
    """The futex barrier of each "node" (ranks grouped by rank % groups), the nodes' leaders'
    MPI_Ibarrier, and the second node barrier."""
    p = run_mpi(n, "check_exchange.py", "sleep", 0, groups, timeout=120)
    for r in range(n):
        assert f"rank {r}: ok" in p.stdout, p.stdout[-3000:]


@pytest.mark.parametrize("wait", ["sleep", "mpi"])
def test_run_with_each_exchange_wait(tmp_path, wait):
    out = tmp_path / "out"
    run_mpi(2, "run_cli.py", "run", f"dataset.data_folder={tmp_path / 'data'}",
            f"output.folder={out}", "dataset.num_files_train=8",
            "dataset.num_samples_per_file=4", "dataset.record_length=4096",
            "reader.batch_size=2", "train.epochs=2", "train.computation_time=0.001",
            "io.allreduce_bytes=64k", f"io.exchange_wait={wait}", timeout=180)
    s = own_summary(out)
    assert s["config"]["io"]["exchange_wait"] == wait
    assert [e["steps"] for e in s["epochs"]] == [8, 8]
    assert [e["samples"] for e in s["epochs"]] == [32, 32]
    # the rank's thread asked for io.rank_slice_us (default 100): given, or said why not
    facts = s["facts"]
    assert facts["rank_slice_us"] == 100 or "rank_slice_note" in facts, facts

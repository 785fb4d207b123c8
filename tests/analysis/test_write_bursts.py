"""Checkpoint write bursts: one burst per checkpoint of an emulator run, with the checkpoint's
bytes and writers; made-up traces for the grouping rule."""

import pandas as pd
import pytest

from dlio_mpi_analysis import characterize
from dlio_mpi_analysis.characterization.dxt_metrics import _write_bursts
from mpirun import run_mpi
from datautil import own_summary

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec


def test_bursts_of_a_run_with_checkpoints(tmp_path):
    # compute long enough that the gap ending a burst (1% of the run time) is well above the
    # skew between ranks on a loaded machine, and well below the time between checkpoints
    out = tmp_path / "o"
    run_mpi(2, "run_cli.py", "run", f"dataset.data_folder={tmp_path}/d", f"output.folder={out}",
            f"checkpoint.checkpoint_folder={tmp_path}/c", "workflow.checkpoint=true",
            "model.model_size_bytes=2m", "checkpoint.writers=all",
            "checkpoint.steps_between_checkpoints=5", "train.epochs=2",
            "train.computation_time=0.05", "io.keep_oplog=true", "checkpoint.transfer_size=256k",
            timeout=180)
    s = own_summary(out)
    writes = [c for c in s["checkpoints"] if c["op"] == "write"]
    c = characterize(out)
    bursts = next(d.write_bursts for d in c.dxt.values() if d.write_bursts)
    assert len(bursts) == len(writes) == 6
    for b in bursts:
        assert b.bytes == 2 << 20 and b.ranks == 2 and b.operations == 8


def test_grouping_rule():
    seg = pd.DataFrame({"rank": [0, 1, 0, 1, 0], "op": ["write"] * 5,
                        "start": [1.0, 1.001, 1.5, 9.0, 9.05], "end": [1.2, 1.3, 1.6, 9.01, 9.1],
                        "length": [10, 20, 30, 40, 50]})
    b = _write_bursts(seg, run_time=10.0)          # gap 0.1 s
    assert [(x.operations, x.bytes, x.ranks) for x in b] == [(2, 30, 2), (1, 30, 1), (2, 90, 2)]
    assert b[0].start == 1.0 and b[0].end == 1.3 and b[0].bandwidth == pytest.approx(100.0)

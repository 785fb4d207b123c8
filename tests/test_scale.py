"""Correctness at 16 and 32 ranks (oversubscribed on a small machine): every sample read once
per epoch, checkpoints complete, outputs reduced and correct."""
import json

import numpy as np
import pytest

from datautil import load_npz
from mpirun import run_mpi


@pytest.mark.parametrize("n", [16, 32])
def test_many_ranks(tmp_path, n):
    files, spf, rec = 2 * n + 3, 4, 4096          # uneven: the remainder is dropped
    out, ck = tmp_path / "o", tmp_path / "c"
    run_mpi(n, "run_cli.py", "run", f"dataset.data_folder={tmp_path}/d", f"output.folder={out}",
            f"checkpoint.checkpoint_folder={ck}", f"dataset.num_files_train={files}",
            f"dataset.num_samples_per_file={spf}", f"dataset.record_length={rec}",
            "reader.batch_size=2", "train.epochs=2", "train.computation_time=0",
            "reader.read_threads=0", "io.keep_oplog=true", "workflow.checkpoint=true",
            "model.model_size_bytes=64k", "checkpoint.writers=all", "checkpoint.fsync=true",
            timeout=600)
    s = json.loads((out / "summary.json").read_text())
    total = files * spf
    steps = total // (n * 2)
    assert s["ranks"] == n and s["steps_per_epoch"] == steps
    assert s["samples_dropped_per_epoch"] == total - steps * n * 2
    logs = [load_npz(out / f"oplog_rank{r:05d}.npz") for r in range(n)]
    for e in range(2):
        seen = np.concatenate([z[f"e{e}_file"][z[f"e{e}_op"] == 0].astype(np.int64) * spf
                               + z[f"e{e}_offset"][z[f"e{e}_op"] == 0] // rec for z in logs])
        assert seen.size == steps * n * 2 and np.unique(seen).size == seen.size
        assert s["epochs"][e]["bytes_moved"] == seen.size * rec
        assert sum(s["epochs"][e]["step_io_wait_hist"]) == steps * n
    writes = [c for c in s["checkpoints"] if c["op"] == "write"]
    assert len(writes) == 2 and all(c["writers"] == n and c["fsyncs"] == n for c in writes)
    ck_files = sorted(ck.iterdir())
    assert len(ck_files) == 2 * n
    assert sum(f.stat().st_size for f in ck_files) == 2 * 64 * 1024
    rows = (out / "per_rank.csv").read_text().strip().splitlines()
    assert len(rows) == n + 1

"""Correctness at 16 and 32 ranks (oversubscribed on a small machine): every sample read once
per epoch, checkpoints complete, outputs reduced and correct."""
import csv
import os
import shutil
import sys
import warnings

import numpy as np
import pytest

from datautil import load_npz, own_summary, run_summary
from dlio_mpi.checkpoint import record as checkpoint_record
from mpirun import bind_to_core, run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "scripts", "benchmarks"))
import metaops  # noqa: E402


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
    s = own_summary(out)
    total = files * spf
    steps = total // (n * 2)
    assert run_summary(out)["num_accelerators"] == n and s["steps_per_epoch"] == steps
    assert s["samples_dropped_per_epoch"] == total - steps * n * 2
    logs = [load_npz(out / "latest" / f"oplog_rank{r:05d}.npz") for r in range(n)]
    for e in range(2):
        # the phases are train0, checkpoint0, train1, checkpoint1
        i = [list(z["phases"]).index(f"train{e}") for z in logs]
        seen = np.concatenate([z[f"e{k}_file"][z[f"e{k}_op"] == 0].astype(np.int64) * spf
                               + z[f"e{k}_offset"][z[f"e{k}_op"] == 0] // rec
                               for z, k in zip(logs, i)])
        assert seen.size == steps * n * 2 and np.unique(seen).size == seen.size
        assert s["epochs"][e]["bytes_moved"] == seen.size * rec
        assert sum(s["epochs"][e]["step_io_wait_hist"]) == steps * n
    writes = [c for c in s["checkpoints"] if c["op"] == "write"]
    assert len(writes) == 2 and all(c["writers"] == n and c["fsyncs"] == n for c in writes)
    ck_files = sorted(f for f in ck.iterdir() if f.name != checkpoint_record.RECORD)
    assert len(ck_files) == 2 * n
    assert checkpoint_record.read(ck) == (True, [f.name for f in ck_files])
    assert sum(f.stat().st_size for f in ck_files) == 2 * 64 * 1024
    rows = (out / "latest" / "per_rank.csv").read_text().strip().splitlines()
    assert len(rows) == n + 1


STRACE = shutil.which("strace")


@pytest.mark.skipif(STRACE is None, reason="strace not installed (scripts/setup.sh installs it)")
def test_start_up_metadata_of_the_dataset_does_not_grow_with_ranks(tmp_path):
    """Traced by strace up to each rank's first batch: only rank 0 opens the manifest, no rank
    opens a directory of the dataset or the output to list it, and the metadata calls a rank
    makes on the run's own files, and on any file system, do not grow from 1 to 4 ranks."""
    data = tmp_path / "d"
    common = [f"dataset.data_folder={data}", "dataset.num_files_train=32",
              "dataset.num_samples_per_file=2", "dataset.record_length=4096",
              "reader.batch_size=2", "train.epochs=1", "train.computation_time=0"]
    run_mpi(2, "run_cli.py", "run", *common, f"output.folder={tmp_path}/gen", timeout=120)
    project, fs = {}, {}
    for n in (1, 4):
        out, sdir = tmp_path / f"o{n}", tmp_path / f"s{n}"
        sdir.mkdir()
        for attempt in (1, 2):
            try:
                run_mpi(n, "run_cli.py", "run", *common, f"output.folder={out}", timeout=180,
                        rank_wrap=metaops.strace_wrap(STRACE, sdir),
                        launcher_args=bind_to_core())
                break
            except pytest.fail.Exception as e:
                # where each rank was: its last traced calls, then the launcher's report
                tails = {p.name: p.read_text().splitlines()[-3:] for p in sorted(sdir.iterdir())}
                report = f"last traced calls: {tails}\n{e}"
                if attempt == 2 or "hung" not in str(e):
                    pytest.fail(report)
                # a traced run that hangs is reported, and traced once more (a hang of the
                # run itself hangs again, and fails)
                warnings.warn(f"the traced run on {n} ranks hung once: {report}")
                shutil.rmtree(out, ignore_errors=True)
                shutil.rmtree(sdir)
                sdir.mkdir()
        rows = {int(r["rank"]): r for r in
                csv.DictReader((out / "latest" / "per_rank.csv").read_text().splitlines())}
        assert sorted(rows) == list(range(n))
        for r in range(n):
            calls = metaops.read(sdir / f"rank.{r}", args=True,
                                 until=float(rows[r]["first_batch_unix_s"]))
            mine = [c for c in calls if c[1] and c[1].startswith((str(data), str(out)))]
            manifest = [c for c in mine if c[1].endswith("manifest.json")]
            assert bool(manifest) == (r == 0), (n, r, manifest)
            listed = [c for c in mine if "O_DIRECTORY" in c[2]]
            assert not listed, (n, r, listed)
            kinds = metaops.classify(calls, [data, out])
            assert kinds["project"] == len(mine)
            project[n, r] = len(mine)
            fs[n, r] = metaops.on_file_systems(kinds)
    assert project[1, 0] > 0
    assert max(project[4, r] for r in range(4)) <= project[1, 0], project
    # and all the calls that can reach a file system (imports and libraries too)
    assert max(fs[4, r] for r in range(4)) <= fs[1, 0], fs

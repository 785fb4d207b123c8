"""clean removes what a workload made and nothing else, and refuses dangerous paths."""
import os

import pytest
from click.testing import CliRunner

from dlio_mpi.cli import main
from mpirun import run_mpi


def test_clean_removes_only_the_workloads_files(tmp_path):
    data, ck = tmp_path / "data", tmp_path / "ck"
    args = [f"dataset.data_folder={data}", f"output.folder={tmp_path}/o",
            f"checkpoint.checkpoint_folder={ck}", "dataset.num_files_train=4",
            "dataset.num_files_eval=2", "workflow.checkpoint=true",
            "model.model_size_bytes=64k", "train.epochs=1"]
    run_mpi(2, "run_cli.py", "run", *args, timeout=120)
    mine = tmp_path / "data" / "train" / "notes.txt"     # a file the workload did not make
    mine.write_text("keep me")
    (ck / "other.bin").write_text("keep me too")
    r = CliRunner().invoke(main, ["clean", "--dry-run"] + args)
    assert r.exit_code == 0 and r.output.startswith("would remove 8 files")
    assert (data / "manifest.json").exists()
    r = CliRunner().invoke(main, ["clean"] + args)
    assert r.exit_code == 0, r.output
    assert r.output.startswith("removed 8 files")       # 4 + 2 data, 1 checkpoint, manifest
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert "data/train/notes.txt" in left and "ck/other.bin" in left
    assert not (data / "valid").exists() and not (data / "manifest.json").exists()
    assert not [p for p in left if p.startswith("data/") and "notes" not in p]


@pytest.mark.parametrize("path", ["/", os.path.expanduser("~"), "/usr", "/tmp"])
def test_clean_refuses_dangerous_paths(path):
    r = CliRunner().invoke(main, ["clean", f"dataset.data_folder={path}"])
    assert r.exit_code == 2
    assert "refusing to clean" in r.output

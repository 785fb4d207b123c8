"""clean removes what a workload made and nothing else, and refuses dangerous paths."""
import os

import pytest
from click.testing import CliRunner

from dlio_mpi.cli import main
from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec


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
    assert r.exit_code == 0 and r.output.startswith("would remove 9 files")
    assert (data / "manifest.json").exists()
    r = CliRunner().invoke(main, ["clean"] + args)
    assert r.exit_code == 0, r.output
    # 4 + 2 data, 1 checkpoint, the checkpoint record, the manifest
    assert r.output.startswith("removed 9 files")
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert "data/train/notes.txt" in left and "ck/other.bin" in left
    assert not (data / "valid").exists() and not (data / "manifest.json").exists()
    assert not [p for p in left if p.startswith("data/") and "notes" not in p]


@pytest.mark.parametrize("path", ["/", os.path.expanduser("~"), "/usr", "/tmp"])
def test_clean_refuses_dangerous_paths(path):
    r = CliRunner().invoke(main, ["clean", f"dataset.data_folder={path}"])
    assert r.exit_code == 2
    assert "refusing to clean" in r.output


def _ckpt_args(tmp_path, *extra):
    return [f"dataset.data_folder={tmp_path}/data", f"output.folder={tmp_path}/o",
            f"checkpoint.checkpoint_folder={tmp_path}/ck", "dataset.num_files_train=4",
            "workflow.checkpoint=true", "model.model_size_bytes=64k", "train.epochs=2",
            *extra]


def test_clean_removes_only_the_checkpoints_the_runs_recorded(tmp_path):
    ck = tmp_path / "ck"
    (ck / "mine").mkdir(parents=True)                   # the user's folder, with their files
    (ck / "ckpt-000001.bin").write_bytes(b"the user's checkpoint")
    args = _ckpt_args(tmp_path)
    run_mpi(2, "run_cli.py", "run", *args, timeout=120)
    written = ["ckpt-000000-r000000.bin", "ckpt-000001-r000000.bin"]
    assert (ck / "dlio_mpi_checkpoints.txt").read_text() == (
        "# checkpoint files written by dlio_mpi runs, one per line\n"
        "folder made by dlio_mpi: no\n" + "".join(f"{n}\n" for n in written))
    data = tmp_path / "data"
    gone = [ck / n for n in written + ["dlio_mpi_checkpoints.txt"]] + \
        [p for p in data.rglob("*") if p.is_file()]
    nbytes = sum(p.stat().st_size for p in gone)
    r = CliRunner().invoke(main, ["clean"] + args)
    assert r.exit_code == 0, r.output
    # 4 data files, the manifest, 2 checkpoint files, the record
    assert r.stdout == f"removed 8 files ({nbytes} bytes)\n" and len(gone) == 8
    assert sorted(p.name for p in ck.iterdir()) == ["ckpt-000001.bin", "mine"]
    assert (ck / "ckpt-000001.bin").read_bytes() == b"the user's checkpoint"
    assert not data.exists()                            # made by the run's generation


def test_clean_leaves_a_checkpoint_folder_without_a_record_alone(tmp_path):
    ck = tmp_path / "ck"
    ck.mkdir()
    (ck / "ckpt-000000-r000000.bin").write_bytes(b"named as a run names it, not a run's")
    empty = tmp_path / "empty"
    empty.mkdir()
    for folder in (ck, empty):
        r = CliRunner().invoke(main, ["clean", f"dataset.data_folder={tmp_path}/data",
                                      f"checkpoint.checkpoint_folder={folder}"])
        assert r.exit_code == 0, r.output
        assert r.stdout == "removed 0 files (0 bytes)\n"
        assert r.stderr == (f"dlio_mpi: clean: {folder} holds no record of checkpoints written "
                            "by dlio_mpi (dlio_mpi_checkpoints.txt): nothing removed there\n")
    assert [p.name for p in ck.iterdir()] == ["ckpt-000000-r000000.bin"]
    assert empty.is_dir() and not list(empty.iterdir())


def test_clean_removes_the_folders_the_emulator_made_and_keeps_the_users(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()                                        # a data folder the user made
    args = _ckpt_args(tmp_path, f"dataset.data_folder={mine}")
    run_mpi(2, "run_cli.py", "run", *args, timeout=120)
    assert "folder made by dlio_mpi: yes\n" in (tmp_path / "ck" /
                                               "dlio_mpi_checkpoints.txt").read_text()
    r = CliRunner().invoke(main, ["clean"] + args)
    assert r.exit_code == 0 and r.stdout.startswith("removed 8 files"), r.output
    assert not (tmp_path / "ck").exists()               # made by the run, emptied by clean
    assert mine.is_dir() and not list(mine.iterdir())   # the user's: emptied, kept


@pytest.mark.parametrize("command, key", [
    ("generate", "dataset.data_folder"), ("run", "dataset.data_folder"),
    ("run", "checkpoint.checkpoint_folder")])
def test_generate_and_run_refuse_the_folders_clean_refuses(tmp_path, command, key):
    """Before: generate and run wrote into the home directory without a word, and clean then
    refused that folder. Now they refuse it first (one line, exit 2) and write nothing."""
    import subprocess
    import sys
    home = tmp_path / "home"
    home.mkdir()
    folders = {"dataset.data_folder": f"{tmp_path}/data",
               "checkpoint.checkpoint_folder": f"{tmp_path}/ck", key: str(home)}
    args = [f"{k}={v}" for k, v in folders.items()] + [
        f"output.folder={tmp_path}/o", "dataset.num_files_train=2", "train.epochs=1",
        "workflow.checkpoint=true", "model.model_size_bytes=64k"]
    p = subprocess.run([sys.executable, "-m", "dlio_mpi", command, *args], capture_output=True,
                       text=True, timeout=120, env=dict(os.environ, HOME=str(home)))
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.splitlines() == [
        f"dlio_mpi: config error: {key}={home}: {home} is a system or home directory, where "
        f"clean cannot remove what was written; give a folder of its own (e.g. "
        f"{home}/dlio_mpi)"], p.stderr
    assert list(home.iterdir()) == []
    assert not (tmp_path / "o").exists() and not (tmp_path / "data").exists()


def test_clean_removes_a_model_and_an_optimizer_file_a_rank(tmp_path):
    """checkpoint.format=model_optimizer names its files NAME.model.bin and NAME.optim.bin:
    the record lists them and clean removes them (it refused the record before)."""
    ck = tmp_path / "ck"
    args = _ckpt_args(tmp_path, "checkpoint.format=model_optimizer", "checkpoint.writers=all",
                      "checkpoint.optimizer_multiplier=2",
                      "train.epochs=1")
    run_mpi(2, "run_cli.py", "run", *args, timeout=120)
    written = sorted(p.name for p in ck.iterdir() if p.name != "dlio_mpi_checkpoints.txt")
    assert written == [f"ckpt-000000-r{r:06d}.{part}.bin" for r in range(2)
                       for part in ("model", "optim")]
    r = CliRunner().invoke(main, ["clean"] + args)
    assert r.exit_code == 0, r.output
    assert not ck.exists() or not any(ck.iterdir())

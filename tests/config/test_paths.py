"""Names and sizes that cannot work stop before any I/O: a file prefix that would leave the data
folder, a manifest naming a path outside it, a dataset larger than the file system's room or a
file whose writing needs more memory than the host has. Generation writes its manifest marked
in progress first, so that clean removes a partial dataset and a run refuses it."""
import json
import os

from click.testing import CliRunner

from dlio_mpi.config import loader as config
from dlio_mpi.data import generation as datagen
from dlio_mpi.cli import main
from dlio_mpi.data.dataset import Dataset
from mpirun import run_mpi
from datautil import own_summary
import pytest

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec


def lines(p):
    return [ln for ln in p.stdout.splitlines() if ln.startswith("dlio_mpi: ")]


def files_under(path):
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file())


def data_args(tmp_path, *extra):
    return [f"dataset.data_folder={tmp_path}/d/data", f"output.folder={tmp_path}/o",
            f"checkpoint.checkpoint_folder={tmp_path}/ck", "dataset.num_files_train=4",
            "dataset.num_samples_per_file=2", "dataset.record_length=4k", "train.epochs=1",
            *extra]


def test_generate_with_an_escaping_prefix_writes_nothing(tmp_path):
    (tmp_path / "x").mkdir()
    mine = tmp_path / "x" / "esc_0000000_of_4.bin"
    mine.write_bytes(b"the user's own file")
    p = run_mpi(2, "run_cli.py", "generate",
                *data_args(tmp_path, "dataset.file_prefix=../../x/esc"), check=False)
    assert p.returncode == 2
    assert lines(p) == ["dlio_mpi: config error: dataset.file_prefix='../../x/esc': a file "
                        "name prefix must not be empty or contain '/', '..' or a NUL byte (it "
                        "names files inside their folder)"]
    assert files_under(tmp_path) == ["x/esc_0000000_of_4.bin"]
    assert mine.read_bytes() == b"the user's own file"


def test_a_manifest_naming_a_path_outside_is_refused(tmp_path):
    args = data_args(tmp_path)
    run_mpi(2, "run_cli.py", "generate", *args)
    data = tmp_path / "d" / "data"
    (tmp_path / "x").mkdir()
    mine = tmp_path / "x" / "img_0000000_of_4.bin"
    mine.write_bytes(b"keep")
    m = json.loads((data / "manifest.json").read_text())
    m["files"] = "train/../../../x/img_{index:07d}_of_4.bin"      # as an older version wrote
    (data / "manifest.json").write_text(json.dumps(m))
    before = files_under(tmp_path)
    want = (f"the dataset manifest {data}/manifest.json names "
            f"'train/../../../x/img_0000000_of_4.bin', outside {data}: refused")
    r = CliRunner().invoke(main, ["clean"] + args)
    assert r.exit_code == 2
    assert r.output == f"dlio_mpi: clean: {want}\n"
    p = run_mpi(2, "run_cli.py", "run", *args, check=False)
    assert p.returncode != 0
    assert lines(p) == [f"dlio_mpi: rank 0: {want}"]
    status = json.loads((tmp_path / "o" / "status.json").read_text())
    assert status["status"] == "failed" and status["reason"] == f"rank 0: {want}"
    assert [f for f in files_under(tmp_path) if not f.startswith("o/")] == before
    assert mine.read_bytes() == b"keep"


def test_clean_refuses_a_dataset_directory_that_resolves_outside(tmp_path):
    args = data_args(tmp_path, "dataset.num_subfolders_train=2")
    run_mpi(2, "run_cli.py", "generate", *args)
    data = tmp_path / "d" / "data"
    elsewhere = tmp_path / "elsewhere"
    (data / "train" / "1").rename(elsewhere)     # the user's files, where train/1 leads
    (data / "train" / "1").symlink_to(elsewhere)
    m = json.loads((data / "manifest.json").read_text())
    legacy = datagen.description(m)             # as earlier versions wrote it: no made_dirs
    (data / "manifest.json").write_text(json.dumps(legacy))
    before = files_under(tmp_path)
    r = CliRunner().invoke(main, ["clean"] + args)
    assert r.exit_code == 2
    assert r.output == (f"dlio_mpi: clean: refusing to remove {data}/train/1/img_0000001_of_4"
                        f".bin: it resolves to {elsewhere}/img_0000001_of_4.bin, outside the "
                        f"data folder {data}\n")
    assert files_under(tmp_path) == before      # nothing removed, inside or outside
    # the directories the manifest records as made, or its pattern, leading outside: the
    # manifest is refused
    (data / "manifest.json").write_text(json.dumps(m))
    r = CliRunner().invoke(main, ["clean"] + args)
    assert r.exit_code == 2
    assert r.output == (f"dlio_mpi: clean: the dataset manifest {data}/manifest.json names "
                        f"'train/1', outside {data}: refused\n")
    (data / "manifest.json").write_text(json.dumps(legacy))
    (data / "train" / "0").rename(tmp_path / "elsewhere0")
    (data / "train" / "0").symlink_to(tmp_path / "elsewhere0")
    r = CliRunner().invoke(main, ["clean"] + args)
    assert r.exit_code == 2
    assert r.output == (f"dlio_mpi: clean: the dataset manifest {data}/manifest.json names "
                        f"'train/0/img_0000000_of_4.bin', outside {data}: refused\n")


def test_generation_refuses_a_dataset_directory_that_resolves_outside(tmp_path):
    data = tmp_path / "d" / "data"
    data.mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (data / "train").symlink_to(tmp_path / "elsewhere")
    p = run_mpi(2, "run_cli.py", "generate", *data_args(tmp_path), check=False)
    assert p.returncode != 0
    assert lines(p) == [f"dlio_mpi: rank 0: cannot prepare {data}: {data}/train resolves to "
                        f"{tmp_path}/elsewhere, outside the data folder"]
    assert files_under(tmp_path) == []


def test_a_dataset_larger_than_the_file_systems_room_is_refused_before_writing(tmp_path):
    args = data_args(tmp_path, "dataset.num_files_train=100000000000")
    p = run_mpi(2, "run_cli.py", "generate", *args, check=False, timeout=60)
    assert p.returncode != 0
    st = os.statvfs(tmp_path)
    need = 10**11 * 2 * 4096
    got = lines(p)
    assert len(got) == 1, p.stdout
    head = (f"dlio_mpi: rank 0: generating {tmp_path}/d/data: No space left on device: "
            f"{tmp_path} has ")
    tail = f" bytes free, {need} needed"
    assert got[0].startswith(head) and got[0].endswith(tail), got[0]
    free = int(got[0][len(head):-len(tail)])
    assert abs(free - st.f_bavail * st.f_frsize) < 1 << 30
    assert files_under(tmp_path) == [] and not (tmp_path / "d").exists()


def test_a_sample_larger_than_memory_is_refused_before_writing(tmp_path):
    args = data_args(tmp_path, "dataset.record_length=1000000000000000")
    p = run_mpi(2, "run_cli.py", "generate", *args, check=False, timeout=60)
    assert p.returncode != 0
    got = lines(p)
    assert len(got) == 1, p.stdout
    assert got[0].startswith(
        f"dlio_mpi: rank 0: generating {tmp_path}/d/data: not enough memory: writing a file of "
        "dataset.format=raw (dataset.record_length=1000000000000000, 2 samples per file) holds "
        "1000000000004160 bytes at once per rank (2 ranks on this host: 2000000000008320 "
        "bytes), and "), got[0]
    assert got[0].endswith(" bytes are available")
    assert "Traceback" not in p.stdout and "MemoryError" not in p.stdout
    assert files_under(tmp_path) == [] and not (tmp_path / "d").exists()


def test_a_partial_dataset_is_marked_in_progress_refused_by_a_run_and_cleaned(tmp_path):
    args = data_args(tmp_path, "dataset.num_files_train=6")
    cfg = config.load(["workload=default"] + args)
    d = Dataset(cfg)
    os.makedirs(d.path(3))          # file 3 cannot be put in place: generation fails there
    p = run_mpi(2, "run_cli.py", "generate", *args, check=False)
    assert p.returncode != 0
    assert lines(p) == [f"dlio_mpi: rank 1: generating {d.path(3)}.part.1: Is a directory"]
    data = tmp_path / "d" / "data"
    m = json.loads((data / "manifest.json").read_text())
    assert m["state"] == "in_progress" and datagen.description(m) == datagen.manifest_for(cfg)
    written = [n for n in files_under(data) if n.startswith("train/")]
    assert written and "train/img_0000003_of_6.bin" not in written
    p = run_mpi(2, "run_cli.py", "run", *args, "workflow.generate_data=false", check=False)
    assert p.returncode == 2
    assert lines(p) == [
        f"dlio_mpi: config error: {data} holds a dataset whose generation did not finish (its "
        "manifest is marked in progress) and workflow.generate_data is false: generate it "
        "again (python -m dlio_mpi generate ...), or remove it (python -m dlio_mpi clean ...)"]
    nbytes = sum((data / n).stat().st_size for n in written + ["manifest.json"])
    r = CliRunner().invoke(main, ["clean"] + args)
    assert r.exit_code == 0, r.output
    assert r.output == f"removed {len(written) + 1} files ({nbytes} bytes)\n"
    assert files_under(tmp_path / "d") == []
    # the directory in file 3's place is not the dataset's: it stays, and so do its parents
    assert os.path.isdir(d.path(3))


def test_a_dataset_completes_its_manifest_and_clean_removes_the_folders_it_made(tmp_path):
    args = data_args(tmp_path, "dataset.num_subfolders_train=2")
    run_mpi(2, "run_cli.py", "generate", *args)
    data = tmp_path / "d" / "data"
    m = json.loads((data / "manifest.json").read_text())
    assert m["state"] == "complete"
    assert m["made_dirs"] == [".", "train", "train/0", "train/1"]
    run_mpi(2, "run_cli.py", "run", *args)
    r = CliRunner().invoke(main, ["clean"] + args)
    assert r.exit_code == 0 and r.output.startswith("removed 5 files"), r.output
    # the data folder and its directories were made by generation: removed; not its parent
    assert not data.exists() and (tmp_path / "d").is_dir()


def test_a_manifest_of_earlier_versions_is_a_complete_dataset(tmp_path):
    args = data_args(tmp_path, "workflow.generate_data=false")
    run_mpi(2, "run_cli.py", "generate", *args)
    data = tmp_path / "d" / "data"
    m = json.loads((data / "manifest.json").read_text())
    (data / "manifest.json").write_text(json.dumps(datagen.description(m), indent=1))
    before = {f: (data / f).stat().st_mtime_ns for f in files_under(data)}
    run_mpi(2, "run_cli.py", "run", *args)
    assert own_summary(tmp_path / "o")["epochs"]
    assert {f: (data / f).stat().st_mtime_ns for f in files_under(data)} == before
    r = CliRunner().invoke(main, ["clean"] + args)
    assert r.exit_code == 0 and r.output.startswith("removed 5 files"), r.output
    # it does not say which directories were made: its split directory goes, not the folder
    assert data.is_dir() and not list(data.iterdir())

"""A symbolic link planted at a temporary name the emulator writes (others can create entries
in a shared scratch folder) never redirects a write to its target: the run removes the link,
writes its own file, and the target outside the run's folders keeps its content."""
import json
import os

import pytest

from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

KEPT = "content outside the run's folders\n"
SMALL = ["dataset.num_files_train=4", "dataset.num_samples_per_file=2",
         "dataset.record_length=4k", "train.epochs=1", "train.computation_time=0"]


@pytest.fixture
def target(tmp_path_factory):
    """A file outside the run's folders, with known content, that planted links point to."""
    path = tmp_path_factory.mktemp("elsewhere") / "precious.txt"
    path.write_text(KEPT)
    return path


def plant(link, target):
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, link)


def check_written(path, target):
    assert target.read_text() == KEPT
    assert path.is_file() and not path.is_symlink(), path
    assert not [p for p in path.parent.iterdir() if p.is_symlink() and not inside(p)]


def inside(link):
    """Whether a link points into its own folder (the output folder's `latest`)."""
    return os.path.dirname(os.path.realpath(link)) == os.path.realpath(link.parent)


def test_generation_temporary_name(tmp_path, target):
    data = tmp_path / "d"
    plant(data / "train" / "img_0000000_of_4.bin.part.0", target)
    run_mpi(2, "run_cli.py", "generate", f"dataset.data_folder={data}",
            f"output.folder={tmp_path}/o", *SMALL, timeout=120)
    final = data / "train" / "img_0000000_of_4.bin"
    check_written(final, target)
    assert final.stat().st_size == 2 * 4096
    assert not os.path.lexists(f"{final}.part.0")


@pytest.mark.parametrize("fmt, name", [("file_per_rank", "ckpt-000000-r000000.bin"),
                                       ("mpiio", "ckpt-000000.bin"), ("hdf5", "ckpt-000000.h5")])
def test_checkpoint_temporary_name(tmp_path, target, fmt, name):
    ckpt = tmp_path / "c"
    plant(ckpt / f"{name}.part", target)
    run_mpi(2, "run_cli.py", "run", f"dataset.data_folder={tmp_path}/d",
            f"output.folder={tmp_path}/o", f"checkpoint.checkpoint_folder={ckpt}", *SMALL,
            "workflow.checkpoint=true", "model.model_size_bytes=64k", "checkpoint.writers=all",
            f"checkpoint.format={fmt}", timeout=180)
    check_written(ckpt / name, target)
    assert not os.path.lexists(ckpt / f"{name}.part")


def test_output_temporary_name(tmp_path, target):
    out = tmp_path / "o"
    plant(out / "status.json.part", target)
    run_mpi(1, "run_cli.py", "run", f"dataset.data_folder={tmp_path}/d", f"output.folder={out}",
            *SMALL, timeout=120)
    check_written(out / "status.json", target)
    assert json.loads((out / "status.json").read_text())["status"] == "complete"
    latest = out / "latest"
    assert (latest / "summary.json").is_file() and (latest / "per_rank.csv").is_file()


@pytest.mark.parametrize("name", ["latest", "latest.part"])
def test_latest_link_planted(tmp_path, target, name):
    """A link planted at `latest` or its temporary name is replaced by the run's own link to
    its folder: nothing is written through it."""
    out = tmp_path / "o"
    plant(out / name, target.parent)
    run_mpi(1, "run_cli.py", "run", f"dataset.data_folder={tmp_path}/d", f"output.folder={out}",
            *SMALL, timeout=120)
    assert sorted(os.listdir(target.parent)) == ["precious.txt"]
    assert target.read_text() == KEPT
    latest = out / "latest"
    assert inside(latest) and (latest / "summary.json").is_file()
    assert not os.path.lexists(out / "latest.part")

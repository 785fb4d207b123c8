"""What the command line says about itself: every option explained in --help, run --help true
about when a dataset is generated, `workloads list` a line per workload that says what it is,
how large, and how to shrink it (overrides that load and do shrink it), `workloads show` ending
its output with one newline."""
import subprocess
import sys

import click
import pytest

from dlio_mpi.config import loader as config
from dlio_mpi.cli import main


def cli(*args):
    return subprocess.run([sys.executable, "-m", "dlio_mpi", *args], capture_output=True,
                          text=True, timeout=120)


def commands(group, ctx, path=()):
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if isinstance(cmd, click.Group):
            yield from commands(cmd, ctx, path + (name,))
        else:
            yield " ".join(path + (name,)), cmd


def test_every_option_has_help_text():
    ctx = click.Context(main)
    bare = [f"{name} {'/'.join(p.opts)}" for name, cmd in commands(main, ctx)
            for p in cmd.params if isinstance(p, click.Option) and not p.help]
    assert bare == []


def test_run_help_says_a_dataset_is_generated_only_when_asked():
    p = cli("run", "--help")
    text = " ".join(p.stdout.split())
    assert p.returncode == 0
    assert "A missing dataset is generated first;" not in text
    assert "generated first only when workflow.generate_data=true" in text


def test_a_missing_dataset_is_an_error_without_generate_data(tmp_path):
    p = cli("run", f"dataset.data_folder={tmp_path}/none", f"output.folder={tmp_path}/o",
            "workflow.generate_data=false")
    assert p.returncode != 0
    assert "Traceback" not in p.stdout + p.stderr
    assert not (tmp_path / "none").exists()


def test_workloads_list_is_a_line_each_with_what_size_and_shrink():
    p = cli("workloads", "list")
    assert p.returncode == 0
    rows = p.stdout.splitlines()
    names = config.list_workloads()
    assert [r.split()[0] for r in rows] == names
    for row in rows:
        name, rest = row.split(None, 1)
        what, size, shrink = rest.split(" | ")
        assert what and what != name, row
        assert "B" in size, row
        assert shrink.startswith("shrink: "), row
    unet3d = next(r for r in rows if r.startswith("unet3d "))
    assert "3D U-Net" in unet3d and "168 files x 1 samples, 22.9 GiB" in unet3d
    assert "dataset.num_files_train=32" in unet3d


@pytest.mark.parametrize("name", config.list_workloads())
def test_shrink_overrides_load_and_shrink(name):
    from dlio_mpi.config import workload_catalog

    shrink = workload_catalog.shrink_overrides(name)
    if name == "default":
        assert shrink == ()
        return
    assert shrink, f"{name}.yaml has no '# shrink:' line"
    cfg = config.load([f"workload={name}", *shrink])
    small = workload_catalog._dataset_bytes(cfg) if cfg.workflow.train else 0
    if cfg.workflow.checkpoint:
        small += workload_catalog._checkpoint_bytes(cfg)
    assert 0 < small < 256 * 2**20


@pytest.mark.parametrize("name", ["default", "unet3d", "llama3_8b"])
def test_workloads_show_ends_with_one_newline(name):
    p = cli("workloads", "show", name)
    assert p.returncode == 0
    assert p.stdout.endswith("\n") and not p.stdout.endswith("\n\n")
    with open(config.workload_path(name)) as f:
        assert p.stdout.rstrip("\n") == f.read().rstrip("\n")

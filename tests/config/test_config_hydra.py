"""Overrides in Hydra's grammar as the DLIO benchmark's users type them (+key, ++key, ~key,
quoted values, lists, values with '='), and --config-dir / --config-name choosing the workload
file: configurations loaded without I/O, errors one line with exit 2, and a run end to end."""
import subprocess
import sys

import pytest

from dlio_mpi.config import loader as config
from dlio_mpi.config.errors import ConfigError
from datautil import own_summary
from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

BASE = ["workload=default"]


def load(*overrides, **kw):
    return config.load(list(overrides), **kw)


def error(*overrides, **kw):
    with pytest.raises(ConfigError) as e:
        config.load(list(overrides), **kw)
    line = str(e.value)
    assert "\n" not in line
    return line


def test_set_and_force_add_with_dlio_prefix():
    cfg = load(*BASE, "dataset.num_files_train=5", "++workload.reader.batch_size=3",
               "++workload.reader.odirect=true")
    assert cfg.dataset.num_files_train == 5
    assert cfg.reader.batch_size == 3 and cfg.reader.odirect is True


def test_add_a_key_the_workload_leaves_out():
    cfg = load(*BASE, "+workload.reader.read_threads=2")
    assert cfg.reader.read_threads == 2


def test_add_a_key_the_workload_sets_is_an_error():
    line = error(*BASE, "+dataset.num_files_train=4")
    assert line.startswith("+dataset.num_files_train=4: dataset.num_files_train is already in "
                           "the workload")


def test_delete_returns_the_key_to_its_default():
    default = config.SCHEMA["dataset"]["num_files_train"].default
    cfg = load(*BASE, "~workload.dataset.num_files_train")
    assert cfg.dataset.num_files_train == default
    assert load(*BASE, "~dataset.num_files_train=16").dataset.num_files_train == default


def test_delete_with_another_value_is_an_error():
    line = error(*BASE, "~dataset.num_files_train=3")
    assert line == ("~dataset.num_files_train=3: dataset.num_files_train is 16, not 3; nothing "
                    "deleted")


def test_delete_a_key_not_in_the_workload_is_an_error():
    assert "reader.odirect is not in the workload" in error(*BASE, "~reader.odirect")


def test_quoted_values_and_values_with_equals_signs():
    cfg = load(*BASE, "dataset.data_folder='/tmp/a b=c'")
    assert cfg.dataset.data_folder == "/tmp/a b=c"
    cfg = load(*BASE, 'dataset.data_folder="/tmp/x=y"')
    assert cfg.dataset.data_folder == "/tmp/x=y"
    # as the shell passes '...' once it has removed the quotes
    assert load(*BASE, "dataset.data_folder=/tmp/x=y").dataset.data_folder == "/tmp/x=y"
    # a quoted number stays the number for an integer key
    assert load(*BASE, "dataset.num_files_train='7'").dataset.num_files_train == 7


def test_lists_and_mappings():
    cfg = load(*BASE, "io.mpiio_hints={romio_cb_read:enable,cb_nodes:2}")
    assert cfg.io.mpiio_hints == {"romio_cb_read": "enable", "cb_nodes": 2}
    cfg = load(*BASE, "io.mpiio_hints.cb_buffer_size=1048576")
    assert cfg.io.mpiio_hints == {"cb_buffer_size": 1048576}
    cfg = load(*BASE, "++workload.model.optimization_groups=[1024,2048, 4096]")
    assert cfg.model.optimization_groups == [1024, 2048, 4096]


def test_null_is_the_default():
    default = config.SCHEMA["dataset"]["num_files_train"].default
    assert load(*BASE, "++dataset.num_files_train=null").dataset.num_files_train == default


def test_a_sweep_is_refused_in_one_line():
    assert "a sweep" in error(*BASE, "dataset.num_files_train=1,2")


def test_framework_and_model_shorthand():
    cfg = load(*BASE, "++workload.framework=pytorch", "workload.model=unet3d")
    assert cfg.framework.name == "pytorch" and cfg.model.name == "unet3d"


def test_hydra_run_dir_is_the_output_folder(tmp_path):
    cfg = load(*BASE, f"++hydra.run.dir={tmp_path}/r", "++hydra.output_subdir=cfgs")
    assert cfg.output.folder == f"{tmp_path}/r"
    cfg = load(*BASE, f"++hydra.run.dir={tmp_path}/r", f"output.folder={tmp_path}/o")
    assert cfg.output.folder == f"{tmp_path}/o"


def dlio_config_dir(tmp_path):
    """A folder as the DLIO benchmark's --config-dir holds it: workload/NAME.yaml, and a
    primary config naming one of them in its defaults list."""
    (tmp_path / "workload").mkdir(parents=True)
    (tmp_path / "workload" / "mine.yaml").write_text(
        "model: mine\nframework: pytorch\nworkflow:\n  generate_data: False\n  train: True\n"
        "dataset:\n  data_folder: data/mine\n  format: npz\n  num_files_train: 12\n"
        "  num_samples_per_file: 2\n  record_length: 4096\nreader:\n  data_loader: pytorch\n"
        "  batch_size: 2\ntrain:\n  epochs: 1\n  computation_time: 0.0\n")
    (tmp_path / "config.yaml").write_text(
        "defaults:\n  - _self_\n  - workload: mine\nworkload:\n  reader:\n    batch_size: 3\n")
    return tmp_path


def test_config_dir_and_workload_name(tmp_path):
    d = dlio_config_dir(tmp_path)
    cfg = load("workload=mine", "++workload.dataset.num_files_train=6", config_dir=str(d))
    assert cfg.dataset.format == "npz" and cfg.dataset.num_files_train == 6
    assert cfg.dataset.num_samples_per_file == 2 and cfg.workload == "mine"
    # a name not in the folder is the shipped workload, as Hydra's search path has both
    assert load("workload=default", config_dir=str(d)).dataset.format == "raw"


def test_config_name_names_the_workload(tmp_path):
    d = dlio_config_dir(tmp_path)
    cfg = load(config_dir=str(d), config_name="config")
    assert cfg.dataset.num_files_train == 12 and cfg.reader.batch_size == 3
    assert "needs --config-dir" in error(config_name="config")
    assert "no nothere.yaml in" in error(config_dir=str(d), config_name="nothere")


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "dlio_mpi", *map(str, args)],
                          capture_output=True, text=True, timeout=120, cwd=cwd)


@pytest.mark.parametrize("args,words", [
    (("+dataset.num_files_train=4",), "is already in the workload"),
    (("~reader.odirect",), "is not in the workload"),
    (("dataset.num_files_train=1,2",), "a sweep"),
    (("--config-name", "x"), "needs --config-dir"),
])
def test_cli_errors_are_one_line_exit_2(tmp_path, args, words):
    p = cli("run", f"output.folder={tmp_path}/o", *args, cwd=tmp_path)
    assert p.returncode == 2, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in p.stderr


def test_run_with_dlio_overrides_and_config_dir(tmp_path):
    d = dlio_config_dir(tmp_path / "conf")
    data, out = tmp_path / "data", tmp_path / "out"
    run_mpi(2, "run_cli.py", "run", "workload=mine", "--config-dir", d,
            "++workload.workflow.generate_data=True",
            f"++workload.dataset.data_folder={data}", "++workload.dataset.num_files_train=4",
            f"++hydra.run.dir={out}", "++workload.reader.batch_size=2", timeout=180)
    s = own_summary(out)
    assert s["steps_per_epoch"] == 4 * 2 // (2 * 2)
    assert len(list((data / "train").glob("*.npz"))) == 4


def test_plain_overrides_do_not_import_hydra():
    """Every rank loads the configuration: Hydra (about 0.15 s of start-up a rank) is imported
    only for an override that needs its grammar."""
    code = ("import sys; from dlio_mpi.config import loader; "
            "loader.load(['workload=default', 'dataset.num_files_train=4', "
            "'++workload.train.epochs=2', '~reader.batch_size', 'train.seed=null'][:{n}]); "
            "print('hydra' in sys.modules)")
    plain = subprocess.run([sys.executable, "-c", code.replace("{n}", "4")],
                           capture_output=True, text=True, timeout=120)
    assert plain.stdout.strip() == "False", plain.stderr
    grammar = subprocess.run([sys.executable, "-c", code.replace("{n}", "5")],
                             capture_output=True, text=True, timeout=120)
    assert grammar.stdout.strip() == "True", grammar.stderr

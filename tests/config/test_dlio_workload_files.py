"""Workload files written for the DLIO benchmark load and run: one fixture per shape its
configs/workload files take (tests/fixtures/dlio_workloads), each run end to end on 2 ranks;
keys it knows and this project does not emulate accepted and listed; its defaults for a
section a file leaves out; object storage refused in one line."""
import json
import os
import subprocess
import sys

import pytest

from dlio_mpi.config import loader as config
from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "dlio_workloads")
SHAPES = sorted(f[:-5] for f in os.listdir(FIX) if f.endswith(".yaml"))
RUNNABLE = [s for s in SHAPES if s != "object_storage"]


def fixture(name):
    return os.path.join(FIX, f"{name}.yaml")


def dlio(cwd, *args):
    return subprocess.run([sys.executable, "-m", "dlio_mpi", *map(str, args)],
                          capture_output=True, text=True, timeout=120, cwd=cwd)


def test_reader_keys_of_the_dlio_benchmark_are_accepted_and_listed_not_emulated():
    cfg = config.load(config_file=fixture("tfrecord_no_mmap"))
    assert "reader.dont_use_mmap" in cfg.not_emulated
    assert cfg.reader.dont_use_mmap is True
    assert cfg.reader.batch_size_eval == 4
    cfg = config.load(["reader.multiprocessing_context=spawn", "checkpoint.type=all_ranks",
                       "dataset.generation_buffer_size=1g", "evaluation.eval_after_epoch=2"],
                      config_file=fixture("npz_evaluation"))
    for key in ("reader.multiprocessing_context", "checkpoint.type",
                "dataset.generation_buffer_size"):
        assert key in cfg.not_emulated
    assert "evaluation.eval_after_epoch" not in cfg.not_emulated


def test_the_dlio_benchmarks_names_of_keys_kept_elsewhere(tmp_path):
    """Its older `data_reader` section, and reader.read_type / reader.file_access, which this
    project keeps as io.read_type / io.layout."""
    f = tmp_path / "w.yaml"
    f.write_text("dataset: {num_files_train: 1, num_samples_per_file: 4}\n"
                 "data_reader: {batch_size: 2, read_type: memory, file_access: shared}\n")
    cfg = config.load(config_file=str(f))
    assert (cfg.reader.batch_size, cfg.io.read_type, cfg.io.layout) == (2, "memory", "shared")


@pytest.mark.parametrize("key,suggested", [
    ("reader.use_mmap", "reader.dont_use_mmap"),
    ("reader.multiprocessing", "reader.multiprocessing_context"),
    ("train.batch_size", "reader.batch_size"),
    ("checkpoint.mechanism_classname", "checkpoint.checkpoint_mechanism_classname"),
])
def test_an_unknown_key_suggests_the_nearest_key_name(key, suggested):
    with pytest.raises(config.ConfigError) as e:
        config.load(["workload=default", f"{key}=1"])
    assert str(e.value).endswith(f"unknown key {key} (did you mean {suggested}?)"), str(e.value)


def test_an_unknown_key_near_no_key_suggests_nothing():
    """Every key of a section shares its name's prefix: that alone suggests nothing."""
    with pytest.raises(config.ConfigError) as e:
        config.load(["workload=default", "reader.qqq_zzz_x=1"])
    assert str(e.value).endswith("unknown key reader.qqq_zzz_x"), str(e.value)


def test_a_file_without_dataset_and_reader_sections_takes_the_dlio_benchmarks_defaults():
    """llama_1t trains with no dataset section: the DLIO benchmark's defaults (8 TFRecord
    files, its TensorFlow data loader), not this schema's 1 raw file."""
    cfg = config.load(config_file=fixture("train_without_dataset"))
    ds = cfg.dataset
    assert (ds.num_files_train, ds.format, ds.num_samples_per_file) == (8, "tfrecord", 1)
    assert ds.record_length == 65536
    assert cfg.reader.data_loader == "tensorflow"
    assert cfg.workflow.train
    # overrides still win over those defaults
    cfg = config.load(["dataset.num_files_train=2"],
                      config_file=fixture("train_without_dataset"))
    assert cfg.dataset.num_files_train == 2


def test_a_section_given_keeps_this_schemas_defaults(tmp_path):
    f = tmp_path / "w.yaml"
    f.write_text("dataset: {num_samples_per_file: 4}\nreader: {batch_size: 2}\n")
    cfg = config.load(config_file=str(f))
    assert (cfg.dataset.num_files_train, cfg.dataset.format) == (1, "raw")
    assert cfg.reader.data_loader == "pytorch"


def test_object_storage_is_one_line_exit_2(tmp_path):
    p = dlio(tmp_path, "run", "--config", fixture("object_storage"))
    assert p.returncode == 2, p.stderr[-2000:]
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr[-2000:]
    assert lines[0] == ("dlio_mpi: config error: storage.storage_type=s3: object storage is "
                        "not emulated; this emulator reads and writes files through a file "
                        "system (storage_type local_fs or parallel_fs)")
    assert not any(tmp_path.iterdir())


@pytest.mark.mpi
@pytest.mark.parametrize("shape", RUNNABLE)
def test_every_dlio_workload_shape_runs_on_two_ranks(tmp_path, shape):
    """Generated, then run as the file asks, on 2 ranks: every epoch reads its samples, a
    checkpoint-only file writes and reads its checkpoints."""
    out = tmp_path / "o"
    run_mpi(2, "run_cli.py", "run", "--config", fixture(shape), "-q",
            "workflow.generate_data=true", f"output.folder={out}",
            f"dataset.data_folder={tmp_path / 'd'}",
            f"checkpoint.checkpoint_folder={tmp_path / 'c'}", timeout=240)
    s = json.loads((out / "latest" / "summary.json").read_text())
    cfg = config.load(config_file=fixture(shape))
    own = s["dlio_mpi"]
    if cfg.workflow.train:
        assert own["steps_per_epoch"] >= 1
        assert own["bytes_moved"] > 0
    if cfg.workflow.checkpoint:
        assert own["checkpoints"], shape
    assert own["not_emulated"] is not None


def test_workloads_check_says_every_problem_of_a_file_in_a_line_each(tmp_path):
    f = tmp_path / "w.yaml"
    f.write_text("dataset:\n  num_files_trian: 4\n  format: parquett\n"
                 "reader:\n  batch_size: -3\n  dont_use_mmap: yes\nstorag: {a: 1}\n")
    p = dlio(tmp_path, "workloads", "check", f)
    assert p.returncode == 2 and p.stdout == ""
    lines = p.stderr.splitlines()
    assert len(lines) == 4, p.stderr
    for line, words in zip(lines, ["unknown key dataset.num_files_trian (did you mean "
                                   "dataset.num_files_train?)", "dataset.format='parquett'",
                                   "reader.batch_size=-3", "unknown section 'storag' (did you "
                                   "mean storage?)"]):
        assert line.startswith(f"dlio_mpi: {f}: ") and words in line, line
    assert sorted(x.name for x in tmp_path.iterdir()) == ["w.yaml"]


def test_workloads_check_of_a_file_that_loads_and_one_that_is_refused(tmp_path):
    p = dlio(tmp_path, "workloads", "check", fixture("tfrecord_no_mmap"))
    assert p.returncode == 0 and p.stderr == ""
    assert p.stdout.splitlines() == [
        f"{fixture('tfrecord_no_mmap')}: loads; format tfrecord, 4 training files; not "
        "emulated: dataset.record_length_resize, framework.name, model.type, "
        "reader.computation_threads, reader.dont_use_mmap"]
    p = dlio(tmp_path, "workloads", "check", fixture("tfrecord_no_mmap"), "--ranks", "8")
    assert p.returncode == 2 and "fewer than the 8 ranks" in p.stderr
    assert len(p.stderr.splitlines()) == 1
    p = dlio(tmp_path, "workloads", "check", fixture("object_storage"))
    assert p.returncode == 2 and "object storage is not emulated" in p.stderr
    assert not any(x.name != "w.yaml" for x in tmp_path.iterdir())

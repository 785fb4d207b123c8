"""Configuration: shipped workloads, DLIO benchmark workload files, overrides, and every kind of
bad input rejected with one line naming the key."""
import os
import subprocess
import sys

import numpy as np
import pytest

from dlio_mpi.config import loader as config
from dlio_mpi.run import compute_time as timing

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures")


@pytest.mark.parametrize("name", config.list_workloads())
def test_shipped_workloads_load(name):
    cfg = config.load([f"workload={name}"])
    assert cfg.workload == name
    assert cfg.num_samples >= 1


def test_paper_and_current_workloads_are_shipped():
    names = set(config.list_workloads())
    assert {"cosmic_tagger", "ffn", "imagenet", "cosmoflow_paper", "frnn", "candle_nt3",
            "unet3d", "resnet50", "cosmoflow", "bert", "dlrm"} <= names


@pytest.mark.parametrize("fixture,tf", [("dlio_unet3d.yaml", False), ("dlio_resnet50.yaml", False),
                                        ("dlio_cosmoflow.yaml", True),
                                        ("dlio_resnet50_tf.yaml", True)])
def test_dlio_benchmark_files_load_unchanged(fixture, tf):
    """The DLIO benchmark's workload files load as they are; a TensorFlow reader of TFRecord
    files reads as the DLIO benchmark's does (a stream of each rank's files, read_threads of
    them at once, one read at each file's end), other data loaders are only named."""
    cfg = config.load(config_file=os.path.join(FIX, fixture))
    assert cfg.dataset.num_files_train == 1024 or cfg.dataset.num_files_train == 168
    assert ("reader.data_loader" in cfg.not_emulated) != tf
    rd = cfg.reader
    assert (rd.access, rd.interleave, rd.eof_reads) == \
        (("stream", rd.read_threads, 1) if tf else ("sample", 1, 0))


def test_mlperf_mean_record_length_in_whole_bytes():
    """MLPerf's resnet50 file gives its mean record as 114660.07 bytes: rounded; a fractional
    size given on the command line is still an error."""
    cfg = config.load(config_file=os.path.join(FIX, "dlio_resnet50_tf.yaml"))
    assert cfg.dataset.record_length == 114660
    with pytest.raises(config.ConfigError, match="expected a size in bytes"):
        config.load(["workload=default", "dataset.record_length=1.5"])


@pytest.mark.parametrize("overrides,want", [
    ([], ("stream", 3, 1, 1024)),
    (["reader.access=sample"], ("sample", 1, 0, 0)),
    (["reader.interleave=2", "reader.eof_reads=0", "reader.shuffle_size=10"],
     ("stream", 2, 0, 10)),
    (["reader.sample_shuffle=off"], ("stream", 3, 1, 0)),
    (["dataset.format=npz"], ("sample", 1, 0, 0)),
    (["reader.data_loader=pytorch"], ("sample", 1, 0, 0)),
    (["io.layout=shared", "io.interface=mpiio", "dataset.num_files_train=1"],
     ("sample", 1, 0, 0)),
])
def test_tensorflow_reader_defaults_keep_given_keys(overrides, want):
    base = ["workload=default", "reader.data_loader=tensorflow", "dataset.format=tfrecord",
            "reader.sample_shuffle=seed", "reader.read_threads=3"]
    rd = config.load(base + overrides).reader
    assert (rd.access, rd.interleave, rd.eof_reads, rd.shuffle_size) == want


def test_dlio_unet3d_values():
    cfg = config.load(config_file=os.path.join(FIX, "dlio_unet3d.yaml"))
    assert cfg.model.name == "unet3d" and cfg.framework.name == "pytorch"
    assert cfg.dataset.format == "npz"
    assert cfg.dataset.record_length_stdev == 68341808
    assert cfg.model.model_size_bytes == 499153191
    assert cfg.checkpoint.epochs_between_checkpoints == 2
    assert cfg.train.computation_time == pytest.approx(1.3604)


def test_dlio_cosmoflow_aliases_and_distribution():
    cfg = config.load(config_file=os.path.join(FIX, "dlio_cosmoflow.yaml"))
    assert cfg.dataset.record_length == 131072
    assert cfg.train.computation_time == {"type": "normal", "mean": 0.1, "stdev": 0.01}


def test_override_precedence_and_hydra_spellings():
    cfg = config.load(["workload=unet3d", "++workload.dataset.num_files_train=8",
                       "dataset.record_length=1m", "io.mpiio_hints.cb_nodes=2",
                       "train.computation_time=0"])
    assert cfg.dataset.num_files_train == 8
    assert cfg.dataset.record_length == 1 << 20
    assert cfg.io.mpiio_hints == {"cb_nodes": 2}
    assert cfg.train.computation_time == 0.0
    assert cfg.reader.batch_size == 7          # from the workload


@pytest.mark.parametrize("text,value", [("4096", 4096), ("4k", 4096), ("1MiB", 1 << 20),
                                        ("2g", 2 << 30), ("1.5k", 1536)])
def test_sizes(text, value):
    assert config.parse_size(text) == value


@pytest.mark.parametrize("overrides,message", [
    (["dataset.num_files_trian=3"],
     "unknown key dataset.num_files_trian (did you mean dataset.num_files_train?)"),
    (["datset.num_files_train=3"], "unknown section 'datset' (did you mean dataset?)"),
    (["num_files_train=3"], "overrides name a section and a key"),
    (["dataset.num_files_train=many"], "dataset.num_files_train='many': expected an integer"),
    (["dataset.num_files_train=0"], "dataset.num_files_train=0: must be at least 1"),
    (["dataset.record_length=12q"], "dataset.record_length='12q': expected a size"),
    (["train.computation_time=-1"], "train.computation_time=-1"),
    (["io.interface=posix_drect"], "(did you mean posix_direct?)"),
    (["dataset.format=orc"], "dataset.format='orc': one of"),
    (["io.interface=stdio", "reader.odirect=true"], "O_DIRECT is a POSIX open flag"),
    (["io.interface=mpiio_coll"], "collective I/O on one shared file"),
    (["io.interface=hdf5_coll", "dataset.format=npz"], "reads HDF5 files"),
    (["dataset.format=hdf5", "io.interface=posix"], "is read through libhdf5"),
    (["io.layout=shared", "dataset.num_files_train=4"], "must be 1, not 4"),
    (["train.computation_time={type: uniform, min: 2, max: 1}"], "uniform min 2.0 is above max"),
    (["train.computation_time={type: weibull, a: 1}"], "train.computation_time.type='weibull'"),
    (["workload=unet4d"], "unknown workload 'unet4d' (did you mean unet3d?)"),
    (["reader.shuffle_scope=rank", "io.read_type=memory"],
     "reader.shuffle_scope=rank shuffles each rank's share"),
    (["reader.shuffle_scope=shard"], "reader.shuffle_scope='shard': one of"),
    (["reader.hdf5_reads=sample"], "reader.hdf5_reads=sample reads HDF5 rows"),
    (["dataset.format=hdf5", "io.interface=hdf5", "reader.hdf5_reads=sample",
      "reader.batch_size=2", "reader.batch_order=[1, 2]"],
     "reader.batch_order=[1, 2]: the order of a batch's H5Dread calls needs"),
    (["dataset.format=hdf5", "io.interface=hdf5", "reader.batch_size=2",
      "reader.batch_order=[1, 0]"], "needs reader.hdf5_reads=sample"),
    (["reader.hdf5_dataset_open=read"],
     "reader.hdf5_dataset_open=read opens an HDF5 dataset for each independent H5Dread: it "
     "needs dataset.format hdf5 and io.interface hdf5, hdf5_sec2 or hdf5_core, not raw "
     "through posix"),
    (["dataset.format=hdf5", "io.interface=hdf5_coll", "io.layout=shared",
      "dataset.num_files_train=1", "reader.hdf5_dataset_open=read"],
     "not hdf5 through hdf5_coll"),
    (["reader.shuffle_block=16", "reader.sample_shuffle=off"],
     "reader.shuffle_block=16 shuffles runs of samples read on "
     "demand: it needs reader.sample_shuffle, io.read_type=on_demand and reader.access=sample"),
    (["reader.shuffle_block=0", "reader.sample_shuffle=seed"], "reader.shuffle_block=0"),
    (["io.write_collective=true"], "io.write_collective=true needs io.write_first=true"),
    (["io.write_collective=true", "io.write_first=true", "dataset.format=raw"],
     "io.write_collective=true writes one shared file in collective calls: io.layout shared "
     "or replicated"),
    (["reader.worker_files=epoch", "reader.read_threads=0"],
     "reader.worker_files=epoch gives each read thread its own open files"),
])
def test_bad_input_is_one_line(overrides, message):
    with pytest.raises(config.ConfigError) as ei:
        config.load(["workload=default"] + overrides)
    text = str(ei.value)
    assert message in text and "\n" not in text


def test_batch_larger_than_share():
    cfg = config.load(["workload=default", "reader.batch_size=100"])
    with pytest.raises(config.ConfigError, match="larger than a rank's share"):
        config.check_ranks(cfg, 2)


def test_sharding_block_and_writer_stride_need_their_policy():
    """reader.sharding_block is round_robin's turn, whole blocks a rank (checked with the
    job's size); checkpoint.writer_stride is checkpoint.writers=strided's."""
    shared = ["workload=default", "io.interface=mpiio", "io.layout=shared",
              "dataset.num_files_train=1", "dataset.num_samples_per_file=40",
              "reader.batch_size=1"]
    with pytest.raises(config.ConfigError, match="reader.sharding_block=4 is the turn"):
        config.load(shared + ["reader.sharding_block=4"])
    cfg = config.load(shared + ["reader.sharding=round_robin", "reader.sharding_block=4"])
    config.check_ranks(cfg, 5)          # 8 samples a rank: 2 blocks of 4
    with pytest.raises(config.ConfigError, match="does not divide the 6 samples"):
        config.check_ranks(cfg, 6)
    with pytest.raises(config.ConfigError, match="checkpoint.writer_stride=2 is the stride"):
        config.load(["workload=default", "checkpoint.writer_stride=2"])
    cfg = config.load(["workload=default", "checkpoint.writers=strided",
                       "checkpoint.writer_stride=2"])
    assert (cfg.checkpoint.writers, cfg.checkpoint.writer_stride) == ("strided", 2)


@pytest.mark.parametrize("fill", ["0", "1.5", "-0.25"])
def test_content_fill_is_a_share(fill):
    with pytest.raises(config.ConfigError, match="dataset.content_fill"):
        config.load(["workload=default", f"dataset.content_fill={fill}"])


def test_bad_yaml_file(tmp_path):
    bad = tmp_path / "w.yaml"
    bad.write_text("dataset: [1, 2\n")
    with pytest.raises(config.ConfigError, match="not valid YAML"):
        config.load(config_file=str(bad))
    with pytest.raises(config.ConfigError, match="cannot read"):
        config.load(config_file=str(tmp_path / "missing.yaml"))


def test_config_is_frozen():
    cfg = config.load(["workload=default"])
    with pytest.raises(AttributeError):
        cfg.dataset.num_files_train = 3


@pytest.mark.parametrize("spec,mean", [
    (0.5, 0.5), ({"type": "normal", "mean": 0.2, "stdev": 0.01}, 0.2),
    ({"type": "uniform", "min": 0.1, "max": 0.3}, 0.2),
    ({"type": "gamma", "shape": 2.0, "scale": 0.1}, 0.2),
    ({"type": "exponential", "scale": 0.2}, 0.2), ({"type": "poisson", "lam": 3.0}, 3.0)])
def test_compute_time_distributions(spec, mean):
    draws = timing.draw(spec, np.random.default_rng(1), 20000)
    assert (draws >= 0).all()
    assert draws.mean() == pytest.approx(mean, rel=0.05)
    assert timing.mean(spec) == pytest.approx(mean)


def test_off_stays_off(tmp_path):
    cfg = config.load(["workload=default", "reader.sample_shuffle=off", "model.name=007",
                       "reader.file_shuffle=random"])
    assert cfg.reader.sample_shuffle == "off" and cfg.model.name == "007"
    f = tmp_path / "w.yaml"
    f.write_text("reader:\n  sample_shuffle: off\n  batch_size: 2\n")
    assert config.load(config_file=str(f)).reader.sample_shuffle == "off"


@pytest.mark.parametrize("content,line", [
    (b"dataset:\n  num_files_train: 2\n\x7fELF\x02\x01\x01\x00\xd0\xfe\xff\n",
     " line 3: not UTF-8 text (byte 0xd0); a workload file is YAML"),
    (b"dataset:\n  record_length: [1\n  num_files_train: 2\n",
     " line 3: not valid YAML (expected ',' or ']', but got ':')"),
    (b"dataset:\n  record_length: \"\x01\"\n",
     " line 2: not valid YAML (special characters are not allowed)"),
    (b"- dataset\n- reader\n", ": holds a list; a workload file is a mapping of sections"),
    (b"just words\n", ": holds a string; a workload file is a mapping of sections"),
])
def test_bad_config_file_is_one_line_naming_it_and_exit_2(tmp_path, content, line):
    """A --config file of binary bytes, bad YAML or a document that is not a mapping: one line
    naming the file (and the line, where known), exit 2, no traceback."""
    f = tmp_path / "w.yaml"
    f.write_bytes(content)
    p = subprocess.run([sys.executable, "-m", "dlio_mpi", "run", "--config", str(f),
                        f"output.folder={tmp_path}/o"], capture_output=True, text=True,
                       timeout=60, cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    assert p.stderr == f"dlio_mpi: config error: {f}{line}\n"
    assert p.stdout == "" and not (tmp_path / "o").exists()


@pytest.mark.parametrize("prefix", ["../../x/esc", "a/b", "..", "", "/abs", "a\0b"])
def test_a_file_prefix_that_leaves_its_folder_is_a_config_error(prefix):
    with pytest.raises(config.ConfigError) as ei:
        config.load(["workload=default", f"dataset.file_prefix={prefix}"])
    assert str(ei.value) == (
        f"dataset.file_prefix={prefix!r}: a file name prefix must not be empty or contain "
        "'/', '..' or a NUL byte (it names files inside their folder)")


@pytest.mark.parametrize("key", ["dataset.data_folder", "checkpoint.checkpoint_folder",
                                 "output.folder"])
def test_an_empty_folder_is_a_config_error(key):
    with pytest.raises(config.ConfigError, match=rf"^{key}='': a directory must not be empty"):
        config.load(["workload=default", f"{key}="])


@pytest.mark.parametrize("name", [n for n in config.list_workloads() if n != "default"])
def test_a_workloads_shrink_advice_runs_on_a_few_ranks(name):
    """The overrides a shipped workload's `# shrink:` line gives make a configuration that
    2 and 4 ranks can run (the rank checks pass)."""
    from dlio_mpi.config import workload_catalog

    overrides = workload_catalog.shrink_overrides(name)
    assert overrides, name
    cfg = config.load([f"workload={name}", *overrides])
    if not cfg.workflow.train:          # checkpoints only: no samples to share among ranks
        assert cfg.workflow.checkpoint
        return
    for ranks in (2, 4):
        config.check_ranks(cfg, ranks)

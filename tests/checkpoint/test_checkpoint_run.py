"""Checkpoints in runs under mpiexec: during training (every N steps, every N epochs after
epoch K), and the checkpoint-only mode of the llama3 workloads (shrunk): files of exactly the
expected sizes, fsync really issued and counted, nothing left half-written."""
import re

import pytest

from dlio_mpi.config import loader as config
from dlio_mpi.checkpoint import record as checkpoint_record
from dlio_mpi.checkpoint import schedule
from mpirun import run_mpi
from datautil import own_summary, run_summary

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

SHRINK = ["model.num_layers=1", "model.transformer.hidden_size=256",
          "model.transformer.ffn_hidden_size=512", "model.transformer.vocab_size=1024"]


def checkpoint_files(folder):
    """The checkpoint files in folder, which its record names, each once, in order."""
    files = sorted(p for p in folder.iterdir() if p.name != checkpoint_record.RECORD)
    made, names = checkpoint_record.read(folder)
    assert made and sorted(names) == [p.name for p in files]
    return files


def run(tmp_path, n, *args, check=True):
    p = run_mpi(n, "run_cli.py", "run", f"dataset.data_folder={tmp_path}/d",
                f"output.folder={tmp_path}/o", f"checkpoint.checkpoint_folder={tmp_path}/c",
                *args, timeout=180, check=check)
    if not check:
        return p, None
    return p, own_summary(tmp_path / "o")


def test_every_n_steps_during_training(tmp_path):
    n = 2
    _, s = run(tmp_path, n, "workflow.checkpoint=true", "model.model_size_bytes=1m",
               "checkpoint.writers=all", "checkpoint.steps_between_checkpoints=5",
               "checkpoint.fsync=true", "train.epochs=2", "train.computation_time=0")
    per_epoch = s["steps_per_epoch"]                    # 16 at 2 ranks, batch 4
    writes = [c for c in s["checkpoints"] if c["op"] == "write"]
    # after steps 5, 10 and 15 of each epoch (the count starts again with the epoch, as the
    # DLIO benchmark's), named by the run's step
    assert [c["step"] for c in writes] == [e * per_epoch + k for e in (0, 1)
                                           for k in range(5, per_epoch + 1, 5)]
    for c in writes:
        assert c["bytes"] == 1 << 20 and c["fsyncs"] == n and c["writers"] == n
    files = checkpoint_files(tmp_path / "c")
    assert len(files) == len(writes) * n
    assert all(f.stat().st_size == (1 << 20) // n for f in files)
    assert not [f for f in files if f.name.endswith(".part")]


def test_after_epoch_k_every_m_epochs(tmp_path):
    _, s = run(tmp_path, 2, "workflow.checkpoint=true", "model.model_size_bytes=100k",
               "checkpoint.checkpoint_after_epoch=2", "checkpoint.epochs_between_checkpoints=2",
               "train.epochs=5", "train.computation_time=0", "checkpoint.format=mpiio")
    assert [c["epoch"] for c in s["checkpoints"]] == [2, 4]
    files = checkpoint_files(tmp_path / "c")
    assert len(files) == 2 and all(f.stat().st_size == 100 * 1024 for f in files)


@pytest.mark.parametrize("fmt", ["file_per_rank", "mpiio", "hdf5"])
def test_llama3_8b_checkpoint_only_shrunk(tmp_path, fmt):
    n = 2
    _, s = run(tmp_path, n, "workload=llama3_8b", *SHRINK, "checkpoint.num_checkpoints_write=2",
               "checkpoint.num_checkpoints_read=2", f"checkpoint.format={fmt}",
               "checkpoint.verify=true")
    cfg = config.load(["workload=llama3_8b"] + SHRINK)
    size = schedule.size_of(cfg, n)
    assert s["epochs"] == [] and s["bytes_moved"] == 0
    ops = [(c["op"], c["index"]) for c in s["checkpoints"]]
    assert ops == [("write", 0), ("write", 1), ("read", 0), ("read", 1)]
    for c in s["checkpoints"]:
        assert c["bytes"] == size.total_bytes
        if c["op"] == "write":      # publishing (renames, directory fsync) timed apart
            assert c["fsyncs"] >= 1 and 0 < c["publish_s"] < c["duration_s"]
        else:
            assert c["publish_s"] == 0
    files = checkpoint_files(tmp_path / "c")
    if fmt == "file_per_rank":
        assert len(files) == 2 * n
        assert sorted(f.stat().st_size for f in files) == \
            sorted([size.rank_bytes(r) for r in range(n)] * 2)
    else:
        assert len(files) == 2


def test_checkpoint_without_a_size_is_a_config_error(tmp_path):
    p, _ = run(tmp_path, 2, "workflow.checkpoint=true", check=False)
    assert p.returncode == 2
    assert "workflow.checkpoint=true needs a size" in p.stdout


def test_llama3_70b_needs_a_multiple_of_its_tensor_parallel_degree(tmp_path):
    p, _ = run(tmp_path, 2, "workload=llama3_70b", check=False)
    assert p.returncode == 2
    assert "tensor=8 x pipeline=1 does not divide the 2 ranks" in p.stdout


def test_end_of_epoch_checkpoints_are_in_the_op_log(tmp_path):
    """A checkpoint written after an epoch is in the op log (phase checkpointN), its writes
    and fsyncs as the run made them, as Darshan records them."""
    import numpy as np

    n = 2
    _, s = run(tmp_path, n, "workflow.checkpoint=true", "model.model_size_bytes=1m",
               "checkpoint.writers=all", "checkpoint.fsync=true", "train.epochs=2",
               "train.computation_time=0", "io.keep_oplog=true")
    writes = [c for c in s["checkpoints"] if c["op"] == "write"]
    assert [c["epoch"] for c in writes] == [1, 2]
    total = fsyncs = 0
    for r in range(n):
        with np.load(tmp_path / "o" / "latest" / f"oplog_rank{r:05d}.npz") as z:
            names = z["phases"].tolist()
            assert names == ["train0", "checkpoint0", "train1", "checkpoint1"]
            for i, name in enumerate(names):
                op = z[f"e{i}_op"]
                if name.startswith("checkpoint"):
                    total += int(z[f"e{i}_bytes"][op == 1].sum())
                    fsyncs += int((op == 4).sum())
                else:
                    assert not (op == 1).any()          # no writes while training
    assert total == 2 * (1 << 20) and fsyncs == 2 * n


def test_checkpoint_only_run_reports_no_training_figures(tmp_path):
    """A run of checkpoints only says so: no AU, no throughput (null in summary.json, not nan),
    no numpy warning, no warning about a dataset it never reads; the checkpoint bytes."""
    p, s = run(tmp_path, 2, "workflow.train=false", "workflow.checkpoint=true",
               "model.model_size_bytes=1m")
    metric = run_summary(tmp_path / "o")["metric"]
    assert s["epochs"] == [] and "train_au_mean_percentage" not in metric
    assert "train_throughput_mean_samples_per_second" not in metric
    assert metric["train_au_meet_expectation"] == "not applicable"
    out = p.stdout
    assert not re.search(r"\bnan\b", out) and "RuntimeWarning" not in out, out
    assert "train_au_mean_percentage" not in out and not re.search(r"AU \d", out), out
    assert "page cache" not in out
    wrote = sum(c["bytes"] for c in s["checkpoints"] if c["op"] == "write")
    assert wrote == 1 << 20 and f"checkpoint bytes written {wrote}" in out
    pub = [c["publish_s"] for c in s["checkpoints"] if c["op"] == "write"][0]
    assert re.search(rf"checkpoint 0 write: {wrote} bytes in .*, published in "
                     rf"{pub * 1e3:.1f} ms\)", out), out


@pytest.mark.parametrize("writers,files", [("all", 3), ("rank0", 1)])
def test_model_size_is_the_whole_model_split_among_writers(tmp_path, writers, files):
    """model.model_size_bytes is the whole model: its writers' files hold it once between them
    (an odd size split as evenly as integers allow), as the schema says."""
    from dlio_mpi.config.schema import SCHEMA
    size = 1000003
    _, s = run(tmp_path, 3, "workflow.train=false", "workflow.checkpoint=true",
               f"model.model_size_bytes={size}", f"checkpoint.writers={writers}")
    written = sorted(f for f in (tmp_path / "c").iterdir() if f.name.startswith("ckpt-"))
    assert len(written) == files
    sizes = sorted(f.stat().st_size for f in written)
    assert sum(sizes) == size and sizes[-1] - sizes[0] <= 1
    assert [c["bytes"] for c in s["checkpoints"] if c["op"] == "write"] == [size]
    doc = SCHEMA["model"]["model_size_bytes"].doc
    assert "whole model" in doc and "split evenly among" in doc and "per writer" not in doc


@pytest.mark.parametrize("fmt", ["file_per_rank", "mpiio"])
def test_read_only_run_reads_an_earlier_runs_checkpoint(tmp_path, fmt):
    """num_checkpoints_write=0: no write, the checkpoint an earlier run wrote is read (and
    verified); with none there, the run fails naming the missing file."""
    common = ["workflow.train=false", "workflow.checkpoint=true", f"checkpoint.format={fmt}",
              "model.model_size_bytes=2m", "checkpoint.writers=all", "checkpoint.fsync=true"]
    _, s = run(tmp_path, 2, *common, "checkpoint.num_checkpoints_write=1",
               "checkpoint.num_checkpoints_read=0")
    assert [c["op"] for c in s["checkpoints"]] == ["write"]
    _, s = run(tmp_path, 2, *common, "checkpoint.num_checkpoints_write=0",
               "checkpoint.num_checkpoints_read=1", "checkpoint.verify=true")
    assert [(c["op"], c["bytes"]) for c in s["checkpoints"]] == [("read", 2 << 20)]
    for f in (tmp_path / "c").iterdir():
        f.unlink()
    p, _ = run(tmp_path, 2, *common, "checkpoint.num_checkpoints_write=0",
               "checkpoint.num_checkpoints_read=1", check=False)
    assert p.returncode != 0 and "does not exist" in p.stdout + p.stderr


@pytest.mark.parametrize("fmt,layer,module", [("mpiio", "MPI-IO", "MPI-IO"),
                                              ("hdf5", "HDF5", "H5D")])
def test_collective_transfer_size_is_a_ranks_bytes_per_collective_call(tmp_path, fmt, layer,
                                                                       module):
    """A 2 MiB checkpoint of 2 writers in calls of 256 KiB: 4 collective calls a rank (the
    default, 64 MiB, would make one), each rank's 1 MiB in its file."""
    from dlio_mpi_analysis.characterization.characterize import characterize
    from dlio_mpi_analysis.characterization.layers import parts_at

    run(tmp_path, 2, "workflow.checkpoint=true", f"checkpoint.format={fmt}",
        "model.model_size_bytes=2m", "checkpoint.writers=all",
        "checkpoint.collective_transfer_size=256k", "train.epochs=1",
        "train.computation_time=0", "io.keep_oplog=true")
    c = characterize(str(tmp_path / "o"))
    parts, _ = parts_at(c.records, c.names, c.layers, layer)
    frame = next(f for spec, f in parts if spec.name == module).frame()
    ids = [i for i, role in c.roles.items() if role == "checkpoint"]
    mine = frame[frame["id"].isin(ids)]
    column = "MPIIO_COLL_WRITES" if module == "MPI-IO" else "H5D_WRITES"
    assert int(mine[column].sum()) == 2 * 4
    assert len(checkpoint_files(tmp_path / "c")) == 1


@pytest.mark.parametrize("fmt,layer,module", [("mpiio", "MPI-IO", "MPI-IO"),
                                              ("hdf5", "HDF5", "H5D")])
def test_independent_calls_of_a_shared_checkpoint(tmp_path, fmt, layer, module):
    """checkpoint.collective=false: a 2 MiB checkpoint of 3 writers (699,051 + 699,051 +
    699,050 bytes) in independent calls of 256 KiB: 3 a rank, no collective one; read back and
    verified byte for byte."""
    from dlio_mpi_analysis.characterization.characterize import characterize
    from dlio_mpi_analysis.characterization.layers import parts_at

    _, s = run(tmp_path, 3, "workflow.train=false", "workflow.checkpoint=true",
               f"checkpoint.format={fmt}", "model.model_size_bytes=2m",
               "checkpoint.writers=all", "checkpoint.collective=false",
               "checkpoint.collective_transfer_size=256k", "checkpoint.num_checkpoints_write=1",
               "checkpoint.num_checkpoints_read=1", "checkpoint.verify=true",
               "io.keep_oplog=true")
    assert [c["op"] for c in s["checkpoints"]] == ["write", "read"]
    assert all(c["bytes"] == 2 << 20 for c in s["checkpoints"])
    c = characterize(str(tmp_path / "o"))
    parts, _ = parts_at(c.records, c.names, c.layers, layer)
    frame = next(f for spec, f in parts if spec.name == module).frame()
    if module == "MPI-IO":
        assert int(frame["MPIIO_INDEP_WRITES"].sum()) == 3 * 3
        assert int(frame["MPIIO_COLL_WRITES"].sum()) == int(frame["MPIIO_COLL_READS"].sum()) == 0
    else:
        assert int(frame["H5D_WRITES"].sum()) == 3 * 3
        assert int(frame["H5D_USE_MPIIO_COLLECTIVE"].max()) == 0
    [f] = checkpoint_files(tmp_path / "c")
    assert f.stat().st_size >= 2 << 20


def test_several_files_a_writer(tmp_path):
    """checkpoint.files_per_rank=3: a writer's share of a 3 MiB checkpoint in 3 files of equal
    parts (512 KiB each at 2 writers), read back and verified, named in the folder's record
    (clean removes them)."""
    _, s = run(tmp_path, 2, "workflow.train=false", "workflow.checkpoint=true",
               "model.model_size_bytes=3m", "checkpoint.writers=all",
               "checkpoint.files_per_rank=3", "checkpoint.num_checkpoints_write=2",
               "checkpoint.num_checkpoints_read=1", "checkpoint.verify=true",
               "io.keep_oplog=true")
    assert [c["op"] for c in s["checkpoints"]] == ["write", "write", "read"]
    files = checkpoint_files(tmp_path / "c")
    assert len(files) == 2 * 2 * 3
    assert all(f.stat().st_size == (3 << 20) // 6 for f in files)
    assert sorted(f.name for f in files)[:3] == [f"ckpt-000000-r000000-{j:02d}.bin"
                                                for j in range(3)]


def test_independent_calls_need_a_shared_format(tmp_path):
    p, _ = run(tmp_path, 2, "workflow.checkpoint=true", "model.model_size_bytes=1m",
               "checkpoint.collective=false", check=False)
    assert p.returncode == 2
    assert "checkpoint.collective=false makes the calls of the shared formats (mpiio, hdf5) " \
        "independent: not checkpoint.format=file_per_rank" in p.stdout
    p, _ = run(tmp_path, 2, "workflow.checkpoint=true", "model.model_size_bytes=1m",
               "checkpoint.format=mpiio", "checkpoint.files_per_rank=2", check=False)
    assert p.returncode == 2 and "checkpoint.files_per_rank=2: checkpoint.format " \
        "file_per_rank takes 1 to 8 files a writer, mpiio its own" in p.stdout


def test_checkpoint_read_back_as_torch_load_reads_a_zip(tmp_path):
    """checkpoint.read_pattern=torch_zip: each file read back in torch.load's calls on a zip of
    its tensors (4 KiB headers, the end records and directory from the end, a call a tensor),
    the model file's 4 tensors and the optimizer file's 2, in the op log as the run made them."""
    import numpy as np

    from dlio_mpi.checkpoint.zip_reads import torch_load_reads

    model, n = 1 << 20, 2
    _, s = run(tmp_path, n, "workflow.train=false", "workflow.checkpoint=true",
               f"model.model_size_bytes={model}", "checkpoint.format=model_optimizer",
               "checkpoint.writers=all", "checkpoint.optimizer_multiplier=3",
               "checkpoint.num_checkpoints_write=1", "checkpoint.num_checkpoints_read=1",
               "checkpoint.read_pattern=torch_zip", "checkpoint.tensors_per_file=[4,2]",
               "checkpoint.verify=true", "io.keep_oplog=true")
    sizes = {0: model // n, 1: 3 * model // n}
    for r in range(n):
        with np.load(tmp_path / "o" / "latest" / f"oplog_rank{r:05d}.npz") as z:
            op, file = z["e0_op"], z["e0_file"]
            reads = op == 0
            files = list(dict.fromkeys(file[reads].tolist()))
            assert len(files) == 2
            for k, (f, tensors) in enumerate(zip(sorted(files), (4, 2))):
                mine = reads & (file == f)
                calls = list(zip(z["e0_offset"][mine].tolist(), z["e0_bytes"][mine].tolist()))
                assert calls == torch_load_reads(sizes[k], tensors)
    read = [c for c in s["checkpoints"] if c["op"] == "read"]
    assert read and read[0]["bytes"] > 4 * model      # bytes read twice counted twice


@pytest.mark.parametrize("args,line", [
    (["checkpoint.format=mpiio", "checkpoint.read_pattern=torch_zip"],
     "checkpoint.read_pattern=torch_zip reads buffered files of checkpoint.format "
     "file_per_rank or model_optimizer, not mpiio"),
    (["checkpoint.read_pattern=torch_zip", "checkpoint.tensors_per_file=[3,0]"],
     "checkpoint.tensors_per_file=[3, 0]: a list of positive tensor counts")])
def test_a_zip_read_back_that_cannot_be_is_a_config_error(tmp_path, args, line):
    p, _ = run(tmp_path, 2, "workflow.checkpoint=true", "model.model_size_bytes=1m", *args,
               check=False)
    assert p.returncode == 2 and line in p.stdout
    assert "Traceback" not in p.stdout + p.stderr


def test_numpy_save_pattern_header_through_posix_array_through_a_stream(tmp_path):
    """checkpoint.write_pattern=numpy: each writer's file as numpy.save writes it, its 128-byte
    header in one POSIX write, the rest through a C stream in checkpoint.transfer_size calls
    (STDIO), every byte of the share written once; ranks 0 and 2 of 4 writing (strided), the
    checkpoint read back and verified."""
    import numpy as np

    n, size = 4, 3 * (1 << 20) + 256
    _, s = run(tmp_path, n, "workflow.train=false", "workflow.checkpoint=true",
               f"model.model_size_bytes={size}", "checkpoint.writers=strided",
               "checkpoint.writer_stride=2", "checkpoint.write_pattern=numpy",
               "checkpoint.transfer_size=512k", "checkpoint.num_checkpoints_read=1",
               "io.keep_oplog=true")
    files = [p for p in checkpoint_files(tmp_path / "c")]
    assert len(files) == 2 and sum(p.stat().st_size for p in files) == size
    for r in range(n):
        with np.load(tmp_path / "o" / "latest" / f"oplog_rank{r:05d}.npz") as z:
            names = z["phases"].tolist()
            i = names.index(next(p for p in names if p.startswith("checkpoint")))
            op, iface, nb, off = (z[f"e{i}_{k}"] for k in ("op", "iface", "bytes", "offset"))
            writes = op == 1
            if r % 2:
                assert not writes.any()
                continue
            posix, stdio = writes & (iface == 0), writes & (iface == 2)
            assert nb[posix].tolist() == [128] and off[posix].tolist() == [0]
            share = size // 2
            assert int(nb[stdio].sum()) == share - 128
            assert int(stdio.sum()) == -(-(share - 128) // (512 << 10))
    assert [c["op"] for c in s["checkpoints"]] == ["write", "read"]


def test_stream_pattern_writes_every_byte_through_a_stream(tmp_path):
    """checkpoint.write_pattern=stream (TensorFlow's checkpoint writer): each file made, then
    written whole through a C stream in checkpoint.transfer_size calls, no POSIX write; the
    checkpoint read back and verified."""
    import numpy as np

    n, size = 2, 2 * (1 << 20) + 100
    _, s = run(tmp_path, n, "workflow.train=false", "workflow.checkpoint=true",
               f"model.model_size_bytes={size}", "checkpoint.write_pattern=stream",
               "checkpoint.transfer_size=256k", "checkpoint.num_checkpoints_read=1",
               "checkpoint.verify=true", "io.keep_oplog=true")
    files = [p for p in checkpoint_files(tmp_path / "c")]
    assert sum(p.stat().st_size for p in files) == size
    with np.load(tmp_path / "o" / "latest" / "oplog_rank00000.npz") as z:
        names = z["phases"].tolist()
        i = names.index(next(p for p in names if p.startswith("checkpoint")))
        op, iface, nb = (z[f"e{i}_{k}"] for k in ("op", "iface", "bytes"))
        writes = op == 1
        assert not (writes & (iface == 0)).any()
        stdio = writes & (iface == 2)
        assert int(nb[stdio].sum()) == size and int(stdio.sum()) == -(-size // (256 << 10))
    assert [c["op"] for c in s["checkpoints"]] == ["write", "read"]


@pytest.mark.parametrize("pattern", ["numpy", "stream"])
def test_stream_write_patterns_need_a_file_a_writer(tmp_path, pattern):
    with pytest.raises(config.ConfigError, match=f"write_pattern={pattern}"):
        config.load(["workload=default", "workflow.checkpoint=true",
                     f"checkpoint.write_pattern={pattern}", "checkpoint.format=mpiio"])

"""Access patterns end to end under mpiexec: the op log of every rank holds exactly the reads
the library the pattern stands in for would issue (a buffered TFRecord stream over the rank's
own files; numpy.load of each sample's NPZ member), in the same order."""
import io
import os

import numpy as np
import pytest

from dlio_mpi.readers import access
from dlio_mpi.config import loader as config
from dlio_mpi.data import sampler
from dlio_mpi.data.dataset import Dataset
from datautil import load_npz, own_summary
from mpirun import run_mpi
from test_access import _Recorder, _with_probe

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec


def _reads(z, e):
    op, fl, off, nb = (z[f"e{e}_{k}"] for k in ("op", "file", "offset", "bytes"))
    r = op == 0
    return list(zip(fl[r].tolist(), off[r].tolist(), nb[r].tolist()))


@pytest.mark.parametrize("n,threads,interface", [(3, 0, "posix"), (2, 2, "posix"),
                                                 (2, 2, "stdio"), (2, 2, "mpiio")])
def test_stream_reads_files_front_to_back(tmp_path, n, threads, interface):
    args = [f"dataset.data_folder={tmp_path}/data", f"output.folder={tmp_path}/out",
            "dataset.format=tfrecord", "dataset.num_files_train=7",
            "dataset.num_samples_per_file=5", "dataset.record_length=20k",
            "dataset.record_length_stdev=6k", "reader.batch_size=2", "train.epochs=2",
            "train.computation_time=0", "reader.access=stream", "reader.transfer_size=16k",
            "reader.sample_shuffle=seed", "reader.shuffle_size=3", "reader.file_shuffle=seed",
            f"reader.read_threads={threads}", f"io.interface={interface}", "io.keep_oplog=true"]
    run_mpi(n, "run_cli.py", "run", *args, timeout=240)
    cfg = config.load(["workload=default"] + args)
    data = Dataset(cfg)
    s = own_summary(tmp_path / "out")
    assert s["read_threads"] == threads
    steps = access.stream_steps(7, 5, n, 2)
    assert s["steps_per_epoch"] == steps
    assert s["samples_dropped_per_epoch"] == 35 - steps * 2 * n
    logs = [load_npz(tmp_path / "out" / "latest" / f"oplog_rank{r:05d}.npz") for r in range(n)]
    for e in range(2):
        seen = set()
        for r, z in enumerate(logs):
            files = access.stream_files(7, n, r, e, cfg.train.seed, True)
            got = _reads(z, e)
            assert not seen & {f for f, _, _ in got}          # no file read by two ranks
            seen |= {f for f, _, _ in got}
            # what a 16 KiB buffered reader of these files hands over, and nothing more
            sizes = [data.index(int(f)).file_size for f in files]
            ends = [data.index(int(f)).offsets + data.index(int(f)).lengths for f in files]
            plan = access.stream_reads(files, sizes, ends, steps, 2, 3, 16384)
            want = list(zip(plan.file.tolist(), plan.offset.tolist(), plan.length.tolist()))
            if threads:
                # threads overlap different files; each file's reads stay in order
                for f in set(plan.file.tolist()):
                    assert [r for r in got if r[0] == f] == [r for r in want if r[0] == f]
                got, want = sorted(got), sorted(want)
            assert got == want
            for f in set(plan.file.tolist()):
                o = [x for ff, x, _ in got if ff == f]
                assert o == list(range(0, len(o) * 16384, 16384))
        assert s["epochs"][e]["bytes_moved"] == sum(b for z in logs for _, _, b in _reads(z, e))


@pytest.mark.parametrize("n,interface", [(2, "posix"), (1, "stdio")])
def test_numpy_access_is_numpy_load(tmp_path, n, interface):
    args = [f"dataset.data_folder={tmp_path}/data", f"output.folder={tmp_path}/out",
            "dataset.format=npz", "dataset.num_files_train=4", "dataset.num_samples_per_file=3",
            "dataset.record_length=300k", "dataset.record_length_stdev=90k",
            "reader.batch_size=2", "train.epochs=1", "train.computation_time=0",
            "reader.access=numpy", "reader.sample_shuffle=seed", f"io.interface={interface}",
            "io.keep_oplog=true"]
    run_mpi(n, "run_cli.py", "run", *args, timeout=240)
    cfg = config.load(["workload=default"] + args)
    data = Dataset(cfg)
    blk = os.stat(data.path(0)).st_blksize
    for r in range(n):
        z = load_npz(tmp_path / "out" / "latest" / f"oplog_rank{r:05d}.npz")
        plan = sampler.rank_samples(12, n, r, 2, 0, cfg.train.seed, True)
        want = []
        for s in plan.reshape(-1).tolist():
            f, k = divmod(s, 3)
            log = []
            with io.BufferedReader(_Recorder(data.path(f), log), buffer_size=blk) as fh, \
                    np.load(fh) as d:
                d[f"x_{k}"]
            want += [(f, o, b) for o, b in _with_probe(log, os.path.getsize(data.path(f)))]
        assert _reads(z, 0) == want


def test_stream_read_ahead_holds_a_buffer_per_thread_not_a_ring_of_batches(tmp_path):
    """ImageNet's shape (batches of 64 samples of ~110 KB, 8 read threads, 256 KiB blocks):
    each thread reads into its own buffer of one block (the largest read), every block at
    its start; a buffer of a step's reads each (up to 8 MiB) took the rank's peak to 120 MiB,
    a ring of (prefetch + 1) x batch slots of a whole batch each would be gigabytes."""
    args = [f"dataset.data_folder={tmp_path}/data", f"output.folder={tmp_path}/out",
            "workload=imagenet", "dataset.num_files_train=4", "dataset.num_samples_per_file=96",
            "reader.shuffle_size=32", "train.computation_time=0.001", "io.keep_oplog=true"]
    run_mpi(2, "run_cli.py", "run", *args, timeout=240)
    s = own_summary(tmp_path / "out")
    assert s["read_threads"] == 8
    assert s["startup"]["peak_rss_mib_max"] < 100, s["startup"]
    cfg = config.load(args)
    logs = [load_npz(tmp_path / "out" / "latest" / f"oplog_rank{r:05d}.npz") for r in range(2)]
    got = sum(int(z["e0_bytes"][z["e0_op"] == 0].sum()) for z in logs)
    assert got == s["epochs"][0]["bytes_moved"] > 0
    assert s["epochs"][0]["samples"] == s["steps_per_epoch"] * 2 * cfg.reader.batch_size


def test_a_file_opened_per_sample_reads_each_sample_once(tmp_path):
    """reader.reopen=true with per-sample reads: an open and one read per sample, every sample
    of the epoch once, the bytes the dataset's."""
    from dlio_mpi_analysis.loading.oplog_records import OPEN, READ
    args = [f"dataset.data_folder={tmp_path}/data", f"output.folder={tmp_path}/out",
            "dataset.num_files_train=4", "dataset.num_samples_per_file=6",
            "dataset.record_length=8k", "reader.batch_size=3", "reader.reopen=true",
            "reader.read_threads=0", "train.epochs=1", "io.keep_oplog=true"]
    run_mpi(2, "run_cli.py", "run", *args, timeout=240)
    s = own_summary(tmp_path / "out")
    reads = opens = 0
    seen = set()
    for r in range(2):
        z = load_npz(tmp_path / "out" / "latest" / f"oplog_rank{r:05d}.npz")
        op, fl, off = z["e0_op"], z["e0_file"], z["e0_offset"]
        reads += int((op == READ).sum())
        opens += int((op == OPEN).sum())
        seen |= set(zip(fl[op == READ].tolist(), off[op == READ].tolist()))
    assert reads == opens == len(seen) == 24
    assert s["bytes_moved"] == 24 * 8192


@pytest.mark.parametrize("threads", [0, 2])
def test_numpy_access_of_npy_files_is_numpy_load(tmp_path, threads):
    """numpy.load of a .npy file: the header through Python's buffered file (what numpy reads
    of it there is recorded), the array through C stdio (numpy.fromfile: one fread of the
    array's bytes from where numpy's header parse leaves the file): per load, those two reads,
    the second on a STDIO stream of its own, in that order, also with read-ahead threads."""
    from dlio_mpi.engines import IFACE
    args = [f"dataset.data_folder={tmp_path}/data", f"output.folder={tmp_path}/out",
            "dataset.format=npy", "dataset.num_files_train=6", "dataset.num_samples_per_file=1",
            "dataset.record_length=300k", "reader.batch_size=1", "train.epochs=2",
            "train.computation_time=0", "reader.access=numpy", f"reader.read_threads={threads}",
            "reader.sample_shuffle=seed", "io.keep_oplog=true"]
    run_mpi(2, "run_cli.py", "run", *args, timeout=240)
    cfg = config.load(["workload=default"] + args)
    data = Dataset(cfg)
    blk = os.stat(data.path(0)).st_blksize
    for r in range(2):
        z = load_npz(tmp_path / "out" / "latest" / f"oplog_rank{r:05d}.npz")
        for e in range(2):
            want = []
            for f in sampler.rank_samples(6, 2, r, 1, e, cfg.train.seed, True).reshape(-1):
                path, log = data.path(int(f)), []
                with io.BufferedReader(_Recorder(path, log), buffer_size=blk) as fh:
                    arr = np.load(fh)
                with open(path, "rb") as fh:
                    np.lib.format.read_array_header_1_0(fh) \
                        if np.lib.format.read_magic(fh) == (1, 0) \
                        else np.lib.format.read_array_header_2_0(fh)
                    start = fh.tell()
                assert log == [(0, min(blk, os.path.getsize(path)))]   # numpy's Python reads
                want += [(int(f), 0, log[0][1], IFACE["posix"]),
                         (int(f), start, arr.nbytes, IFACE["stdio"])]
            op, fl, off, nb, ifc = (z[f"e{e}_{k}"] for k in ("op", "file", "offset", "bytes",
                                                             "iface"))
            rd = op == 0
            got = list(zip(fl[rd].tolist(), off[rd].tolist(), nb[rd].tolist(),
                           ifc[rd].tolist()))
            if threads:     # loads of different files overlap; a file's reads stay in order
                for f in {w[0] for w in want}:
                    assert [g for g in got if g[0] == f] == [w for w in want if w[0] == f]
                got, want = sorted(got), sorted(want)
            assert got == want


def test_stream_of_csv_files_is_pandas_read_csv(tmp_path):
    """pandas.read_csv of a file (its C parser reads 256 KiB at a time to the end, then twice
    more at the end) against the stream's reads with reader.eof_reads=2, read for read."""
    import pandas as pd
    args = [f"dataset.data_folder={tmp_path}/data", f"output.folder={tmp_path}/out",
            "dataset.format=csv", "dataset.num_files_train=4", "dataset.num_samples_per_file=3",
            "dataset.record_length=300k", "reader.batch_size=1", "train.epochs=1",
            "train.computation_time=0", "reader.access=stream", "reader.transfer_size=256k",
            "reader.eof_reads=2", "reader.sample_shuffle=off", "io.keep_oplog=true"]
    run_mpi(2, "run_cli.py", "run", *args, timeout=240)
    cfg = config.load(["workload=default"] + args)
    data = Dataset(cfg)
    for r in range(2):
        got = _reads(load_npz(tmp_path / "out" / "latest" / f"oplog_rank{r:05d}.npz"), 0)
        files = list(dict.fromkeys(f for f, _, _ in got))
        assert len(files) == 2
        for f in files:
            log = []
            with io.BufferedReader(_Recorder(data.path(f), log, empty=True)) as fh:
                pd.read_csv(fh, header=None)
            assert [(o, n) for ff, o, n in got if ff == f] == log


@pytest.mark.parametrize("threads", [0, 2])
def test_csv_loaded_whole_for_each_sample(tmp_path, threads):
    """reader.stream_pass=sample (the DLIO benchmark's CSV reader: pandas.read_csv of the whole
    file for every sample it takes): per sample an open of its file and pandas' reads of all of
    it, read for read, the samples in the rank's stream order, also with read-ahead threads."""
    import pandas as pd
    from dlio_mpi_analysis.loading.oplog_records import OPEN, READ
    args = [f"dataset.data_folder={tmp_path}/data", f"output.folder={tmp_path}/out",
            "dataset.format=csv", "dataset.num_files_train=4", "dataset.num_samples_per_file=3",
            "dataset.record_length=100k", "reader.batch_size=2", "train.epochs=2",
            "train.computation_time=0", "reader.access=stream", "reader.transfer_size=256k",
            "reader.eof_reads=2", "reader.stream_pass=sample", "reader.sample_shuffle=off",
            f"reader.read_threads={threads}", "io.keep_oplog=true"]
    run_mpi(2, "run_cli.py", "run", *args, timeout=240)
    cfg = config.load(["workload=default"] + args)
    data = Dataset(cfg)
    s = own_summary(tmp_path / "out")
    assert s["steps_per_epoch"] == 3        # 2 files of 3 samples a rank, batch 2
    for r in range(2):
        z = load_npz(tmp_path / "out" / "latest" / f"oplog_rank{r:05d}.npz")
        for e in range(2):
            files = access.stream_files(4, 2, r, e, cfg.train.seed, False)
            want = []
            for f in files.tolist():
                log = []
                with io.BufferedReader(_Recorder(data.path(f), log, empty=True)) as fh:
                    pd.read_csv(fh, header=None)
                want += [(f, o, n) for o, n in log] * 3     # the whole file for each sample
            got = _reads(z, e)
            assert got == want
            op, fl = z[f"e{e}_op"], z[f"e{e}_file"]
            for f in files.tolist():       # an open for each sample's load
                assert int(((op == OPEN) & (fl == f)).sum()) == 3
            assert int((op == READ).sum()) == len(want)



def _pickle_reads(size):
    from dlio_mpi.readers.numpy_reads import pickle_reads
    o, n = pickle_reads(size, 4096)
    return list(zip(o.tolist(), (np.minimum(o + n, size) - o).tolist()))


def _torch_reads(size):
    from dlio_mpi.checkpoint.zip_reads import torch_load_reads
    return torch_load_reads(size, 2, tail=False)    # a sample's load ends with its tensor


@pytest.mark.parametrize("keys,model", [
    (["reader.access=pickle", "reader.buffer_size=4096", "dataset.record_length=40561"],
     _pickle_reads),
    (["reader.access=torch", "reader.torch_tensors=2", "dataset.record_length=50814"],
     _torch_reads)])
def test_a_file_a_sample_loaded_by_its_library(tmp_path, keys, model):
    """reader.access=pickle (pickle.load through a buffered file: a fill at the start, the
    rest straight in whole buffers, a fill of the tail) and torch (torch.load's zip reads of a
    file of reader.torch_tensors tensors): per sample an open of its file and the library's
    reads, as each returns them, every file of the epoch once."""
    from dlio_mpi_analysis.loading.oplog_records import OPEN
    args = [f"dataset.data_folder={tmp_path}/data", f"output.folder={tmp_path}/out",
            "dataset.num_files_train=8", "dataset.num_samples_per_file=1",
            "reader.batch_size=2", "train.epochs=1", "train.computation_time=0",
            "reader.transfer_size=0", "reader.read_threads=0", "io.keep_oplog=true", *keys]
    run_mpi(2, "run_cli.py", "run", *args, timeout=240)
    data = Dataset(config.load(["workload=default"] + args))
    seen = set()
    for r in range(2):
        z = load_npz(tmp_path / "out" / "latest" / f"oplog_rank{r:05d}.npz")
        got = _reads(z, 0)
        files = list(dict.fromkeys(f for f, _, _ in got))
        seen |= set(files)
        assert got == [(f, o, n) for f in files for o, n in model(data.index(f).file_size)]
        op, fl = z["e0_op"], z["e0_file"]
        assert all(int(((op == OPEN) & (fl == f)).sum()) == 1 for f in files)
    assert seen == set(range(8))

"""io.write_first: the run writes the raw files it reads (a write-then-read benchmark such as
IOR) through the configured interface, in reader.transfer_size pieces, before the first
epoch: every byte once, the same content generate writes, in the op log as writes."""
import os

import numpy as np
import pytest

from dlio_mpi.config import loader as config
from dlio_mpi.data import generation as datagen
from dlio_mpi.config.errors import ConfigError
from dlio_mpi.data.dataset import Dataset
from dlio_mpi.formats import raw
from datautil import load_npz, own_summary
from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec


def _args(tmp_path, *extra):
    return [f"dataset.data_folder={tmp_path}/data", f"output.folder={tmp_path}/out",
            "dataset.format=raw", "dataset.num_files_train=6",
            "dataset.num_samples_per_file=5", "dataset.record_length=40k",
            "reader.batch_size=2", "train.epochs=2", "reader.transfer_size=16k",
            "reader.sample_shuffle=seed", "io.write_first=true", "io.keep_oplog=true",
            *extra]


@pytest.mark.parametrize("n,extra", [
    (2, ["io.interface=posix"]),
    (3, ["io.interface=stdio", "io.write_fsync=true"]),
    (4, ["io.interface=mpiio_coll", "io.layout=shared", "reader.sharding=round_robin",
         "dataset.num_files_train=1", "dataset.num_samples_per_file=30"]),
    (2, ["io.interface=mpiio", "io.layout=shared", "dataset.num_files_train=1",
         "dataset.num_samples_per_file=30"]),
    (2, ["io.interface=posix", "io.write_order=shuffled"]),
    (3, ["io.interface=mpiio_coll", "io.layout=shared", "dataset.num_files_train=1",
         "dataset.num_samples_per_file=30", "io.write_order=shuffled"]),
    (2, ["io.interface=posix", "io.write_fsync_per_write=true"]),
    (3, ["io.interface=mpiio_coll", "io.layout=shared", "dataset.num_files_train=1",
         "dataset.num_samples_per_file=30", "io.write_fsync_per_write=true"]),
])
def test_run_writes_its_dataset_then_reads_it(tmp_path, n, extra):
    args = _args(tmp_path, *extra)
    cfg = config.load(["workload=default"] + args)
    shared = cfg.io.layout != "multi"
    # a stale longer file of another dataset is cut to size, not kept
    d = Dataset(cfg)
    os.makedirs(os.path.dirname(d.path(0)), exist_ok=True)
    with open(d.path(0), "wb") as f:
        f.write(b"\xff" * (2 * d.index(0).file_size))
    run_mpi(n, "run_cli.py", "run", *args, timeout=240)
    for i in range(d.num_files):
        want = tmp_path / "want.bin"
        raw.write_file(want, i, d.spec)
        with open(d.path(i), "rb") as f:
            assert f.read() == want.read_bytes(), d.path(i)
    assert datagen.read_manifest(cfg.dataset.data_folder) == datagen.manifest_for(cfg)
    assert not os.path.exists(os.path.join(cfg.dataset.data_folder, datagen.GENERATING))
    s = own_summary(tmp_path / "out")
    total = d.num_files * d.spf * 40 * 1024
    assert s["write"]["bytes_written"] == total
    assert s["bytes_moved"] == 2 * (s["steps_per_epoch"] * 2 * n) * 40 * 1024
    writes, ascending = [], []
    for r in range(n):
        z = load_npz(tmp_path / "out" / "latest" / f"oplog_rank{r:05d}.npz")
        assert list(z["phases"][:1]) == ["write"]
        op, fl, off, nb = (z[f"e0_{k}"] for k in ("op", "file", "offset", "bytes"))
        w = op == 1
        assert (op[~w] != 0).all()              # no reads in the write phase
        # a rank with fewer pieces joins the collective writes with none: 0-byte calls
        writes += [x for x in zip(fl[w].tolist(), off[w].tolist(), nb[w].tolist()) if x[2]]
        for f in set(fl[w].tolist()):
            mine = off[w & (fl == f) & (nb > 0)]
            ascending.append(bool((np.diff(mine) > 0).all()))
        syncs = int((op == 4).sum()) if "write_fsync=true" in " ".join(extra) else 0
        if syncs:
            assert syncs == len(set(fl[w].tolist()))
        if "io.write_fsync_per_write=true" in extra:
            # a sync right after every write call (the collective ones of 0 bytes too)
            phase = op[(op == 1) | (op == 4)]
            assert (phase[0::2] == 1).all() and (phase[1::2] == 4).all()
            assert int((op == 4).sum()) == int(w.sum())
    # every byte of every file written exactly once, in 16 KiB pieces (40k samples: 16+16+8)
    assert sum(b for _, _, b in writes) == total
    assert sorted(b for _, _, b in writes) == sorted([16384, 16384, 8192] * (total // 40960))
    cover = {}
    for f, o, b in writes:
        cover.setdefault(f, []).append((o, b))
    for f, pieces in cover.items():
        pieces.sort()
        assert pieces[0][0] == 0
        assert all(o1 + b1 == o2 for (o1, b1), (o2, _) in zip(pieces, pieces[1:]))
    assert len(cover) == (1 if shared else d.num_files)
    # io.write_order: each rank's pieces of a file in ascending offsets, or not one rank so
    assert not any(ascending) if cfg.io.write_order == "shuffled" else all(ascending)


def test_write_first_needs_raw_or_hdf5_files(tmp_path):
    with pytest.raises(ConfigError, match="dataset.format must be raw or hdf5, not npz"):
        config.load(["workload=default"] + _args(tmp_path, "dataset.format=npz"))
    with pytest.raises(ConfigError, match="io.write_first writes through"):
        config.load(["workload=default"] + _args(tmp_path, "io.interface=mmap"))
    with pytest.raises(ConfigError, match="io.write_fsync=true needs io.write_first"):
        config.load(["workload=default", "io.write_fsync=true"])
    with pytest.raises(ConfigError, match="io.write_order=shuffled needs io.write_first"):
        config.load(["workload=default", "io.write_order=shuffled"])
    with pytest.raises(ConfigError, match="io.write_fsync_per_write=true needs io.write_first"):
        config.load(["workload=default", "io.write_fsync_per_write=true"])
    with pytest.raises(ConfigError, match="write_fsync_per_write=true syncs raw files"):
        config.load(["workload=default"] + _args(tmp_path, "dataset.format=hdf5",
                                                 "io.interface=hdf5_sec2",
                                                 "io.write_fsync_per_write=true"))
    with pytest.raises(ConfigError, match="io.write_order=shuffled writes byte ranges"):
        config.load(["workload=default"] + _args(tmp_path, "dataset.format=hdf5",
                                                 "io.interface=hdf5_sec2",
                                                 "io.write_order=shuffled"))


def test_posix_direct_makes_the_data_folder_it_writes(tmp_path):
    """As posix, stdio and MPI-IO do: O_DIRECT's alignment is checked on the folder the data
    folder is made in. Before: "cannot stat .../data", exit 1."""
    args = _args(tmp_path / "new", "io.interface=posix_direct")
    assert not (tmp_path / "new").exists()
    run_mpi(2, "run_cli.py", "run", *args, timeout=240)
    d = Dataset(config.load(["workload=default"] + args))
    for i in range(d.num_files):
        want = tmp_path / "want.bin"
        raw.write_file(want, i, d.spec)
        with open(d.path(i), "rb") as f:
            assert f.read() == want.read_bytes(), d.path(i)


@pytest.mark.parametrize("n,extra", [(2, ["io.interface=posix"]),
                                     (2, ["io.interface=mpiio", "io.layout=shared",
                                          "dataset.num_files_train=1",
                                          "dataset.num_samples_per_file=30"])])
def test_the_files_are_written_again_before_every_epoch(tmp_path, n, extra):
    """io.write_each_epoch (IOR's repetitions, -i N): a write phase before each of the 3
    epochs, every byte written once in each, then that epoch's reads; the summary counts the
    three together."""
    args = _args(tmp_path, "train.epochs=3", "io.write_each_epoch=true", *extra)
    cfg = config.load(["workload=default"] + args)
    run_mpi(n, "run_cli.py", "run", *args, timeout=240)
    d = Dataset(cfg)
    total = d.num_files * d.spf * 40 * 1024
    s = own_summary(tmp_path / "out")
    assert s["write"]["bytes_written"] == 3 * total and s["write"]["times"] == 3
    written = 0
    for r in range(n):
        z = load_npz(tmp_path / "out" / "latest" / f"oplog_rank{r:05d}.npz")
        assert list(z["phases"]) == ["write", "train0", "write1", "train1", "write2",
                                     "train2"]
        for k, phase in enumerate(z["phases"]):
            op, nb = z[f"e{k}_op"], z[f"e{k}_bytes"]
            if phase.startswith("write"):
                assert (op != 0).all()
                written += int(nb[op == 1].sum())
            else:
                assert (op != 1).all() and (op == 0).any()
    assert written == 3 * total
    # the write phases give the data folder's generation lock back each time
    assert not os.path.exists(os.path.join(cfg.dataset.data_folder, datagen.GENERATING))
    for i in range(d.num_files):
        want = tmp_path / "want.bin"
        raw.write_file(want, i, d.spec)
        with open(d.path(i), "rb") as f:
            assert f.read() == want.read_bytes()


def test_writing_each_epoch_needs_a_write_first_and_reads_on_demand(tmp_path):
    with pytest.raises(ConfigError, match="io.write_each_epoch=true needs io.write_first"):
        config.load(["workload=default", "io.write_each_epoch=true"])
    with pytest.raises(ConfigError, match="io.read_type must be on_demand"):
        config.load(["workload=default"] + _args(tmp_path, "io.write_each_epoch=true",
                                                  "io.read_type=memory"))


def test_a_rank_shift_reads_back_what_another_rank_wrote(tmp_path):
    """reader.rank_shift=1 (IOR's -C): each rank writes its own share of the files and reads
    back the share of the next rank, every byte of it, none of its own."""
    n = 3
    args = _args(tmp_path, "io.interface=posix", "reader.rank_shift=1", "train.epochs=1",
                 "reader.sample_shuffle=off")
    run_mpi(n, "run_cli.py", "run", *args, timeout=240)
    wrote, read = {}, {}
    for r in range(n):
        z = load_npz(tmp_path / "out" / "latest" / f"oplog_rank{r:05d}.npz")
        for e, mine in ((0, wrote), (1, read)):
            op, fl, nb = (z[f"e{e}_{k}"] for k in ("op", "file", "bytes"))
            moved = (op == (1 if e == 0 else 0)) & (nb > 0)
            mine[r] = (set(fl[moved].tolist()), int(nb[moved].sum()))
    for r in range(n):
        assert read[r] == wrote[(r + 1) % n]
        assert not read[r][0] & wrote[r][0]


def test_writes_in_the_reads_order_within_shuffled_windows(tmp_path):
    """IOR's -z on a shared file of 4 segments, 4 ranks: reader.shuffle_window 32 reads each
    rank's 8 positions of every window in one shuffled order, and io.write_order=read writes
    them in that order too (the writes and reads of IOR follow one list)."""
    args = ["workload=default", "dataset.format=raw", "dataset.num_files_train=1",
            "dataset.num_samples_per_file=128", "dataset.record_length=4096",
            "io.layout=shared", "io.interface=posix", "io.write_first=true",
            "io.write_order=read", "reader.sample_shuffle=seed", "reader.shuffle_window=32",
            "reader.batch_size=1", "reader.read_threads=0", "reader.transfer_size=4096",
            "train.epochs=1", "train.computation_time=0", "io.keep_oplog=true",
            "workflow.generate_data=false", f"dataset.data_folder={tmp_path}/d",
            f"output.folder={tmp_path}/o"]
    run_mpi(4, "run_cli.py", "run", *args[1:], timeout=240)
    everyone = []
    for r in range(4):
        z = load_npz(tmp_path / "o" / "latest" / f"oplog_rank{r:05d}.npz")
        names = z["phases"].tolist()
        order = {}
        for i, name in enumerate(names):
            op, off = z[f"e{i}_op"], z[f"e{i}_offset"]
            mine = (op <= 1) & (off >= 0)
            order[name] = (off[mine] // 4096).tolist()
        assert order["write"] == order["train0"] and len(order["write"]) == 32
        parts = np.array(order["write"]).reshape(4, 8)
        assert (parts // 32 == np.arange(4)[:, None]).all()
        assert ((parts % 32) == (parts[0] % 32)).all()
        everyone += order["write"]
    assert sorted(everyone) == list(range(128))

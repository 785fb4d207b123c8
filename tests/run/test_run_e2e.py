"""End-to-end runs under mpiexec: every sample read exactly once per epoch (from the op logs of
all ranks), bytes moved equal to the samples read, steps equal on all ranks, outputs written."""
import csv

import numpy as np
import pytest

from datautil import load_npz, own_summary
from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

SPF, REC = 8, 65536


def load_oplogs(out, ranks, epochs):
    per_epoch = [[] for _ in range(epochs)]
    for r in range(ranks):
        z = load_npz(out / "latest" / f"oplog_rank{r:05d}.npz")
        for e in range(epochs):
            per_epoch[e].append({k: z[f"e{e}_{k}"] for k in ("op", "file", "offset", "bytes",
                                                             "iface")})
    return per_epoch


@pytest.mark.parametrize("n,interface,threads", [
    (1, "posix", 0), (2, "posix", 0), (3, "posix", 0), (4, "posix", 0), (2, "posix", 4),
    (3, "posix_direct", 2), (2, "posix_direct", 0), (3, "stdio", 0), (2, "mmap", 1),
    (3, "mpiio", 0), (4, "mpiio_coll", 0), (2, "io_uring", 0), (3, "io_uring", 2)])
def test_every_sample_once_per_epoch(tmp_path, n, interface, threads):
    data, out = tmp_path / "data", tmp_path / "out"
    files, epochs, batch = 13, 2, 3
    layout = "shared" if interface == "mpiio_coll" else "multi"
    if layout == "shared":
        files = 1
        spf = 13 * SPF
    else:
        spf = SPF
    p = run_mpi(n, "run_cli.py", "run", f"dataset.data_folder={data}", f"output.folder={out}",
                f"dataset.num_files_train={files}", f"dataset.num_samples_per_file={spf}",
                f"dataset.record_length={REC}", f"reader.batch_size={batch}",
                f"train.epochs={epochs}", "train.computation_time=0", "reader.transfer_size=0",
                f"io.interface={interface}", f"io.layout={layout}", "io.keep_oplog=true",
                f"reader.read_threads={threads}", "reader.prefetch_size=2",
                timeout=180)
    s = own_summary(out)
    total = files * spf
    steps = total // (n * batch)
    assert s["steps_per_epoch"] == steps
    assert s["samples_dropped_per_epoch"] == total - steps * n * batch
    assert s["samples_padded_per_epoch"] == 0
    assert f"({total - steps * n * batch} samples dropped per epoch)" in p.stdout
    assert "train_au_mean_percentage" in p.stdout
    assert s["bytes_moved"] == epochs * steps * n * batch * REC
    for e, logs in enumerate(load_oplogs(out, n, epochs)):
        assert s["epochs"][e]["samples"] == steps * n * batch
        seen = []
        for log in logs:
            reads = log["op"] == 0
            if interface == "mpiio_coll":
                # one collective call per file a step touches: bytes are the union moved
                assert (log["iface"][reads] == 5).all()
                continue
            assert (log["bytes"][reads] == REC).all()
            seen.append(log["file"][reads].astype(np.int64) * spf + log["offset"][reads] // REC)
        if interface == "mpiio_coll":
            moved = sum(int(log["bytes"][log["op"] == 0].sum()) for log in logs)
            assert moved == steps * n * batch * REC
            continue
        seen = np.concatenate(seen)
        assert seen.size == steps * n * batch
        assert np.unique(seen).size == seen.size          # none read twice
        if steps * n * batch == total:
            assert set(seen.tolist()) == set(range(total))
    rows = list(csv.DictReader((out / "latest" / "per_rank.csv").read_text().splitlines()))
    assert sorted(int(r["rank"]) for r in rows) == list(range(n))
    s = own_summary(out)
    assert max(float(r["first_batch_s"]) for r in rows) == pytest.approx(
        s["startup"]["first_batch_s_max"], abs=1e-5)
    assert all(0 < float(r["first_batch_cpu_s"]) <= float(r["first_batch_s"]) * 2 + 1
               for r in rows)
    assert all(abs(float(r["first_batch_unix_s"]) - s["started"]) < 60 for r in rows)
    assert int(rows[0]["train1_bytes_moved"]) > 0


def test_bad_key_is_one_line_and_exit_2(tmp_path):
    p = run_mpi(2, "run_cli.py", "run", f"dataset.data_folder={tmp_path}/d",
                f"output.folder={tmp_path}/o", "dataset.num_files_trian=3", check=False,
                timeout=60)
    assert p.returncode == 2
    lines = [l for l in p.stdout.splitlines() if "dlio_mpi" in l]
    assert len(lines) == 1, p.stdout          # said once for the job, not once per rank
    assert "unknown key dataset.num_files_trian (did you mean " \
           "dataset.num_files_train?)" in lines[0], p.stdout


def test_batch_larger_than_a_ranks_share(tmp_path):
    p = run_mpi(2, "run_cli.py", "run", f"dataset.data_folder={tmp_path}/d",
                f"output.folder={tmp_path}/o", "dataset.num_files_train=1",
                "dataset.num_samples_per_file=2", "reader.batch_size=2", check=False,
                timeout=60)
    assert p.returncode == 2
    assert "reader.batch_size=2 is larger than a rank's share of the dataset (1 samples" \
        in p.stdout


def run_small(tmp_path, n, *extra):
    data, out = tmp_path / "data", tmp_path / "out"
    run_mpi(n, "run_cli.py", "run", f"dataset.data_folder={data}", f"output.folder={out}",
            f"dataset.record_length={REC}", "train.computation_time=0", "io.keep_oplog=true",
            *extra, timeout=180)
    return own_summary(out), out


def test_replicated_file_read_whole_into_memory_by_every_rank(tmp_path):
    """CANDLE's pattern: one shared file every rank reads whole at start, in transfer-size
    pieces; no reads during the epochs."""
    n, spf = 3, 20
    s, out = run_small(tmp_path, n, "dataset.num_files_train=1",
                       f"dataset.num_samples_per_file={spf}", "reader.batch_size=4",
                       "reader.transfer_size=256k", "io.layout=replicated",
                       "io.read_type=memory", "train.epochs=2", "reader.read_threads=0")
    size = spf * REC
    assert s["load"]["bytes_moved"] == n * size
    assert s["bytes_moved"] == n * size
    assert s["steps_per_epoch"] == spf // 4
    for e in s["epochs"]:
        assert e["bytes_moved"] == 0 and e["samples"] == n * (spf // 4) * 4
    for r in range(n):
        z = load_npz(out / "latest" / f"oplog_rank{r:05d}.npz")
        reads = z["e0_op"] == 0
        assert z["e0_offset"][reads].tolist() == list(range(0, size, 256 * 1024))
        assert int(z["e0_bytes"][reads].sum()) == size
        assert (z["e1_op"] != 0).all() and (z["e2_op"] != 0).all()


def test_shared_file_padded_remainder(tmp_path):
    """One shared file read in parts; 3 ranks x batch 2 over 20 samples: 4 steps, 4 samples
    read twice to fill the last step."""
    n, spf = 3, 20
    data, out = tmp_path / "data", tmp_path / "out"
    p = run_mpi(n, "run_cli.py", "run", f"dataset.data_folder={data}", f"output.folder={out}",
                f"dataset.record_length={REC}", "train.computation_time=0", "io.keep_oplog=true",
                "dataset.num_files_train=1", f"dataset.num_samples_per_file={spf}",
                "reader.batch_size=2", "io.layout=shared", "io.remainder=pad", "train.epochs=1",
                "reader.sample_shuffle=seed", timeout=180)
    s = own_summary(out)
    assert s["steps_per_epoch"] == 4
    assert s["samples_dropped_per_epoch"] == 0 and s["samples_padded_per_epoch"] == 4
    assert "ranks 3, 1 epochs of 4 steps (4 samples padded per epoch)" in p.stdout
    assert "dropped" not in p.stdout
    seen = []
    for r in range(n):
        z = load_npz(out / "latest" / f"oplog_rank{r:05d}.npz")
        reads = z["e0_op"] == 0
        seen.append(z["e0_offset"][reads] // REC)
    seen = np.concatenate(seen)
    assert seen.size == 24 and set(seen.tolist()) == set(range(20))
    assert np.bincount(seen, minlength=20).max() == 2


@pytest.mark.parametrize("damage", ["missing", "truncated", "cut_later"])
def test_damaged_dataset_ends_the_job_with_one_line(tmp_path, damage):
    """A missing file, or one cut short, ends the job with one line naming rank and file; cut
    in its second sample, file 5 is read at rank 2's third step (the C step loop's): the line
    says what the batch wanted of it from which offset, and what it got."""
    data, out = tmp_path / "data", tmp_path / "out"
    args = ["run", f"dataset.data_folder={data}", f"output.folder={out}",
            "dataset.num_files_train=6", "dataset.num_samples_per_file=4",
            f"dataset.record_length={REC}", "reader.batch_size=2", "train.epochs=1",
            "reader.sample_shuffle=off", "train.computation_time=0"]
    run_mpi(3, "run_cli.py", *args, timeout=120)
    victim = data / "train" / f"img_000000{5 if damage == 'cut_later' else 4}_of_6.bin"
    if damage == "missing":
        victim.unlink()
    else:
        with open(victim, "r+b") as f:
            f.truncate(REC + 100)
    (out / "latest" / "summary.json").unlink()
    p = run_mpi(3, "run_cli.py", *args, check=False, timeout=60)
    assert p.returncode != 0
    errs = [l for l in p.stdout.splitlines() if l.startswith("dlio_mpi: rank")]
    assert errs, p.stdout
    # files 4 and 5 hold samples 16..23: rank 2's share without shuffling
    assert errs[0].startswith("dlio_mpi: rank 2: ") and victim.name in errs[0]
    assert ("cannot open" in errs[0]) if damage == "missing" else \
        ("unexpected end of file" in errs[0])
    if damage == "cut_later":
        assert errs[0].endswith(f"wanted {2 * REC} bytes from offset 0, got {REC + 100}"), errs
    assert not (out / "latest" / "summary.json").exists()


def test_summary_histograms_and_facts(tmp_path):
    n = 2
    s, _ = run_small(tmp_path, n, "dataset.num_files_train=4", "dataset.num_samples_per_file=4",
                     "reader.batch_size=2", "train.epochs=2", "reader.read_threads=0",
                     "reader.transfer_size=16k")
    steps = 16 // (n * 2)
    for e in s["epochs"]:
        # every step of every rank in the step histogram, every 16 KiB read in the latency one
        assert sum(e["step_io_wait_hist"]) == n * steps
        assert sum(e["latency_hist_read"]) == e["read_ops"] == 16 * (REC // 16384)
        assert e["bytes_moved"] == 16 * REC
    assert len(s["histogram_bucket_lower_ns"]) == len(s["epochs"][0]["latency_hist_read"])
    f = s["facts"]
    assert f["ranks"] == n and f["hosts"] == 1 and f["dataset_bytes"] == 16 * REC
    assert any("fits in the memory" in w for w in f["warnings"])


def test_evaluation_phases(tmp_path):
    n = 2
    s, out = run_small(tmp_path, n, "dataset.num_files_train=4", "dataset.num_files_eval=3",
                       "dataset.num_samples_per_file=4", "reader.batch_size=2",
                       "reader.batch_size_eval=3", "train.epochs=2", "workflow.evaluation=true",
                       "evaluation.epochs_between_evals=1", "evaluation.eval_time=0.001")
    assert len(s["evaluations"]) == 2 and len(s["epochs"]) == 2
    eval_steps = 12 // (n * 3)
    for e in s["evaluations"]:
        assert e["samples"] == eval_steps * n * 3
        assert e["bytes_moved"] == eval_steps * n * 3 * REC
    z = load_npz(out / "latest" / "oplog_rank00000.npz")
    assert z["phases"].tolist() == ["train0", "eval0", "train1", "eval1"]
    ev = z["e1_file"][z["e1_op"] == 0]
    tr = z["e0_file"][z["e0_op"] == 0]
    assert (ev >= 4).all() and (tr < 4).all()
    assert sorted((tmp_path / "data" / "valid").iterdir())


def test_evaluations_follow_the_dlio_benchmarks_schedule(tmp_path):
    """The first evaluation after evaluation.eval_after_epoch, then every
    epochs_between_evals epochs: after epochs 2 and 4 of 5 for 2 and 2 (the DLIO
    benchmark's schedule)."""
    s, out = run_small(tmp_path, 1, "dataset.num_files_train=2", "dataset.num_files_eval=1",
                       "dataset.num_samples_per_file=2", "train.epochs=5",
                       "workflow.evaluation=true", "evaluation.eval_after_epoch=2",
                       "evaluation.epochs_between_evals=2")
    assert len(s["evaluations"]) == 2 and len(s["epochs"]) == 5
    z = load_npz(out / "latest" / "oplog_rank00000.npz")
    assert z["phases"].tolist() == ["train0", "train1", "eval1", "train2", "train3", "eval3",
                                    "train4"]


def test_total_training_steps_caps_each_epoch(tmp_path):
    """train.total_training_steps counts the steps of each epoch, as the DLIO benchmark's step
    count starts again with every epoch: 3 of the 8 steps in each of 2 epochs."""
    s, out = run_small(tmp_path, 1, "dataset.num_files_train=8", "dataset.num_samples_per_file=4",
                       "reader.batch_size=4", "train.epochs=2", "train.total_training_steps=3",
                       "reader.sample_shuffle=off")
    assert [e["steps"] for e in s["epochs"]] == [3, 3]
    z = load_npz(out / "latest" / "oplog_rank00000.npz")
    for e in (0, 1):
        reads = z[f"e{e}_op"] == 0
        assert int(z[f"e{e}_bytes"][reads].sum()) == 3 * 4 * REC


@pytest.mark.parametrize("threads", [0, 2])
def test_preprocessing_time_is_spent(tmp_path, threads):
    """A lower bound only (sleeps are never shorter): each rank spends at least its samples
    times preprocess_time, spread over its read threads."""
    pre = 0.01
    s, _ = run_small(tmp_path, 2, "dataset.num_files_train=4", "dataset.num_samples_per_file=4",
                     "reader.batch_size=2", "train.epochs=1", f"reader.read_threads={threads}",
                     f"reader.preprocess_time={pre}")
    per_rank = 8
    assert s["epochs"][0]["duration_s"] >= per_rank * pre / max(threads, 1)


def test_more_files_than_the_open_file_limit(tmp_path):
    """A rank's share of more files than its process may keep open: files are closed least
    recently used first (at most Reader.MAX_OPEN open), and every sample is still read once
    per epoch, shuffled across all files."""
    from dlio_mpi.readers.reader import Reader

    data, out = tmp_path / "data", tmp_path / "out"
    files, epochs = 600, 2
    common = [f"dataset.data_folder={data}", "dataset.format=npy", f"dataset.num_files_train={files}",
              "dataset.num_samples_per_file=1", "dataset.record_length=4k",
              "reader.batch_size=4", "train.computation_time=0", "reader.transfer_size=0"]
    run_mpi(2, "run_cli.py", "generate", *common, f"output.folder={out}", timeout=180)
    limit = 400                             # MAX_OPEN and room for MPI's and Python's own
    assert Reader.MAX_OPEN + 100 < limit < files
    run_mpi(1, "run_cli.py", "run", *common, f"output.folder={out}", f"train.epochs={epochs}",
            "reader.sample_shuffle=seed", "io.keep_oplog=true", "reader.read_threads=0",
            timeout=180, wrap=["prlimit", f"--nofile={limit}:{limit}"])
    logs = [log for (log,) in load_oplogs(out, 1, epochs)]
    for e, log in enumerate(logs):
        reads = log["op"] == 0
        assert sorted(log["file"][reads].tolist()) == list(range(files)), e
    # files open at any time (opens minus closes, over the whole run) never exceed the bound,
    # and files were closed and opened again
    ops = np.concatenate([log["op"] for log in logs])
    is_open = np.cumsum(np.where(ops == 2, 1, np.where(ops == 3, -1, 0)))
    assert is_open.max() == Reader.MAX_OPEN
    assert (ops == 2).sum() > files
    s = own_summary(out)
    assert s["bytes_moved"] == epochs * files * 4096


def test_mpiio_coll_reads_in_transfer_size_pieces(tmp_path):
    """io.interface=mpiio_coll honours reader.transfer_size: each collective call moves one
    piece of at most transfer_size bytes per rank, every rank makes the same number of calls
    each step (ranks with fewer pieces join with none), and the pieces of all ranks cover the
    samples read, each byte once, none crossing a sample's end."""
    from dlio_mpi.config import loader as config
    from dlio_mpi.data.dataset import Dataset
    data, out = tmp_path / "data", tmp_path / "out"
    xfer, n = 40000, 3
    args = [f"dataset.data_folder={data}", "dataset.format=raw", "dataset.num_files_train=1",
            "dataset.num_samples_per_file=30", "dataset.record_length=100000",
            "dataset.record_length_stdev=30000", "reader.batch_size=2", "train.epochs=1",
            "train.computation_time=0", f"reader.transfer_size={xfer}",
            "io.interface=mpiio_coll", "io.layout=shared", "io.keep_oplog=true"]
    run_mpi(n, "run_cli.py", "run", *args, f"output.folder={out}", timeout=180)
    s = own_summary(out)
    logs = load_oplogs(out, n, 1)[0]
    calls = [int((log["op"] == 0).sum()) for log in logs]
    assert len(set(calls)) == 1, calls                # the same collective calls on every rank
    pieces = np.concatenate([np.stack([log["offset"], log["bytes"]], 1)[
        (log["op"] == 0) & (log["bytes"] > 0)] for log in logs])
    assert (pieces[:, 1] <= xfer).all() and pieces[:, 1].sum() == s["bytes_moved"]
    pieces = pieces[np.argsort(pieces[:, 0])]
    assert (pieces[1:, 0] >= pieces[:-1, 0] + pieces[:-1, 1]).all()      # no byte twice
    cfg = config.load(["workload=default"] + args)
    idx = Dataset(cfg).index(0)
    ends = idx.offsets + idx.lengths
    which = np.searchsorted(ends, pieces[:, 0], side="right")   # the sample a piece starts in
    assert (pieces[:, 0] + pieces[:, 1] <= ends[which]).all()
    # each sample read is read whole: its pieces add up to its length
    got = np.bincount(which, weights=pieces[:, 1], minlength=len(ends))
    read = got > 0
    assert (got[read] == idx.lengths[read]).all()
    assert read.sum() == s["epochs"][0]["samples"]


def test_read_threads_beyond_the_ranks_cpus_are_named(tmp_path):
    """A rank bound to one core with 4 read threads: the run says so (and what to do), and the
    summary records the CPUs per rank; 1 read thread on that core is not warned about."""
    from mpirun import bind_to_core
    common = [f"dataset.data_folder={tmp_path}/d", "dataset.num_files_train=4",
              "dataset.num_samples_per_file=2", "reader.batch_size=2", "train.epochs=1"]
    for threads, warned in ((4, True), (1, False)):
        out = tmp_path / f"o{threads}"
        p = run_mpi(1, "run_cli.py", "run", *common, f"output.folder={out}",
                    f"reader.read_threads={threads}", launcher_args=bind_to_core(), timeout=120)
        s = own_summary(out)
        assert s["facts"]["cpus_per_rank_min"] == 1
        lines = [w for w in s["facts"]["warnings"] if "reader.read_threads" in w]
        assert bool(lines) == warned, s["facts"]["warnings"]
        assert ("reader.read_threads=4 on 1 CPU per rank" in p.stdout) == warned

"""Read-ahead threads on every interface that is not collective: STDIO, independent MPI-IO and
HDF5 through the MPI-IO driver, at 1, 2 and 4 ranks.

- engines: requests through the threads give the reference engines' bytes and the op log the
  engine's own reads (tests/mpi/check_readahead.py);
- runs: with reader.read_threads=3 every sample is read exactly once per epoch, and each rank's
  op log holds the same reads (count, file, offset, bytes) as the same run without read
  threads; the summary counts the threads and does not list them as not emulated;
- collective interfaces keep their reads on the rank's main thread, and say so."""

import pytest

from datautil import load_npz, own_summary
from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

REC = 16384


@pytest.mark.parametrize("n", [1, 2, 4])
def test_engines_read_ahead_under_mpiexec(tmp_path, n):
    p = run_mpi(n, "check_readahead.py", tmp_path, timeout=180)
    for r in range(n):
        assert f"rank {r}: ok" in p.stdout, p.stdout[-3000:]


def reads(out, ranks, epochs):
    """Per epoch, per rank: the (file, offset, bytes) of every read, sorted."""
    per = []
    for e in range(epochs):
        ranks_reads = []
        for r in range(ranks):
            z = load_npz(out / "latest" / f"oplog_rank{r:05d}.npz")
            op, f, o, b = (z[f"e{e}_{k}"] for k in ("op", "file", "offset", "bytes"))
            m = op == 0
            ranks_reads.append(sorted(zip(f[m].tolist(), o[m].tolist(), b[m].tolist())))
        per.append(ranks_reads)
    return per


CASES = {   # interface, layout, format, files, samples per file
    "stdio": ("stdio", "multi", "raw", 13, 8),
    "mpiio": ("mpiio", "multi", "raw", 13, 8),
    "mpiio-shared": ("mpiio", "shared", "raw", 1, 104),
    # one sample per file: each H5Dread of the op log is one sample
    "hdf5": ("hdf5", "multi", "hdf5", 48, 1),
}


@pytest.mark.parametrize("n", [1, 2, 4])
@pytest.mark.parametrize("case", sorted(CASES))
def test_runs_read_ahead_as_the_main_thread_reads(tmp_path, case, n):
    interface, layout, fmt, files, spf = CASES[case]
    data = tmp_path / "data"
    epochs, batch = 2, 3
    args = [f"dataset.data_folder={data}", f"dataset.num_files_train={files}",
            f"dataset.num_samples_per_file={spf}", f"dataset.record_length={REC}",
            f"dataset.format={fmt}", f"reader.batch_size={batch}", f"train.epochs={epochs}",
            "train.computation_time=0.001", "reader.transfer_size=4k",
            f"io.interface={interface}", f"io.layout={layout}", "io.keep_oplog=true",
            "reader.prefetch_size=2", "reader.sample_shuffle=seed", "reader.file_shuffle=seed"]
    got = {}
    for threads in (0, 3):
        out = tmp_path / f"out{threads}"
        run_mpi(n, "run_cli.py", "run", *args, f"output.folder={out}",
                f"reader.read_threads={threads}", timeout=180)
        got[threads] = (own_summary(out),
                        reads(out, n, epochs))
    s, ahead = got[3]
    assert s["read_threads"] == 3
    assert not any("read_threads" in x for x in s["not_emulated"]), s["not_emulated"]
    assert got[0][1] == ahead               # the same reads, rank by rank, epoch by epoch
    total = files * spf
    steps = total // (n * batch)
    assert s["bytes_moved"] == epochs * steps * n * batch * REC
    for e in range(epochs):
        if fmt == "hdf5":       # a read is an H5Dread of one row
            seen = [f * spf + o // REC for rr in ahead[e] for f, o, b in rr if b == REC]
            assert sum(len(rr) for rr in ahead[e]) == len(seen)
        else:                   # a sample is transfers of 4 KiB
            seen = [(f, o - o % REC) for rr in ahead[e] for f, o, b in rr]
            assert all(b == 4096 for rr in ahead[e] for _, _, b in rr)
            assert len(seen) == steps * n * batch * (REC // 4096)
            seen = list(set(seen))
        assert len(seen) == steps * n * batch == len(set(seen))     # each sample once


@pytest.mark.parametrize("interface", ["mpiio_coll", "hdf5_coll"])
def test_collective_reads_stay_on_the_main_thread(interface):
    from dlio_mpi.config import loader as config
    from dlio_mpi.readers import prefetch

    cfg = config.load([f"io.interface={interface}", "io.layout=shared", "reader.read_threads=2"]
                      + (["dataset.format=hdf5"] if interface == "hdf5_coll" else []))
    assert prefetch.read_ahead_threads(cfg) == 0
    assert "every rank must enter each collective call in the same order" in \
        prefetch.read_ahead_off(cfg)


@pytest.mark.parametrize("interface,fmt", [("mpiio", "raw"), ("hdf5", "hdf5")])
def test_mpi_below_thread_multiple_keeps_reads_on_the_main_thread(tmp_path, interface, fmt):
    """MPI initialized at MPI_THREAD_SERIALIZED (mpi4py's MPI4PY_RC_THREAD_LEVEL): MPI-IO reads
    stay on the rank's main thread, the run completes, and the summary says why."""
    out = tmp_path / "out"
    run_mpi(2, "run_cli.py", "run", f"dataset.data_folder={tmp_path}/data",
            f"output.folder={out}", "dataset.num_files_train=8",
            "dataset.num_samples_per_file=4", f"dataset.record_length={REC}",
            f"dataset.format={fmt}", "reader.batch_size=2", "train.epochs=1",
            "train.computation_time=0", f"io.interface={interface}", "reader.read_threads=2",
            timeout=180, env={"MPI4PY_RC_THREAD_LEVEL": "serialized"})
    s = own_summary(out)
    assert s["read_threads"] == 0
    assert s["bytes_moved"] == 8 * 4 * REC
    why = [x for x in s["not_emulated"] if x.startswith("reader.read_threads")]
    assert len(why) == 1 and "MPI_THREAD_SERIALIZED" in why[0] and \
        "MPI_THREAD_MULTIPLE" in why[0], why

"""Real emulator runs under mpiexec, characterized from their op logs: the characterization
says what the workload asked for (transfer size, files, shared or per-rank files, bytes,
interface)."""

import json
import os

import pytest

import analysis

KIB = 1024
REC = 64 * KIB


def _summary(out):
    with open(out / "summary.json") as f:
        return json.load(f)


def test_per_rank_tfrecord_files_in_64k_reads(emulate):
    """2 ranks, 4 TFRecord files of 4 records, no shuffle: each rank reads its two files in
    order, each record as four 64 KiB reads and its 16-byte tail (length and CRC framing)."""
    out = emulate("dataset.format=tfrecord", "dataset.num_files_train=4",
                  "dataset.num_samples_per_file=4", f"dataset.record_length={REC * 4}",
                  "reader.transfer_size=64k", "reader.batch_size=2", "train.epochs=1",
                  "reader.sample_shuffle=off", "reader.read_threads=1")
    c = analysis.characterize(out)
    posix = c.modules["POSIX"]
    assert c.interfaces == ["POSIX"]
    assert c.totals.bytes_read == _summary(out)["bytes_moved"] == 16 * (4 * REC + 16)
    assert (c.totals.files.total, c.totals.files.shared, c.totals.files.unique) == (4, 0, 4)
    assert c.data_formats == {"tfrecord": {"files": 4, "bytes_read": c.totals.bytes_read,
                                           "bytes_written": 0}}
    assert posix.ops["reads"] == 16 * 5 and posix.ops["opens"] == 4
    assert posix.read_sizes.histogram["10K_100K"] == 16 * 4
    assert posix.read_sizes.histogram["0_100"] == 16
    # per file: 20 reads, all consecutive but the first (at offset 0)
    assert posix.sequential_read_pct == posix.consecutive_read_pct == 100 * 19 / 20
    trace = c.dxt["DXT_POSIX"]
    assert (trace.read_sizes.median, trace.read_sizes.max, trace.read_sizes.min) == (REC, REC, 16)
    assert [s.bytes_read for s in trace.timeline] == [8 * (4 * REC + 16)] * 2
    assert posix.rank_balance.min_bytes == posix.rank_balance.max_bytes


def test_one_shared_file_through_independent_mpiio(emulate):
    out = emulate("io.interface=mpiio", "io.layout=shared", "dataset.num_files_train=1",
                  "dataset.num_samples_per_file=16", f"dataset.record_length={REC}",
                  "reader.transfer_size=16k", "reader.batch_size=2", "train.epochs=1")
    c = analysis.characterize(out)
    assert c.interfaces == ["POSIX", "MPI-IO independent"]
    assert (c.totals.files.total, c.totals.files.shared) == (1, 1)
    assert c.totals.bytes_read == _summary(out)["bytes_moved"] == 16 * REC
    mpiio = c.modules["MPI-IO"]
    assert mpiio.ops["independent_reads"] == 16 * 4 and mpiio.ops["collective_reads"] == 0
    assert mpiio.bytes_read == 16 * REC
    assert c.dxt["DXT_MPIIO"].read_sizes.max == 16 * KIB
    assert c.dxt["DXT_POSIX"].read_sizes.min == 16 * KIB


def test_collective_mpiio_reads_one_call_per_step(emulate):
    out = emulate("io.interface=mpiio_coll", "io.layout=shared", "dataset.num_files_train=1",
                  "dataset.num_samples_per_file=16", f"dataset.record_length={REC}",
                  "reader.batch_size=2", "train.epochs=1")
    c = analysis.characterize(out)
    assert c.interfaces == ["POSIX", "MPI-IO collective"]
    steps = 16 // (2 * 2)
    mpiio = c.modules["MPI-IO"]
    assert mpiio.ops["collective_reads"] == 2 * steps and mpiio.ops["independent_reads"] == 0
    assert mpiio.ops["opens"] == 2
    assert c.totals.bytes_read == mpiio.bytes_read == _summary(out)["bytes_moved"] == 16 * REC


def test_hdf5_shared_file_through_sec2(emulate):
    out = emulate("dataset.format=hdf5", "io.interface=hdf5_sec2", "io.layout=shared",
                  "dataset.num_files_train=1", "dataset.num_samples_per_file=16",
                  f"dataset.record_length={REC}", "reader.batch_size=1", "train.epochs=1",
                  "reader.read_threads=0")
    c = analysis.characterize(out)
    assert c.interfaces == ["POSIX", "HDF5"]
    assert c.modules["H5D"].ops["reads"] == 16 and c.modules["H5F"].ops["opens"] == 2
    assert c.modules["H5D"].bytes_read == c.totals.bytes_read == _summary(out)["bytes_moved"]
    assert c.data_formats["hdf5"]["files"] == 1


def test_stdio_npy_files(emulate):
    out = emulate("dataset.format=npy", "io.interface=stdio", "dataset.num_files_train=2",
                  "dataset.num_samples_per_file=4", f"dataset.record_length={REC}",
                  "reader.transfer_size=16k", "reader.batch_size=2", "train.epochs=1",
                  "reader.sample_shuffle=off")
    c = analysis.characterize(out)
    assert c.interfaces == ["STDIO"] and c.totals.basis == ["STDIO"]
    assert c.totals.bytes_read == _summary(out)["bytes_moved"] == 8 * REC
    assert c.modules["STDIO"].ops["reads"] == 8 * 4
    assert c.dxt["DXT_STDIO"].read_sizes.median == 16 * KIB
    assert set(c.data_formats) == {"npy"}
    assert c.totals.files.unique == 2


def test_run_directory_with_the_logs_of_a_darshan_run_is_read_from_its_op_logs(
        emulate, tmp_path):
    out = emulate("dataset.format=tfrecord", "dataset.num_files_train=4",
                  "dataset.num_samples_per_file=4", f"dataset.record_length={REC * 4}",
                  "reader.transfer_size=64k", "reader.batch_size=2", "train.epochs=1",
                  "reader.sample_shuffle=off", "reader.read_threads=1")
    assert os.path.isfile(out / "per_rank.csv")
    assert analysis.characterize(out).logs == [str(out / "oplog_rank00000.npz"),
                                               str(out / "oplog_rank00001.npz")]


@pytest.mark.skipif("DLIO_MPI_DARSHAN_LIB" not in os.environ,
                    reason="needs a Darshan runtime: set DLIO_MPI_DARSHAN_LIB")
def test_op_log_counters_equal_darshans_on_the_same_run(tmp_path):
    """Run under Darshan, keep the op logs: the POSIX counters of the data files, summed over
    ranks (Darshan reduces a file every rank opened), are the same numbers."""
    from mpirun import run_mpi

    out = tmp_path / "out"
    run_mpi(2, "run_cli.py", "run", "--darshan", f"dataset.data_folder={tmp_path / 'data'}",
            f"output.folder={out}", "io.keep_oplog=true", "dataset.format=tfrecord",
            "reader.transfer_size=64k", "dataset.num_files_train=4",
            "dataset.num_samples_per_file=4", "reader.batch_size=2", "train.epochs=1",
            "train.computation_time=0", "reader.sample_shuffle=seed", "reader.read_threads=1",
            timeout=180)
    darshan = analysis.load(out / "dlio_mpi.darshan")
    ours = analysis.load_job(out)
    counters = ["POSIX_READS", "POSIX_BYTES_READ", "POSIX_SEQ_READS", "POSIX_CONSEC_READS",
                "POSIX_SIZE_READ_0_100", "POSIX_SIZE_READ_10K_100K", "POSIX_SIZE_READ_100K_1M"]

    def per_file(job):
        frame = job.records["POSIX"]
        frame = frame.assign(name=[job.names[i] for i in frame["id"]])
        frame = frame[frame["name"].str.contains("/train/") & (frame["POSIX_READS"] > 0)]
        return frame.groupby("name")[counters].sum().sort_index()

    assert per_file(ours).to_dict() == per_file(darshan).to_dict()

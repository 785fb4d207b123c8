"""Real emulator runs under mpiexec, characterized from their op logs: the characterization
says what the workload asked for (transfer size, files, shared or per-rank files, bytes,
interface)."""

import json
import os

import pytest

import dlio_mpi_analysis as analysis
pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

KIB = 1024
REC = 64 * KIB


def _summary(out):
    with open(out / "latest" / "summary.json") as f:
        return json.load(f)["dlio_mpi"]


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
                                           "bytes_written": 0, "shared_files": 0}}
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
    # the op log sees the collective calls, not the aggregators' POSIX reads beneath them
    assert c.interfaces == ["MPI-IO collective"] and c.totals.basis == ["MPI-IO"]
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
    # POSIX: the preads libhdf5 made (the logging driver), the file's metadata included
    assert c.totals.bytes_read == c.modules["POSIX"].bytes_read == _summary(out)["bytes_moved"]
    assert 0 < c.totals.bytes_read - c.modules["H5D"].bytes_read < 64 * 1024
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
    assert os.path.isfile(out / "latest" / "per_rank.csv")
    assert analysis.characterize(out).logs == [str(out / "latest" / "oplog_rank00000.npz"),
                                               str(out / "latest" / "oplog_rank00001.npz")]


DARSHAN_CASES = {
    "tfrecord-sample": ["dataset.format=tfrecord", "reader.transfer_size=64k",
                        "reader.sample_shuffle=seed", "reader.read_threads=1"],
    "tfrecord-stream": ["dataset.format=tfrecord", "reader.access=stream",
                        "reader.transfer_size=64k", "reader.sample_shuffle=seed",
                        "reader.shuffle_size=3", "reader.read_threads=2"],
    "npz-numpy": ["dataset.format=npz", "reader.access=numpy", "reader.read_threads=0",
                  "reader.sample_shuffle=seed"],
    "npz-sample": ["dataset.format=npz", "reader.read_threads=1",
                   "reader.sample_shuffle=seed"],      # its index reads logged too
    "raw-image": ["dataset.format=raw", "reader.access=image", "dataset.num_samples_per_file=1",
                  "reader.transfer_size=64k", "reader.read_threads=0"],
    "hdf5-sec2-chunked": ["dataset.format=hdf5", "io.interface=hdf5_sec2",
                          "dataset.enable_chunking=true", "dataset.chunk_size=16k",
                          "reader.read_threads=0", "reader.sample_shuffle=seed"],
    "hdf5-volumes": ["dataset.format=hdf5", "io.interface=hdf5_sec2", "io.layout=shared",
                     "dataset.num_files_train=1", "dataset.num_samples_per_file=8",
                     "dataset.volume_shape=[48,48,48]", "dataset.crop_shape=[17,17,17]",
                     "dataset.volumes=[{name: labels, dtype: int64, chunks: [9, 11, 11], "
                     "compression: gzip, fill: 0.03}, {name: raw, dtype: uint8, chunks: "
                     "[11, 11, 22], compression: gzip, fill: 0.8, file: raw}]",
                     "reader.read_threads=0", "reader.sample_shuffle=random"],
    "npz-shot": ["dataset.format=npz", "dataset.npz_layout=shot", "reader.access=numpy",
                 "dataset.num_samples_per_file=1", "reader.buffer_size=4194304",
                 "reader.read_threads=0", "reader.batch_size=1"],
    "csv-at-start": ["dataset.format=csv", "io.layout=replicated", "io.read_type=memory",
                     "dataset.num_files_train=1", "reader.transfer_size=64k",
                     "reader.read_threads=0"],
}


@pytest.mark.skipif("DLIO_MPI_DARSHAN_LIB" not in os.environ,
                    reason="needs a Darshan runtime: set DLIO_MPI_DARSHAN_LIB")
@pytest.mark.parametrize("case", sorted(DARSHAN_CASES))
def test_op_log_counters_equal_darshans_on_the_same_run(tmp_path, case):
    """Run under Darshan, keep the op logs: the POSIX counters of the data files, summed over
    ranks (Darshan reduces a file every rank opened), are the same numbers, for each access
    pattern (HDF5 through the logging sec2 driver: libhdf5's own reads)."""
    from mpirun import run_mpi

    out = tmp_path / "out"
    common = [f"dataset.data_folder={tmp_path / 'data'}", "dataset.num_files_train=4",
              "dataset.num_samples_per_file=4", f"dataset.record_length={REC * 4}",
              "reader.batch_size=2", "train.epochs=1", "train.computation_time=0",
              *DARSHAN_CASES[case]]
    # the dataset first, without Darshan: the log then holds the training run alone
    run_mpi(2, "run_cli.py", "generate", *common, timeout=300)
    run_mpi(2, "run_cli.py", "run", "--darshan", f"output.folder={out}", "io.keep_oplog=true",
            *common, timeout=300)
    darshan = analysis.load(out / "dlio_mpi.run.darshan")
    ours = analysis.load_job(out)
    counters = ["POSIX_OPENS", "POSIX_READS", "POSIX_BYTES_READ", "POSIX_SEQ_READS",
                "POSIX_CONSEC_READS", "POSIX_SIZE_READ_0_100", "POSIX_SIZE_READ_100_1K",
                "POSIX_SIZE_READ_1K_10K", "POSIX_SIZE_READ_10K_100K",
                "POSIX_SIZE_READ_100K_1M"]

    def per_file(job):
        frame = job.records["POSIX"].frame()
        frame = frame.assign(name=[job.names[i] for i in frame["id"]])
        frame = frame[frame["name"].str.contains("/train/") & (frame["POSIX_READS"] > 0)]
        return frame.groupby("name")[counters].sum().sort_index()

    theirs = per_file(darshan)
    files = {"hdf5-volumes": 2, "csv-at-start": 1}.get(case, 4)   # volumes: and a companion
    assert len(theirs) == files, theirs
    assert per_file(ours).to_dict() == theirs.to_dict()


@pytest.mark.skipif("DLIO_MPI_DARSHAN_LIB" not in os.environ,
                    reason="needs a Darshan runtime: set DLIO_MPI_DARSHAN_LIB")
def test_a_shared_hdf5_file_is_opened_through_mpiio_only(tmp_path):
    """hdf5_coll under Darshan: the data file is opened by libhdf5 through MPI-IO once per rank
    and by nothing else (no index open through sec2), so Darshan records it as MPI-IO HDF5."""
    from mpirun import run_mpi

    out = tmp_path / "out"
    common = [f"dataset.data_folder={tmp_path / 'data'}", "dataset.format=hdf5",
              "io.interface=hdf5_coll", "io.layout=shared", "dataset.num_files_train=1",
              "dataset.num_samples_per_file=16", "reader.batch_size=2", "train.epochs=1"]
    run_mpi(2, "run_cli.py", "generate", *common, timeout=300)
    run_mpi(2, "run_cli.py", "run", "--darshan", f"output.folder={out}", *common, timeout=300)
    job = analysis.load(out / "dlio_mpi.run.darshan")
    h5f = job.records["H5F"]
    h5f = h5f[[job.names[i].endswith(".h5") for i in h5f["id"]]]
    assert int(h5f["H5F_USE_MPIIO"].max()) == 1 and int(h5f["H5F_OPENS"].sum()) == 2
    h5d = job.records["H5D"]
    assert int(h5d["H5D_USE_MPIIO_COLLECTIVE"].max()) == 1


SHARED = ["io.layout=shared", "dataset.num_files_train=1", "dataset.num_samples_per_file=128"]
SELF_CASES = {
    "posix": ["io.interface=posix"],
    "posix_direct": ["io.interface=posix_direct"],
    "stdio": ["io.interface=stdio"],
    "mmap": ["io.interface=mmap"],
    "mpiio": ["io.interface=mpiio"],
    "hdf5_sec2": ["io.interface=hdf5_sec2", "dataset.format=hdf5"],
    "mpiio_coll": ["io.interface=mpiio_coll", *SHARED],
    "hdf5": ["io.interface=hdf5", "dataset.format=hdf5"],
    "hdf5_coll": ["io.interface=hdf5_coll", "dataset.format=hdf5", *SHARED],
}
# the layer both sides observed: the op log does not see beneath a collective MPI-IO call nor
# beneath libhdf5's MPI-IO driver (analysis/loading/oplog.py)
SELF_LAYER = {"mpiio_coll": "MPI-IO", "hdf5": "HDF5", "hdf5_coll": "HDF5"}
needs_darshan = pytest.mark.skipif("DLIO_MPI_DARSHAN_LIB" not in os.environ,
                                   reason="needs a Darshan runtime: set DLIO_MPI_DARSHAN_LIB")


@pytest.fixture(scope="module")
def darshan_run(tmp_path_factory):
    """darshan_run(case) -> the output directory of a training run of SELF_CASES[case] under
    Darshan with its op logs kept (2 ranks, 16 files of 8 x 256 KiB or one of 128, 2 epochs;
    the dataset generated before, without Darshan), made once per module."""
    from mpirun import run_mpi

    made = {}

    def run(case):
        if case not in made:
            base = tmp_path_factory.mktemp(case)
            out = base / "out"
            common = [f"dataset.data_folder={base / 'data'}", "dataset.num_files_train=16",
                      "dataset.num_samples_per_file=8", "dataset.record_length=256k",
                      "reader.batch_size=4", "train.epochs=2", "train.computation_time=0.03",
                      *SELF_CASES[case]]
            run_mpi(2, "run_cli.py", "generate", *common, timeout=300)
            run_mpi(2, "run_cli.py", "run", "--darshan", f"output.folder={out}",
                    "io.keep_oplog=true", *common, timeout=300)
            made[case] = out
        return made[case]
    return run


@needs_darshan
@pytest.mark.parametrize("case", sorted(SELF_CASES))
def test_a_run_compared_with_its_own_darshan_log(darshan_run, case):
    """One run under Darshan with its op logs kept: compare of its Darshan log with its op log
    scores at least 0.98. Both cover the same job (MPI_Init to the end), the same files (the
    tools' own left out on both sides: manifest, probe, lock tests), the same reads (mmap
    copies on neither) and the same layer (the lowest the op log observed: MPI-IO for
    collective MPI-IO, HDF5 through libhdf5's MPI-IO driver, else POSIX)."""
    out = darshan_run(case)
    result = analysis.compare([out / "dlio_mpi.run.darshan", out])
    assert result.score >= 0.98, analysis.render_comparison(result)
    assert result.layer == SELF_LAYER.get(case, "POSIX")
    files = 1 if "io.layout=shared" in SELF_CASES[case] else 16
    assert result.row("files") == (files, files)
    darshan, ours = result.row("bytes_read")
    assert darshan == ours == (0 if case == "mmap" else 16 * 8 * 256 * KIB * 2) or \
        case == "hdf5_sec2", result.row("bytes_read")
    if case in SELF_LAYER:      # counted at the same layer: the same calls
        assert result.row("read_ops")[0] == result.row("read_ops")[1]
        assert result.row("read_size_histogram")[0] == result.row("read_size_histogram")[1]


@needs_darshan
@pytest.mark.parametrize("real,emulated", [("hdf5_coll", "mpiio_coll"),
                                           ("mpiio_coll", "hdf5_coll"),
                                           ("hdf5", "hdf5_sec2"), ("mpiio_coll", "posix")])
def test_a_run_of_another_interface_does_not_score_high(darshan_run, real, emulated):
    """The same bytes through another interface, compared at the layer both observed: the
    interfaces seen from that layer differ, and the structure gate keeps the score low."""
    result = analysis.compare([darshan_run(real) / "dlio_mpi.run.darshan", darshan_run(emulated)])
    assert result.score < 0.7, analysis.render_comparison(result)
    assert result.row("structure_gate")[1] < 0.7


CHECKPOINT_LAYER = {"mpiio": "MPI-IO", "hdf5": "HDF5"}


@needs_darshan
@pytest.mark.parametrize("fmt", ["file_per_rank", "four_files", "mpiio", "hdf5"])
def test_a_checkpoint_run_compared_with_its_own_darshan_log(tmp_path, fmt):
    """A checkpoint-only run under Darshan (2 ranks, 2 checkpoints of 64 MiB written with
    fsync, one read back): its op log and its Darshan log score at least 0.98, with the same
    bytes written and read, at the layer the op log observed (MPI-IO for the collective
    writes of mpiio, HDF5 through the MPI-IO driver). The checkpoints are large enough for
    their I/O to outweigh the end of the job that the op log leaves out (from its own writing
    to MPI_Finalize, about 0.1 s), which a run of a fraction of a second would show as a
    different I/O share."""
    from mpirun import run_mpi

    out = tmp_path / "out"
    run_mpi(2, "run_cli.py", "run", "--darshan", f"output.folder={out}", "io.keep_oplog=true",
            f"dataset.data_folder={tmp_path / 'data'}",
            f"checkpoint.checkpoint_folder={tmp_path / 'ck'}", "workflow.train=false",
            "workflow.checkpoint=true", "model.model_size_bytes=64m", "checkpoint.writers=all",
            "checkpoint.num_checkpoints_write=2", "checkpoint.num_checkpoints_read=1",
            "checkpoint.fsync=true", f"checkpoint.format={fmt}", timeout=300)
    result = analysis.compare([out / "dlio_mpi.run.darshan", out])
    assert result.score >= 0.98, analysis.render_comparison(result)
    assert result.layer == CHECKPOINT_LAYER.get(fmt, "POSIX")
    written, read = result.row("bytes_written"), result.row("bytes_read")
    assert written[0] == written[1] > 0 and read[0] == read[1] > 0
    if fmt != "four_files":     # four_files: its data file holds the model, the others less
        assert written[0] == 2 * 64 * 1024 * KIB and read[0] == 64 * 1024 * KIB
    assert result.row("write_ops")[0] == result.row("write_ops")[1]

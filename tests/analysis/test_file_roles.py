"""What is data and what is an interface, on real logs made for it (tests/fixtures/darshan,
truth.json says what each run was): the standard streams, the MPI library's own files and a
framework's configuration, log and output files are apart from the job's data I/O in
characterize, compare and fit alike (dlio_mpi_analysis.characterization.file_roles)."""
import dataclasses
import json
import os
import warnings

import darshan
import numpy as np
import pytest

import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.characterization.layers import dataset_file
from dlio_mpi_analysis.loading.loader import load

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                    "darshan")
with open(os.path.join(HERE, "truth.json")) as _f:
    TRUTH = json.load(_f)


def log(name):
    return os.path.join(HERE, f"{name}.darshan")


def characterized(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return analysis.characterize(log(name), dxt=True)


def without(name, drop):
    """The job of a log with the records and trace of the files ``drop(name)`` picks left out,
    as if the program had not touched them."""
    job = load(log(name), dxt=True)
    ids = [i for i, n in job.names.items() if drop(n)]
    assert ids
    return dataclasses.replace(
        job, records={m: f[~np.isin(f["id"], np.array(ids, dtype=np.uint64))]
                      for m, f in job.records.items()},
        dxt_segments={m: f[~np.isin(f["id"], np.array(ids, dtype=np.uint64))]
                      for m, f in job.dxt_segments.items()})


def compared(first, second):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return analysis.compare([first, second], labels=["real", "other"])


def similarity(comparison, metric):
    t = comparison.table
    return t[(t["metric"] == metric) & (t["job"] == comparison.labels[1])]["similarity"].iloc[0]


def roles_by_name(c):
    return {c.names[i]: role for i, role in c.roles.items() if i in c.names}


def test_standard_streams_are_neither_data_nor_an_interface():
    """IOR's report on stdout is a STDIO <STDOUT> record: the job's interface is POSIX alone,
    and the log compares with itself without that record as identical."""
    t = TRUTH["ior_posix_stdout"]
    c = characterized("ior_posix_stdout")
    assert c.interfaces == t["interfaces"] == ["POSIX"]
    assert c.file_roles == {
        "data": {"files": 1, "bytes_read": 4194304, "bytes_written": 4194304},
        "stream": {"files": 1, "bytes_read": 0, "bytes_written": 2170}}
    assert (c.data.reads, c.data.writes) == (t["posix"]["POSIX_READS"], t["posix"]["POSIX_WRITES"])
    silent = without("ior_posix_stdout", lambda n: n.startswith("<STD"))
    cmp = compared(log("ior_posix_stdout"), silent)
    assert cmp.score == 1.0
    assert cmp.row("rank_imbalance")[0] == cmp.row("rank_imbalance")[1]


@pytest.mark.parametrize("name,mpi_files,interfaces", [
    ("ior_mpiio_coll_sm", 6, ["POSIX", "MPI-IO collective"]),
    ("ior_hdf5_coll_sm", 7, ["POSIX", "MPI-IO independent", "MPI-IO collective", "HDF5"]),
])
def test_open_mpi_session_files_and_lock_tests_are_the_librarys(name, mpi_files, interfaces):
    """ompio's shared-memory files in its session directory and its lock tests beside the data
    file are the MPI library's: one data file, the others apart."""
    t = TRUTH[name]
    c = characterized(name)
    assert c.interfaces == t["interfaces"] == interfaces
    roles = roles_by_name(c)
    mpi = sorted(n for n, role in roles.items() if role == "mpi")
    assert len(mpi) == mpi_files == t["mpi_library_files"]["session_directory"] \
        + t["mpi_library_files"]["lock_tests"]
    assert all("/ompi.vm.0/" in n or ".locktest." in n for n in mpi)
    # the data file (and, in the HDF5 run, its two datasets' H5D records)
    assert {dataset_file(n) for n, role in roles.items() if role == "data"} \
        == {t["data_files"][0].replace("DIR", "/tmp/fid/run/" + name.split("_")[1])}
    assert c.file_roles["mpi"]["bytes_written"] == t["mpi_library_files"]["bytes_written"]
    assert c.data.files == 1 and c.data.checkpoint_files == 0
    assert sum(v["files"] for v in c.data_formats.values()) == 1
    # the same log without the library's files compares as identical
    alone = without(name, lambda n: "/ompi." in n or ".locktest." in n)
    assert compared(log(name), alone).score == 1.0


def test_a_run_through_another_mpi_io_keeps_its_files_similarity():
    """The same IOR run through ompio (six files of its own) and through ROMIO (none): a
    right-shape pair, the same data files."""
    cmp = compared(log("ior_mpiio_coll_sm"), log("ior_mpiio_coll_romio"))
    assert cmp.row("files") == (1, 1) and similarity(cmp, "files") == 1.0
    assert similarity(cmp, "shared_file_fraction") == 1.0
    assert similarity(cmp, "write_ops") == 1.0
    assert cmp.score >= 0.95


def test_romios_shared_file_pointer_file_is_the_librarys():
    """ROMIO's hidden .shfp file, read and written 8 bytes at a time, is no data file: the data
    reads are the two 256 KiB ordered reads, in characterize, compare and fit alike."""
    t = TRUTH["mpiio_shared_pointer_romio"]
    c = characterized("mpiio_shared_pointer_romio")
    roles = roles_by_name(c)
    (pointer,) = [n for n, role in roles.items() if role == "mpi"]
    assert os.path.basename(pointer).startswith(".records.bin.shfp.")
    assert c.file_roles["mpi"] == {"files": 1,
                                   "bytes_read": t["shared_pointer_file"]["POSIX_BYTES_READ"],
                                   "bytes_written": t["shared_pointer_file"]["POSIX_BYTES_WRITTEN"]}
    posix = c.data.modules["POSIX"]
    assert (posix.ops["reads"], posix.ops["writes"]) == (2, 8)
    assert posix.read_sizes.mean == 262144
    cmp = compared(log("mpiio_shared_pointer_ompio"), log("mpiio_shared_pointer_romio"))
    for metric in ("files", "read_ops", "mean_read_size", "read_size_histogram", "write_ops"):
        assert similarity(cmp, metric) == 1.0, metric
    assert cmp.score >= 0.95
    f = analysis.fit(log("mpiio_shared_pointer_romio"))
    assert f.evidence["data_files"]["files"] == 1
    assert (f.workload["dataset"]["format"], f.workload["dataset"]["num_files_train"]) \
        == ("raw", 1)
    assert f.workload["dataset"]["record_length"] == 262144


def test_a_read_only_jobs_config_log_and_output_writes_are_apart():
    """A training script that reads its data and writes only its config, log and metrics: its
    data writes are none, its other writes are reported apart, and it compares with its data
    I/O alone as identical (bytes written 0 against 0)."""
    t = TRUTH["python_train_reader"]
    c = characterized("python_train_reader")
    assert c.data.bytes_written == 0 and c.data.writes == 0
    assert c.data.files == t["data_files"] == 4
    assert c.file_roles["other"] == {
        "files": 5, "bytes_written": t["not_data"]["bytes_written"],
        "bytes_read": t["not_data"]["script_bytes_read"] + t["not_data"]["config_bytes_read"]}
    assert c.file_roles["stream"]["bytes_written"] == t["not_data"]["stdout_bytes"]
    assert c.totals.bytes_written == 547 + 19       # every file's, as the totals say
    data_alone = without("python_train_reader", lambda n: not n.endswith(".bin"))
    cmp = compared(log("python_train_reader"), data_alone)
    assert similarity(cmp, "bytes_written") == 1.0
    assert cmp.score == 1.0


def test_checkpoint_writes_count_as_the_jobs_writes():
    """The same script writing a 512 KiB checkpoint after each epoch: those writes, and only
    those, are the job's data writes."""
    t = TRUTH["python_train_checkpoint"]
    c = characterized("python_train_checkpoint")
    assert (c.data.files, c.data.checkpoint_files) == (t["data_files"], t["checkpoint_files"])
    assert c.data.bytes_written == t["checkpoints"]["POSIX_BYTES_WRITTEN"] == 1048576
    assert c.data.writes == t["checkpoints"]["POSIX_WRITES"]
    checkpoints = sorted(n for n, role in roles_by_name(c).items() if role == "checkpoint")
    assert [os.path.basename(n) for n in checkpoints] == ["model_epoch0.pt", "model_epoch1.pt"]
    kept = without("python_train_checkpoint", lambda n: not n.endswith((".bin", ".pt")))
    assert compared(log("python_train_checkpoint"), kept).score == 1.0


def pydarshan_data_figures(path, is_data):
    """Reads, bytes read, sequential and consecutive shares and the DXT read sizes of the files
    ``is_data(name)`` picks, straight from PyDarshan."""
    report = darshan.DarshanReport(path, read_all=True)
    counters = report.records["POSIX"].to_df()["counters"]
    data = counters[[is_data(report.name_records[int(i)]) for i in counters["id"]]]
    reads = int(data["POSIX_READS"].sum())
    lengths = np.concatenate([rec["read_segments"]["length"].to_numpy()
                              for rec in report.records["DXT_POSIX"].to_df()
                              if is_data(report.name_records[int(rec["id"])])])
    return {"reads": reads, "bytes_read": int(data["POSIX_BYTES_READ"].sum()),
            "seq_pct": 100.0 * data["POSIX_SEQ_READS"].sum() / reads,
            "consec_pct": 100.0 * data["POSIX_CONSEC_READS"].sum() / reads,
            "median": float(np.median(lengths)), "mean": float(lengths.mean()),
            "trace_reads": len(lengths)}


@pytest.mark.parametrize("name,is_data", [
    ("python_train_reader", lambda n: n.endswith(".bin")),
    ("ior_mpiio_coll_sm", lambda n: n.endswith("/testfile")),
    ("mpiio_shared_pointer_romio", lambda n: n.endswith("/records.bin")),
])
def test_data_figures_equal_pydarshans_over_the_data_files(name, is_data):
    """characterize's data-only figures are PyDarshan's over the data files (within 1 %); for
    the training script they differ from the all-file figures, which its config and script
    reads shift."""
    want = pydarshan_data_figures(log(name), is_data)
    c = characterized(name)
    posix = c.data.modules["POSIX"]
    trace = c.data.dxt["DXT_POSIX"].read_sizes
    got = {"reads": posix.ops["reads"], "bytes_read": posix.bytes_read,
           "seq_pct": posix.sequential_read_pct, "consec_pct": posix.consecutive_read_pct,
           "median": trace.median, "mean": trace.mean, "trace_reads": trace.operations}
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=0.01), key
    if name == "python_train_reader":
        t = TRUTH[name]["data"]
        assert (got["reads"], got["bytes_read"]) == (t["POSIX_READS"], t["POSIX_BYTES_READ"])
        every = c.modules["POSIX"]
        assert every.ops["reads"] > got["reads"]
        assert abs(every.sequential_read_pct - got["seq_pct"]) > 1.0


def test_fit_reads_the_files_characterize_calls_data():
    """One classification: fit's data files are characterize's."""
    for name in ("python_train_reader", "ior_mpiio_coll_sm", "mpiio_shared_pointer_romio"):
        c = characterized(name)
        f = analysis.fit(log(name))
        assert f.evidence["data_files"]["files"] == c.data.files, name
        assert f.evidence["data_files"]["bytes_read"] == c.data.bytes_read, name
        assert f.evidence["files_apart"] == {role: v for role, v in c.file_roles.items()
                                             if role != "data"}, name
    apart = analysis.fit(log("mpiio_shared_pointer_romio")).evidence["files_apart"]
    assert apart == {"mpi": {"files": 1, "bytes_read": 144, "bytes_written": 88}}


@pytest.mark.parametrize("name,files,role", [
    ("<STDOUT>", (), "stream"),
    ("/dev/pts/3", (), "stream"),
    ("/tmp/ompi.node7.1000/pid.42/1/train.h5_cid-4-42.sm", (), "mpi"),
    ("/var/tmp/prte.node7.1000/dvm.42/seg", (), "mpi"),
    ("/dev/shm/vader_segment.node7.1", (), "mpi"),
    ("/scratch/run/.train.h5.shfp.6771.305354333", ("/scratch/run/train.h5",), "mpi"),
    ("/scratch/run/train.h5.locktest.3", ("/scratch/run/train.h5",), "mpi"),
    # a hidden file named like a shared pointer with no such file in the job is no companion
    ("/scratch/run/.train.h5.shfp.6771", (), "data"),
    ("/scratch/run/train.h5", (), "data"),
])
def test_roles_by_where_files_live_and_what_made_them(name, files, role):
    from dlio_mpi_analysis.characterization.file_roles import role_of
    assert role_of(name, set(files) | {name}, 100, 0) == role


def test_pythons_tempfile_probe_is_no_checkpoint():
    """tempfile's first call (TensorFlow's import makes one) writes 4 bytes to a file of 8
    random characters in each candidate directory, then removes it."""
    from dlio_mpi_analysis.characterization.file_roles import role_of
    assert role_of("/tmp/jm8a10tq", set(), 0, 4) == "other"
    assert role_of("/work/run/k2_x9q0a", set(), 0, 4) == "other"
    assert role_of("/tmp/jm8a10tq", set(), 0, 4096) == "checkpoint"
    assert role_of("/ck/model_01.pt", set(), 0, 4) == "checkpoint"


def test_written_only_files_are_checkpoints_unless_named_as_reports():
    from dlio_mpi_analysis.characterization.file_roles import mpi_library_file, role_of
    assert role_of("/ck/model_states-0.pt", set(), 0, 100) == "checkpoint"
    assert role_of("/ck/ckpt-3.bin.part", set(), 0, 100) == "checkpoint"
    assert role_of("/out/metrics.json", set(), 0, 100) == "other"
    assert role_of("/out/results.txt", set(), 0, 100) == "other"
    assert role_of("/out/.hydra/config.yaml", set(), 0, 100) == "other"
    assert not mpi_library_file("/scratch/run/train.h5", {"/scratch/run/train.h5"})


@pytest.mark.parametrize("name", ["ior_posix_stdout", "ior_hdf5_coll_sm", "python_train_reader"])
def test_a_replay_is_not_parted_from_the_real_job_by_what_is_not_data(tmp_path, name):
    """Fit, generate, run and compare: the emulator prints no IOR report, makes no ompio
    session files and writes no framework config, and still has the real job's files,
    interfaces and bytes written."""
    from dlio_mpi_analysis.replays.replay import replay

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = replay(log(name), tmp_path / "replay")
    for key in ("files", "shared_files", "interfaces", "bytes_written", "write_ops"):
        assert r.emulated[key] == r.real[key], (key, r.comparison.table)
    assert similarity(r.comparison, "files") == 1.0
    assert r.score >= 0.95, r.comparison.table


def test_a_tree_walked_by_its_descriptors_is_no_data():
    """hwloc walks sysfs by directory descriptors; Darshan joins the relative names to the
    working directory (<cwd>/block/../../devices/...): a path that walks up, and the system's
    roots themselves, are no data files."""
    from dlio_mpi_analysis.characterization.files import is_data_file
    assert not is_data_file("/work/run/block/../../devices/pci0000:00")
    assert not is_data_file("/work/run/block/..")
    assert not is_data_file("/sys") and not is_data_file("/")
    assert is_data_file("/data/..train/img_01.npz") and is_data_file("/data/a..b.bin")


def test_a_hardware_walk_is_no_data_from_where_it_starts():
    """hwloc walks sysfs by the directories' descriptors; Darshan joins the relative names to
    the working directory: cwd/block, cwd/block/vda, cwd/block/../../devices/... (the DLIO
    benchmark run alone, an Open MPI singleton). The walk's start and what lies under it are
    the walk's, not data files opened with no I/O."""
    from dlio_mpi_analysis.characterization.file_roles import role_of, walk_starts
    files = {"/w/run/block", "/w/run/block/vda", "/w/run/block/../../devices/pci0/vda",
             "/w/data/train/img_1_of_8.npz"}
    assert walk_starts(files) == {"/w/run/block"}
    assert role_of("/w/run/block", files, 0, 0) == "other"
    assert role_of("/w/run/block/vda", files, 0, 0) == "other"
    assert role_of("/w/run/blocks.bin", files, 100, 0) == "data"
    assert role_of("/w/data/train/img_1_of_8.npz", files, 100, 0) == "data"

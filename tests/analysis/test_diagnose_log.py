"""analyze diagnose on real logs: each kind of finding on a log that has it, with the exact
evidence, and not on a log without it; the --json schema; thresholds; bad input."""

import json
import os
import subprocess
import sys

import pytest

from dlio_mpi_analysis.diagnosis.diagnosis_report import diagnose_path
from dlio_mpi_analysis.diagnosis.finding_kinds import KINDS, Thresholds

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "darshan")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def fixture(name):
    return os.path.join(FIXTURES, name)


def found(path, thresholds=None):
    """id -> finding of a diagnosis (JSON form)."""
    return {f["id"]: f for f in diagnose_path(path, thresholds)["findings"]}


@pytest.fixture(scope="module")
def ior_random():
    return found(fixture("ior_random.darshan"))


def test_small_and_random_reads_of_a_shared_file(ior_random):
    """IOR's 4,096 random 4 KiB reads of one shared 16 MiB file."""
    f = ior_random["small_reads_shared"]
    assert (f["value"], f["threshold"]) == (1.0, 0.1)
    assert f["evidence"].startswith("4,096 of 4,096 POSIX reads of 1 shared file(s) below "
                                    "1 MiB (100 %")
    assert f["files"] == ["/tmp/rl/data/ior_random/testfile"]
    assert f["drishti"] == ["P15"] and f["advise"]
    small = ior_random["small_reads"]
    assert small["value"] == 4096.0 and "median read 4 KiB over 4,096 reads" in small["evidence"]
    rand = ior_random["random_access"]
    assert rand["value"] == pytest.approx(49.8046875)


def test_small_and_random_writes():
    got = found(fixture("ior_random_write.darshan"))
    for key in ("small_writes", "small_writes_shared"):
        assert got[key]["value"] == 1.0
        assert "1,024 of 1,024 POSIX writes" in got[key]["evidence"]
        assert got[key]["files"] == ["/tmp/replay-work/data/testfile"]


def test_misaligned_file_offsets_and_memory():
    got = found(fixture("dlio_jpeg.darshan"))
    assert got["misaligned"]["value"] == 25.0
    mem = got["misaligned_memory"]
    assert mem["value"] == pytest.approx(108 / 512)
    assert "108 of 512 POSIX reads and writes use a buffer off the alignment of 8 B" in \
        mem["evidence"]
    assert mem["ranks"] == [0, 1] and len(mem["files"]) == 5


def test_training_reads_in_pieces_in_shuffled_order_every_epoch():
    """train_reader.py: 4 files of 4 samples of 256 KiB, each sample in 4 reads of 64 KiB, in
    a shuffled order, 2 epochs."""
    got = found(fixture("python_train_reader.darshan"))
    pieces = got["samples_in_pieces"]
    assert pieces["value"] == 4.0
    assert "a median of 4 reads of 64 KiB each for 256 KiB" in pieces["evidence"]
    shuffle = got["shuffle_defeats_readahead"]
    assert "7 of 22 runs" in shuffle["evidence"]
    again = got["redundant_reads"]
    assert again["value"] == 2.0 and "8 MiB read from files whose extents hold 4 MiB" in \
        again["evidence"]
    assert len(again["files"]) == 4


def test_samples_read_whole_and_in_order_are_neither():
    """checkpoint_train.py reads each sample in one read, in file order; it writes a
    checkpoint after every epoch."""
    got = found(fixture("checkpoint_train.darshan"))
    assert "samples_in_pieces" not in got and "shuffle_defeats_readahead" not in got
    ck = got["checkpoint_stalls"]
    assert ck["value"] == pytest.approx(0.1495755, rel=1e-6) and ck["ranks"] == [0]
    assert "3 checkpoint file(s), 22.5 MiB written" in ck["evidence"]


def test_stragglers_and_blocking_mpiio():
    got = found(fixture("ior_mpiio_coll.darshan"))
    assert got["straggler_bytes"]["value"] == 1.0
    assert got["straggler_time"]["value"] == pytest.approx(0.812512268854776)
    assert got["straggler_time"]["files"] == ["/tmp/rl/data/ior_mpiio_coll/testfile"]
    assert "64 MPI-IO reads, none nonblocking" in got["blocking_mpiio_reads"]["evidence"]
    assert "64 MPI-IO writes, none nonblocking" in got["blocking_mpiio_writes"]["evidence"]


def test_aggregators_against_the_nodes_given():
    """The log records the hints cb_nodes=1; only a node count (not in a log) tells more."""
    path = fixture("ior_mpiio_coll_romio.darshan")
    assert "mpiio_aggregators" not in found(path)
    f = found(path, Thresholds(nodes=2))["mpiio_aggregators"]
    assert (f["value"], f["threshold"]) == (1.0, 2.0)
    assert "cb_nodes=1 in the hints the log records (cb_nodes=1) for 2 node(s)" in f["evidence"]
    assert "mpiio_aggregators" not in found(path, Thresholds(nodes=1))


def test_forked_workers():
    f = found(fixture("torch_npy_workers"))["workers_misattributed"]
    assert f["value"] == 4.0 and f["ranks"] == [0]


def test_plain_large_reads_have_no_finding():
    for name in ("ior_fpp.darshan", "ior_posix_buffered.darshan", "ior_posix_odirect.darshan"):
        assert found(fixture(name)) == {}, name


def test_shared_logs(log):
    got = found(log("skew_io__skew-app"))
    meta = got["metadata_time"]
    assert meta["value"] == pytest.approx(35282.71385264397)
    assert meta["files"] == ["/lus/theta-fs0/2934391481"]
    stdio = found(log("stdio_no_posix"))["stdio_heavy"]
    assert "STDIO moves 151 B of the 151 B" in stdio["evidence"]
    writes = found(log("hdf5_diagonal_write_only__hdf5_file_opens_only"))["redundant_writes"]
    assert writes["value"] == pytest.approx(1.24, abs=0.005)
    # streams are not the job's files: IOR printing its report is no STDIO use
    assert "stdio_heavy" not in found(log("ior_daos__snyder_ior-DFS"))


def test_a_threshold_changes_what_is_found(ior_random):
    path = fixture("ior_random.darshan")
    assert "small_reads_shared" not in found(path, Thresholds(small_count=5000))
    assert "random_access" in ior_random


def test_json_schema_and_ids_from_the_vocabulary():
    out = subprocess.run([sys.executable, "-m", "dlio_mpi", "analyze", "diagnose", "--json",
                          fixture("python_train_reader.darshan")], cwd=REPO,
                         capture_output=True, text=True, check=True)
    data = json.loads(out.stdout)
    assert set(data) == {"path", "logs", "exe", "nprocs", "run_time_s", "io_share", "hints",
                         "thresholds", "findings"}
    assert data["thresholds"] == {name: getattr(Thresholds(), name)
                                  for name in Thresholds.names()}
    for f in data["findings"]:
        assert set(f) == {"id", "key", "title", "evidence", "metric", "value", "threshold",
                          "severity", "level", "files", "ranks", "drishti", "advise",
                          "advise_command", "changes"}
        assert f["id"] in KINDS and f["level"] in ("high", "warn", "info")
    severities = [f["severity"] for f in data["findings"]]
    assert severities == sorted(severities, reverse=True)


@pytest.mark.parametrize("args, words", [
    (["--threshold", "small_count=many"], "threshold small_count='many': not an integer"),
    (["--threshold", "speed=1"], "threshold 'speed=1': NAME=VALUE with NAME one of"),
    (["--threshold", "nodes=-1"], "must be 0 or more"),
])
def test_a_bad_threshold_is_one_line_and_status_2(args, words):
    out = subprocess.run([sys.executable, "-m", "dlio_mpi", "analyze", "diagnose", *args,
                          fixture("ior_fpp.darshan")], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and words in out.stderr


def test_a_file_that_is_no_log_is_one_line(tmp_path):
    bad = tmp_path / "x.darshan"
    bad.write_bytes(b"not a log")
    out = subprocess.run([sys.executable, "-m", "dlio_mpi", "analyze", "diagnose", str(bad)],
                         cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 1 and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr


def test_with_a_workload_each_log_finding_carries_the_change_advise_measures():
    """advise starts from these findings: with the workload it runs (here, as if fitted to
    train_reader.py's log) a kind only the log's rules see gets its candidate changes."""
    import warnings

    from dlio_mpi_analysis.characterization.characterize import characterize, load_job
    from dlio_mpi_analysis.diagnosis.diagnose import diagnose
    from dlio_mpi_analysis.errors import AnalysisWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AnalysisWarning)
        log = load_job(fixture("python_train_reader.darshan"), dxt=True)
        char = characterize(log)
    workload = {"dataset": {"format": "raw", "num_files_train": 4, "num_samples_per_file": 4,
                            "record_length": 262144},
                "reader": {"transfer_size": 65536, "sample_shuffle": "seed"}}
    got = {f.key: f for f in diagnose(char, workload, log=log)}
    assert got["samples_in_pieces"].changes == {
        "a sample per read (transfer size 0)": {"reader": {"transfer_size": 0}}}
    assert got["shuffle_defeats_readahead"].changes == {
        "shuffle files, not samples": {"reader": {"sample_shuffle": "off",
                                                  "file_shuffle": "seed"}}}
    # re-reading each epoch is training's own pattern: no change that reads fewer bytes
    assert got["redundant_reads"].changes == {}
    from dlio_mpi.config import loader as config
    from dlio_mpi.advise.measure import merged
    for key in ("samples_in_pieces", "shuffle_defeats_readahead"):
        for change in got[key].changes.values():
            config.load(["output.folder=/nonexistent"], doc=merged(workload, change))
    # the same kinds, no workload: evidence only
    assert all(not f.changes for f in diagnose(char, None, log=log)
               if f.key in ("samples_in_pieces", "shuffle_defeats_readahead"))

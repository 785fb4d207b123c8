"""fit: workloads derived from logs and runs, valid for dlio_mpi's config, and the closed loop
run -> fit -> run the fitted workload -> compare."""

import os
import warnings

import pytest
import yaml

import dlio_mpi_analysis as analysis
from dlio_mpi.config import loader as config
from mpirun import run_mpi
from oplog_fixtures import call, write_run

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

KIB = 1024
# A fitted workload that gets the main parameters right reproduces every structural metric of
# the comparison within a few percent: what may differ is the I/O time share (weight 0.5, the
# machine's noise, can score 0), the early-read fraction (weight 1, the run's start-up, ~0.1)
# and the sequential shares (weight 2, shuffling, a few %): at worst about
# 1 - (0.5 + 0.1 + 0.1) / 17 = 0.96. A transfer size off by 4x alone loses about 4 of the 17
# weight units (read calls, mean size, histogram): 0.76. 0.9 separates the two.
LOOP_THRESHOLD = 0.9


def _valid(fitted, tmp_path):
    path = tmp_path / "fitted.yaml"
    fitted.write(path)
    cfg = config.load([], config_file=str(path))
    assert yaml.safe_load(path.read_text()) == fitted.workload
    return cfg, path


def _closed_loop(emulate, tmp_path, overrides):
    original = emulate(*overrides, "train.computation_time=0.01")
    fitted = analysis.fit(original, data_folder=str(tmp_path / "data"))
    _, path = _valid(fitted, tmp_path)
    again = tmp_path / "out"
    run_mpi(fitted.ranks, "run_cli.py", "run", "--config", path, f"output.folder={again}",
            "io.keep_oplog=true", timeout=180)
    return fitted, analysis.compare([original, again], labels=["original", "fitted"])


def test_closed_loop_per_rank_tfrecord_files(emulate, tmp_path):
    fitted, comparison = _closed_loop(emulate, tmp_path, (
        "dataset.format=tfrecord", "dataset.num_files_train=8", "dataset.num_samples_per_file=8",
        "dataset.record_length=256k", "reader.transfer_size=64k", "reader.batch_size=2",
        "reader.sample_shuffle=seed", "train.epochs=1"))
    w = fitted.workload
    assert fitted.ranks == 2
    assert (w["dataset"]["format"], w["dataset"]["num_files_train"]) == ("tfrecord", 8)
    assert w["reader"]["transfer_size"] == 64 * KIB
    assert (w["io"]["layout"], w["io"]["interface"], w["io"]["read_type"]) \
        == ("multi", "posix", "on_demand")
    assert w["dataset"]["record_length"] == 256 * KIB  # runs of reads, less TFRecord framing
    assert w["dataset"]["num_samples_per_file"] == 8
    assert w["reader"]["sample_shuffle"] == "seed"
    assert 0.005 < w["train"]["computation_time"] < 0.02
    assert comparison.score >= LOOP_THRESHOLD, comparison.table


def test_closed_loop_shared_file_through_mpiio(emulate, tmp_path):
    fitted, comparison = _closed_loop(emulate, tmp_path, (
        "io.interface=mpiio", "io.layout=shared", "dataset.num_files_train=1",
        "dataset.num_samples_per_file=32", "dataset.record_length=64k",
        "reader.transfer_size=16k", "reader.batch_size=2", "train.epochs=1"))
    w = fitted.workload
    assert (w["dataset"]["format"], w["dataset"]["num_files_train"]) == ("raw", 1)
    assert w["reader"]["transfer_size"] == 16 * KIB
    assert (w["io"]["layout"], w["io"]["interface"]) == ("shared", "mpiio")
    assert w["dataset"]["num_samples_per_file"] * w["dataset"]["record_length"] == 32 * 64 * KIB
    assert comparison.score >= LOOP_THRESHOLD, comparison.table


def test_input_read_whole_at_start_by_every_rank(tmp_path):
    """CANDLE's pattern: both ranks read the one CSV file whole in 1 MiB pieces at the start
    of a 1 s run."""
    size = 4 * 2**20
    calls = [call("open", 0, 1000)] + [
        call("read", 10_000 + i * 100_000, 50_000, offset=i * 2**20, nbytes=2**20)
        for i in range(4)]
    run = write_run(tmp_path / "run", {0: [calls], 1: [calls]}, files=1, fmt="csv",
                    phase_s=1.0)
    fitted = analysis.fit(run)
    w = fitted.workload
    assert (w["dataset"]["format"], w["dataset"]["num_files_train"]) == ("csv", 1)
    assert (w["io"]["layout"], w["io"]["read_type"]) == ("replicated", "memory")
    assert w["reader"]["transfer_size"] == 2**20 and w["train"]["epochs"] == 1
    assert w["dataset"]["record_length"] * w["dataset"]["num_samples_per_file"] == size
    assert fitted.evidence["min_rank_coverage"] == 1.0
    _valid(fitted, tmp_path)


def _rank_reads(order, size=4096, gap_ns=20_000_000, per_step=2, overlap=1):
    """One rank reading samples of `size` bytes in the given order, `per_step` samples then a
    gap (compute), `overlap` reads in flight at a time."""
    calls, t = [], 1000
    for i, sample in enumerate(order):
        calls.append(call("read", t, 50_000, offset=sample * size, nbytes=size))
        if (i + 1) % overlap == 0:
            t += 60_000
        if (i + 1) % per_step == 0:
            t += gap_ns
    return calls


def test_sequential_order_is_no_shuffle_and_steps_give_the_compute_time(tmp_path):
    run = write_run(tmp_path / "run", {0: [_rank_reads(range(32))]}, files=1, phase_s=1.0)
    fitted = analysis.fit(run)
    w = fitted.workload
    assert w["reader"]["sample_shuffle"] == "off" and fitted.evidence["forward_jump_share"] == 1
    assert w["train"]["computation_time"] == pytest.approx(0.02, rel=0.01)
    assert w["reader"]["read_threads"] == 0 and w["reader"]["transfer_size"] == 4096
    # samples read in file order, a read each, a file's reads cut by the steps' pauses: a
    # step's two reads are two samples (the same I/O as one sample of the step's bytes)
    assert (w["reader"]["batch_size"], w["dataset"]["record_length"]) == (2, 4096)
    assert (w["dataset"]["num_files_train"], w["io"]["layout"]) == (1, "multi")


def test_random_order_is_shuffled_and_overlap_gives_read_threads(tmp_path):
    order = [int(x) for x in __import__("numpy").random.default_rng(1).permutation(64)]
    run = write_run(tmp_path / "run", {0: [_rank_reads(order, per_step=4, overlap=4)]},
                    files=1, phase_s=2.0)
    fitted = analysis.fit(run)
    w = fitted.workload
    assert w["reader"]["sample_shuffle"] == "seed"
    assert 0.3 < fitted.evidence["forward_jump_share"] < 0.7
    assert w["reader"]["read_threads"] == 4 and w["reader"]["batch_size"] == 4


def test_mpi_io_test_log(log):
    """4 ranks, one shared file, a 16 MiB read per rank through independent MPI-IO."""
    fitted = analysis.fit(log("release_logs__mpi-io-test-x86_64-3.5.0"))
    w = fitted.workload
    assert fitted.ranks == 4
    assert (w["dataset"]["format"], w["dataset"]["num_files_train"]) == ("raw", 1)
    assert (w["io"]["layout"], w["io"]["interface"]) == ("shared", "mpiio")
    assert w["reader"]["transfer_size"] == 16 * 2**20
    assert w["dataset"]["num_samples_per_file"] * w["dataset"]["record_length"] == 64 * 2**20


def test_hdf5_log(log):
    fitted = analysis.fit(log("ior_pnetcdf_hdf5__shane_ior-HDF5"))
    w = fitted.workload
    assert (w["dataset"]["format"], w["io"]["interface"], w["io"]["layout"]) \
        == ("hdf5", "hdf5", "shared")


def test_fitted_workloads_of_real_logs_load(log, all_logs, tmp_path):
    names = [p for p in all_logs if not os.path.basename(p).startswith("release_logs__")]
    names += [log("release_logs__mpi-io-test-ppc64-3.0.0"),
              log("release_logs__mpi-io-test-x86_64-3.4.7")]
    fitted_count = 0
    for path in names:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", analysis.AnalysisWarning)
            try:
                fitted = analysis.fit(path)
            except analysis.FitError as error:
                assert "no data file was read" in str(error)
                continue
        cfg, _ = _valid(fitted, tmp_path)
        assert cfg.dataset.num_files_train >= 1
        fitted_count += 1
    assert fitted_count >= 10


def test_a_write_only_log_is_a_checkpoint_only_workload(log):
    w = analysis.fit(log("hdf5_diagonal_write_only__hdf5_diagonal_write_1_byte")).workload
    assert w["workflow"] == {"generate_data": False, "train": False, "checkpoint": True}
    assert w["checkpoint"]["num_checkpoints_read"] == 0


def test_a_log_without_io_has_nothing_to_fit(log):
    with pytest.raises(analysis.FitError, match="no data file was read"):
        analysis.fit(log("empty_log__empty_log"))


def test_yaml_header_names_the_process_count(log):
    text = analysis.fit(log("release_logs__mpi-io-test-x86_64-3.5.0")).to_yaml()
    assert text.splitlines()[1].startswith("# the job ran on 4 processes: mpiexec -n 4")


def test_a_partial_trace_is_said_and_the_counters_win(log):
    """1,000,000 one-byte reads of one byte, traced for the first 65,536 only (in the first
    3 % of the run): the trace would say "read at start"; the counters (reads until 0.85 s of
    2 s) say on demand."""
    with pytest.warns(analysis.errors.PartialLogWarning):
        fitted = analysis.fit(log("partial_data_dxt__"))
    w = fitted.workload
    assert any("DXT trace is partial (65536 of 1000000" in n for n in fitted.notes)
    assert fitted.evidence["partial_trace"] == {"traced": 65536, "counted": 1000000}
    assert w["io"]["read_type"] == "on_demand"
    assert (w["dataset"]["record_length"], w["reader"]["transfer_size"]) == (1, 1)
    assert w["train"]["epochs"] == 1000 and any("capped" in n for n in fitted.notes)

"""compare: the tidy table, the per-metric similarities and the score's formula."""

import math

import pytest

import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.comparison.compare import METRICS, SIZE_BUCKETS, profile, similarity
from oplog_fixtures import call, write_run

TOTAL_WEIGHT = sum(weight for _, _, weight, _ in METRICS)


def test_metric_set_and_weights_are_the_documented_ones():
    assert [(m, k, w) for m, k, w, _ in METRICS] == [
        ("ranks", "ratio", 0.5), ("bytes_read", "ratio", 2.0), ("bytes_written", "ratio", 1.0),
        ("read_ops", "ratio", 1.0), ("write_ops", "ratio", 0.5), ("files", "ratio", 1.0),
        ("shared_file_fraction", "file_share", 1.0), ("mean_read_size", "ratio", 2.0),
        ("read_size_histogram", "distribution", 2.0),
        ("sequential_read_fraction", "fraction", 1.0),
        ("consecutive_read_fraction", "fraction", 1.0),
        ("early_read_fraction", "fraction", 1.0), ("io_time_share", "share", 0.5),
        ("rank_imbalance", "ratio", 0.5), ("interfaces", "set", 2.0),
        ("checkpoint_files", "ratio", 0.5),
        ("read_order", "order", 1.0), ("write_order", "order", 1.0),
        ("syncs", "ratio", 0.5), ("evaluation_phases", "ratio", 0.5)]
    assert TOTAL_WEIGHT == 20.5


def test_per_metric_similarities():
    assert similarity("ratio", 100, 200) == pytest.approx(1 - math.log10(2))
    assert similarity("ratio", 200, 100) == pytest.approx(1 - math.log10(2))
    assert similarity("ratio", 1, 10) == 0.0 and similarity("ratio", 1, 1000) == 0.0
    assert similarity("ratio", 0, 0) == 1.0 and similarity("ratio", 0, 5) == 0.0
    assert similarity("fraction", 0.25, 0.75) == 0.5
    # two draws of a random order differ by a few points: no difference; beyond, over the
    # span from a random order (a half) to in order (1)
    assert similarity("order", 0.49, 0.53) == 1.0
    assert similarity("order", 0.5, 1.0) == pytest.approx(0.1)
    assert similarity("order", 0.9, 1.0) == pytest.approx(0.9)
    # few calls: two draws of a random order differ by their spread, 2 sqrt(2 a (1 - a) / 3n)
    assert similarity("order", 0.479, 0.583, calls=48) == 1.0
    assert similarity("order", 0.479, 0.583, calls=4800) == pytest.approx(1 - 0.054 / 0.5)
    assert similarity("order", 0.5, 1.0, calls=48) == pytest.approx(1 - (0.5 - 0.118) / 0.5,
                                                                    abs=0.001)
    assert similarity("order", 1.0, 0.88, calls=48) == pytest.approx(1 - 0.07 / 0.5)
    # which of 64 files shuffled ranks share is a draw: 0.625 against 0.53 is no difference;
    # none shared against all has no spread
    assert similarity("file_share", 0.625, 0.53125, 64) == 1.0
    assert similarity("file_share", 0.0, 1.0, 64) == 0.0
    assert similarity("file_share", 1.0, 0.75, 4) == 0.75
    hist = dict.fromkeys(SIZE_BUCKETS, 0.0)
    a, b = dict(hist, **{"0_100": 1.0}), dict(hist, **{"0_100": 0.5, "1K_10K": 0.5})
    assert similarity("distribution", a, b) == 0.5
    assert similarity("set", ["POSIX", "STDIO"], ["POSIX"]) == 0.5
    assert similarity("set", [], []) == 1.0
    assert similarity("ratio", None, 3) is None
    # shares of run time: 1 % added to both, so that shares of a few microseconds count as none
    assert similarity("share", 0.0001, 0.0004) == pytest.approx(1 - math.log10(0.0104 / 0.0101))
    assert similarity("share", 0.05, 0.10) == pytest.approx(1 - math.log10(0.11 / 0.06))
    assert similarity("share", 0, 0) == 1.0 and similarity("share", None, 0.1) is None


@pytest.mark.parametrize("prefix", ["mpi_io_test_with_dxt__", "e3sm_io_heatmaps_and_dxt__",
                                    "stdio_no_posix__", "empty_log__"])
def test_identical_inputs_score_exactly_one(prefix, log, characterized):
    c = characterized(log(prefix), dxt=True)
    result = analysis.compare([c, c], labels=["a", "b"])
    assert result.score == 1.0 and result.scores == {"a": 1.0, "b": 1.0}
    known = result.table[result.table["job"] == "b"]["similarity"].dropna()
    assert (known == 1.0).all() and len(known) >= 3


def test_identical_runs_score_exactly_one(tmp_path):
    calls = [call("read", 0, 100, offset=0, nbytes=4096), call("read", 200, 100, offset=4096,
                                                               nbytes=4096)]
    run = write_run(tmp_path / "run", {0: [calls], 1: [calls]})
    assert analysis.compare([run, run]).score == 1.0


def _reads(tmp_path, name, size, count):
    """One rank reading 1000 bytes from offset 100 in `count` reads of `size`, each taking
    size ns (so that both jobs spend the same time), early in a 1 s run."""
    calls = [call("read", 1000 + i * 2000, size, offset=100 + i * size, nbytes=size)
             for i in range(count)]
    return write_run(tmp_path / name, {0: [calls]}, phase_s=1.0)


def test_score_is_the_weighted_mean_of_the_documented_formula(tmp_path):
    """The same 1000 bytes read as ten 100-byte reads or as one 1000-byte read. Differing:
    read calls (x10: 0), mean read size (x10: 0), size histogram (other bucket: 0),
    consecutive reads (9/10 against 0/1: 0.1). Everything else is equal, the read order too
    (every read forward); the write order of jobs without writes, and the syncs of jobs that
    synced nothing, are left out."""
    small, large = _reads(tmp_path, "small", 100, 10), _reads(tmp_path, "large", 1000, 1)
    result = analysis.compare([small, large], labels=["small", "large"])
    known = TOTAL_WEIGHT - 1.0 - 0.5
    expected = (known - 1.0 - 2.0 - 2.0 - 2.0 * 0 - 1.0 * (1 - 0.1)) / known
    assert result.score == pytest.approx(expected, rel=1e-12)
    table = result.table.set_index(["metric", "job"])
    assert table.loc[("read_ops", "large"), "value"] == 1
    assert table.loc[("read_ops", "large"), "relative_difference"] == pytest.approx(-0.9)
    assert table.loc[("consecutive_read_fraction", "large"), "similarity"] == pytest.approx(0.1)
    assert table.loc[("bytes_read", "large"), "similarity"] == 1.0
    assert table.loc[("io_time_share", "large"), "similarity"] == pytest.approx(1.0)
    assert list(result.table.columns) == ["metric", "job", "value", "relative_difference",
                                          "similarity", "weight"]
    assert len(result.table) == 2 * (len(METRICS) + 1)     # and the structure gate


def test_unknown_metrics_are_left_out(log, characterized):
    """A log without DXT has no early-read fraction: the metric drops out of the score."""
    with_dxt = characterized(log("mpi_io_test_with_dxt__"), dxt=True)
    without = characterized(log("mpi_io_test_with_dxt__"), dxt=False)
    assert profile(without)["early_read_fraction"] is None
    result = analysis.compare([with_dxt, without], labels=["dxt", "counters"])
    assert result.score == 1.0
    row = result.table.set_index(["metric", "job"]).loc[("early_read_fraction", "counters")]
    assert row["similarity"] is None or math.isnan(row["similarity"])


def test_three_jobs_and_text(log, characterized):
    paths = [log("release_logs__mpi-io-test-x86_64-3.5.0"),
             log("release_logs__mpi-io-test-x86_64-3.4.7"), log("mpi_io_test_with_dxt__")]
    result = analysis.compare([characterized(p, dxt=True) for p in paths])
    assert list(result.scores) == [p.rsplit("/", 1)[1] for p in paths]
    assert result.scores[result.labels[0]] == 1.0
    assert 0.8 < result.scores[result.labels[1]] < 1.0  # same program, another release
    assert result.scores[result.labels[2]] < result.scores[result.labels[1]]
    text = analysis.render_comparison(result)
    assert text.splitlines()[0].split() == ["metric", "unit", *result.labels]
    assert f"similarity of {result.labels[2]} to {result.labels[0]}: " \
           f"{result.scores[result.labels[2]]:.3f}" in text
    data = result.to_dict()
    assert data["scores"] == result.scores and len(data["table"]) == 3 * (len(METRICS) + 1)


def test_needs_two_jobs(log):
    with pytest.raises(ValueError, match="at least two"):
        analysis.compare([log("empty_log__")])


def test_a_job_of_the_wrong_shape_cannot_score_high(tmp_path):
    """The same reads, but the file read by both ranks instead of each rank its own file: the
    structure gate (shared-file share 1 against 0) makes the score 0."""
    own = write_run(tmp_path / "own", {0: [[call("read", 0, 10, file=0, offset=0, nbytes=100)]],
                                       1: [[call("read", 0, 10, file=1, offset=0, nbytes=100)]]})
    both = write_run(tmp_path / "both", {0: [[call("read", 0, 10, file=0, offset=0,
                                                   nbytes=100)]],
                                         1: [[call("read", 0, 10, file=0, offset=100,
                                                   nbytes=100)]]})
    result = analysis.compare([own, both], labels=["own", "both"])
    gate = result.table.set_index(["metric", "job"]).loc[("structure_gate", "both"),
                                                          "similarity"]
    assert gate == 0.0 and result.score == 0.0


def test_text_names_units_and_what_cost_the_score(tmp_path):
    """The table gives each metric's unit and sizes in binary units; under the score, the
    metrics that took the most points, costliest first (weight 2 at similarity 0: mean read
    size and size histogram, 2 / known weight each), then read calls (weight 1)."""
    small, large = _reads(tmp_path, "small", 100, 10), _reads(tmp_path, "large", 1000, 1)
    result = analysis.compare([small, large], labels=["small", "large"])
    text = analysis.render_comparison(result)
    lines = text.splitlines()
    assert lines[0].split() == ["metric", "unit", "small", "large"]
    mean_size = next(line for line in lines if line.startswith("mean_read_size"))
    assert mean_size.split()[3:] == ["bytes", "100", "B", "1,000", "B", "(+900.0%)"]
    assert next(line for line in lines if line.startswith("read_ops")).split()[3] == "calls"
    known = TOTAL_WEIGHT - 1.5      # all but write_order (no writes) and syncs (none)
    costs = next(line for line in lines if line.startswith("  cost most: "))
    assert costs == (f"  cost most: mean_read_size -{2 / known:.3f}, read_size_histogram "
                     f"-{2 / known:.3f}, read_ops -{1 / known:.3f}")
    assert "structure gate" not in text      # the structure is the same


def test_text_names_the_structure_metric_that_gated_the_score(tmp_path):
    own = write_run(tmp_path / "own", {0: [[call("read", 0, 10, file=0, offset=0, nbytes=100)]],
                                       1: [[call("read", 0, 10, file=1, offset=0, nbytes=100)]]})
    both = write_run(tmp_path / "both", {0: [[call("read", 0, 10, file=0, offset=0,
                                                   nbytes=100)]],
                                         1: [[call("read", 0, 10, file=0, offset=100,
                                                   nbytes=100)]]})
    text = analysis.render_comparison(analysis.compare([own, both], labels=["own", "both"]))
    assert "  structure gate: 0.000, set by shared_file_fraction" in text


def test_a_job_without_reads_has_nothing_of_the_reads_shape(tmp_path):
    """A file written then read back against the same file written only: the read size, its
    histogram and the sequential and consecutive shares of the job without a read are nothing
    like the reading job's (similarity 0), not left out of its score."""
    write = [call("write", 0, 10, offset=0, nbytes=4096)]
    read = [call("read", 100, 10, offset=0, nbytes=4096)]
    both = write_run(tmp_path / "both", {0: [write + read]}, phase_s=1.0)
    written = write_run(tmp_path / "written", {0: [write]}, phase_s=1.0)
    result = analysis.compare([both, written], labels=["both", "written"])
    table = result.table.set_index(["metric", "job"])
    for metric in ("mean_read_size", "read_size_histogram", "sequential_read_fraction",
                   "consecutive_read_fraction"):
        assert table.loc[(metric, "written"), "similarity"] == 0.0, metric
    assert result.score < 0.6


def test_two_random_orders_of_few_reads_are_alike_and_in_order_is_not(tmp_path):
    """IOR -z on one shared file, 3 ranks, 48 reads of 32 KiB: the replay draws a random
    order of its own, 0.58 forward against the real 0.48, no difference for 48 reads (0.87
    before, gated by the order); the same workload read in order scores under 0.6."""
    from fitted_runs import replay_like, run_changed

    name = "ior_posix_shared_random_3r"
    (tmp_path / "right").mkdir()
    (tmp_path / "wrong").mkdir()
    r = replay_like(name, tmp_path / "right", equal=("files", "interfaces", "bytes_written"))
    assert r.comparison.row("read_order")[0] < 0.55

    def in_order(w):
        w["reader"]["sample_shuffle"] = "off"
        w["io"]["write_order"] = "sequential"
    assert run_changed(name, tmp_path / "wrong", in_order).score < 0.6

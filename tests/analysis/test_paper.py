"""The DLIO paper's study on the emulator: six applications at 2 ranks, from their op logs, set
beside the real applications' Darshan figures."""

import json

import pytest

import analysis
from analysis.paper import APPS, calibrated_compute, render_paper, scaled_overrides
from analysis.paper_reference import METRICS, REAL, comparison, errors, within_targets
from dlio_mpi import config


def test_scaled_workloads_are_valid():
    for app in APPS:
        cfg = config.load([f"workload={app}", *scaled_overrides(app, 2)])
        config.check_ranks(cfg, 2)
        assert cfg.train.epochs == 1


def test_errors_and_targets():
    real = REAL["imagenet"]
    emu = {"io_share": 0.0982, "files": 4, "xfer_mean": 287.0e3, "xfer_median": 256e3,
           "seq": 94.6, "consec": 99.7}
    err = errors(emu, real)
    assert err["io_share"] == pytest.approx(1.0, rel=1e-3)
    assert err["xfer_mean"] == pytest.approx(0.0996, abs=1e-3) and err["xfer_median"] == 0
    assert err["seq"] == pytest.approx(-5.1) and err["consec"] == 0
    assert within_targets(err) == {"xfer_mean": True, "xfer_median": True, "seq": False,
                                   "consec": True}
    assert within_targets(errors({**emu, "seq": None}, real))["seq"] is None


def test_calibrated_compute():
    assert calibrated_compute(0.01, 0.2) == pytest.approx(0.04)    # 0.01 of 0.05 per step
    # a step of 0.012 s without compute (0.01 of it I/O): 0.038 s more make it 0.05 s
    assert calibrated_compute(0.01, 0.2, 0.012) == pytest.approx(0.038)
    assert calibrated_compute(0.0, 0.2) > 0 and calibrated_compute(0.01, None) > 0


def test_paper_table_at_two_ranks(paper_run):
    result, out = paper_run
    assert result.exit_code == 0, result.output
    last = json.loads(result.output.strip().splitlines()[-1])
    assert list(last) == list(APPS)
    for app in APPS:
        assert set(METRICS) <= set(last[app]) and last[app]["real"] == {
            k: REAL[app][k] for k in METRICS}
    study = json.loads((out / "paper.json").read_text())
    rows = {row["application"]: row for row in study["rows"]}
    assert study["comparison"] == last == comparison(study["rows"])
    assert list(rows) == list(APPS) and study["ranks"] == 2
    assert {app: row["format"] for app, row in rows.items()} == {
        "cosmic_tagger": "hdf5", "ffn": "hdf5", "imagenet": "tfrecord",
        "cosmoflow_paper": "tfrecord", "frnn": "npz", "candle_nt3": "csv"}
    assert {app: row["files"] for app, row in rows.items()} == {
        "cosmic_tagger": 1, "ffn": 2, "imagenet": 4, "cosmoflow_paper": 4, "frnn": 16,
        "candle_nt3": 1}
    for app in ("cosmic_tagger", "ffn", "candle_nt3"):  # files every rank reads
        assert (rows[app]["shared_files"], rows[app]["unique_files"]) == (
            rows[app]["files"], 0), app
    for app in ("imagenet", "cosmoflow_paper", "frnn"):     # each file by one rank
        assert rows[app]["shared_files"] == 0, app
    for app in ("cosmic_tagger", "ffn"):
        assert rows[app]["interfaces"] == ["POSIX", "HDF5"]
    assert rows["candle_nt3"]["input_read"] == "at start"
    # the access patterns the real applications' logs show, within the targets: TensorFlow's
    # and pandas' 256 KiB streams, libhdf5's small chunk reads
    for app in ("imagenet", "cosmoflow_paper", "candle_nt3"):
        assert all(last[app]["within"].values()), (app, last[app])
        assert rows[app]["transfer_sizes"][2] == 262144
    # CosmicTagger: each event a crop of six gzip volumes (two products, three planes)
    assert all(last["cosmic_tagger"]["within"].values()), last["cosmic_tagger"]
    # FFN: 49^3 crops of a gzip label volume (small chunks) and image volume (large ones),
    # the chunks in the files in row-major order
    assert all(last["ffn"]["within"].values()), last["ffn"]
    # FRNN: a shot file loaded through a 4 MiB buffer: the real run's transfer sizes
    assert {k: last["frnn"]["within"][k] for k in ("xfer_mean", "xfer_median")} == {
        "xfer_mean": True, "xfer_median": True}
    assert last["frnn"]["xfer_median"] == 255     # the zip central directory
    for row in rows.values():
        assert 0 < row["io_share"] < 0.5 and row["computation_time"] > 0
    text = (out / "paper.txt").read_text()
    assert text == render_paper(analysis.paper.PaperStudy(
        ranks=2, rows=study["rows"], run_dirs=study["run_dirs"]))
    assert "real (512 ranks)" in text and "emulated (2 ranks)" in text


def test_fit_of_the_candle_run(paper_run):
    """A real run of CANDLE's pattern: every rank reads the one CSV file whole at start."""
    _, out = paper_run
    fitted = analysis.fit(out / "runs" / "candle_nt3")
    w = fitted.workload
    assert (w["dataset"]["format"], w["dataset"]["num_files_train"]) == ("csv", 1)
    assert (w["io"]["layout"], w["io"]["read_type"]) == ("replicated", "memory")

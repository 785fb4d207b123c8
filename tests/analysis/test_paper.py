"""The DLIO paper's study on the emulator: six applications at 2 ranks, from their op logs."""

import json

import analysis
from analysis.paper import APPS, render_paper, scaled_overrides
from dlio_mpi import config


def test_scaled_workloads_are_valid():
    for app in APPS:
        cfg = config.load([f"workload={app}", *scaled_overrides(app, 2)])
        config.check_ranks(cfg, 2)
        assert cfg.train.epochs == 1


def test_paper_table_at_two_ranks(paper_run):
    result, out, _ = paper_run
    assert result.exit_code == 0, result.output
    study = json.loads(result.output)
    rows = {row["application"]: row for row in study["rows"]}
    assert list(rows) == list(APPS) and study["ranks"] == 2
    assert {app: row["format"] for app, row in rows.items()} == {
        "cosmic_tagger": "hdf5", "ffn": "hdf5", "imagenet": "tfrecord",
        "cosmoflow_paper": "tfrecord", "frnn": "npz", "candle_nt3": "csv"}
    assert {app: row["files"] for app, row in rows.items()} == {
        "cosmic_tagger": 1, "ffn": 1, "imagenet": 8, "cosmoflow_paper": 8, "frnn": 16,
        "candle_nt3": 1}
    for app in ("cosmic_tagger", "ffn", "candle_nt3"):  # one file every rank reads
        assert (rows[app]["shared_files"], rows[app]["unique_files"]) == (1, 0), app
    for app in ("cosmic_tagger", "ffn"):
        assert rows[app]["interfaces"] == ["POSIX", "HDF5"]
    for app in ("imagenet", "cosmoflow_paper", "frnn", "candle_nt3"):
        assert rows[app]["interfaces"] == ["POSIX"]
    assert rows["candle_nt3"]["input_read"] == "at start"
    for app in APPS[:-1]:
        assert rows[app]["input_read"] == "on demand", app
    # whole samples in one read: 40 KiB and 32 KiB HDF5 rows, TFRecord records with framing
    assert rows["cosmic_tagger"]["transfer_sizes"] == [40960, 40960, 40960]
    assert rows["ffn"]["transfer_sizes"] == [32768, 32768, 32768]
    assert rows["imagenet"]["transfer_sizes"] == [262160, 262160, 262160]
    assert rows["cosmoflow_paper"]["transfer_sizes"] == [131088, 131088, 131088]
    # CANDLE: each rank reads the whole 1 MiB file (32 samples of 32 KiB) in one read
    assert rows["candle_nt3"]["bytes_read"] == 2 * 32 * 32768
    for row in rows.values():
        assert 0 < row["io_share"] < 0.5
    assert (out / "paper.txt").read_text() == render_paper(
        analysis.paper.PaperStudy(ranks=2, rows=study["rows"], run_dirs=study["run_dirs"]))
    assert json.loads((out / "paper.json").read_text()) == study


def test_paper_run_time(paper_run):
    """The whole study at 2 ranks, six mpiexec runs and their characterization: under a
    minute."""
    result, _, seconds = paper_run
    assert result.exit_code == 0 and seconds < 60


def test_fit_of_the_candle_run(paper_run):
    """A real run of CANDLE's pattern: every rank reads the one CSV file whole at start."""
    _, out, _ = paper_run
    fitted = analysis.fit(out / "runs" / "candle_nt3")
    w = fitted.workload
    assert (w["dataset"]["format"], w["dataset"]["num_files_train"]) == ("csv", 1)
    assert (w["io"]["layout"], w["io"]["read_type"]) == ("replicated", "memory")

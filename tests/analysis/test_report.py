"""Reports: markdown, a self-contained HTML page and PNG figures."""

import base64
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.reporting import plots
from oplog_fixtures import call, write_run

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _png_size(data):
    assert data.startswith(PNG_SIGNATURE)
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def _report(source, out):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", analysis.AnalysisWarning)
        return analysis.write_report(source, out)


def _check_files(files, expected_figures):
    assert list(files.figures) == expected_figures
    markdown = Path(files.markdown).read_text()
    page = Path(files.html).read_text()
    embedded = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", page)
    assert len(embedded) == len(expected_figures)
    for name, data in zip(expected_figures, embedded):
        png = Path(files.figures[name]).read_bytes()
        assert base64.b64decode(data) == png
        width, height = _png_size(png)
        assert width == 900 and 300 <= height <= 800
        assert f"]({name}.png)" in markdown
    # self-contained: nothing fetched from elsewhere
    assert not re.search(r"(src|href)=['\"](?!data:)", page)
    assert "<link" not in page and "<script" not in page
    return markdown, page


def test_report_of_a_run_directory(tmp_path):
    calls = [call("open", 0, 1000)] + [
        call("read", 2000 + i * 10**6, 5000, offset=i * 65536, nbytes=65536) for i in range(50)]
    run = write_run(tmp_path / "run", {0: [calls], 1: [calls[:20]]}, phase_s=0.1)
    files = _report(run, tmp_path / "report")
    markdown, page = _check_files(files, ["transfer_sizes", "timeline", "rank_balance",
                                          "bandwidth"])
    assert markdown.startswith("# I/O report: dlio_mpi run (workload handmade)\n")
    assert "| source | dlio_mpi op logs |" in markdown
    assert "| interfaces | POSIX |" in markdown
    assert "<th>processes</th><td>2</td>" in page


def test_report_of_a_log_with_dxt(log, tmp_path):
    files = _report(log("mpi_io_test_with_dxt__"), tmp_path / "r")
    markdown, _ = _check_files(files, ["transfer_sizes", "timeline", "rank_balance",
                                       "bandwidth"])
    assert "| input read (DXT_POSIX) | on demand" in markdown
    assert "| metric | POSIX | STDIO | MPI-IO |" in markdown


def test_report_of_a_log_with_heatmaps_but_no_trace(log, tmp_path):
    files = _report(log("e3sm_io_heatmaps_and_dxt__"), tmp_path / "r")
    _check_files(files, ["transfer_sizes", "timeline", "rank_balance", "bandwidth"])


def test_report_of_an_old_log_without_trace_or_heatmap(log, tmp_path):
    """One record reduced over the 4 ranks: its bytes spread over the ranks as "shared", the
    timeline's spans as bands."""
    files = _report(log("release_logs__mpi-io-test-x86_64-3.0.0"), tmp_path / "r")
    _check_files(files, ["transfer_sizes", "timeline", "rank_balance"])


def test_report_of_an_empty_log(log, tmp_path):
    files = _report(log("empty_log__"), tmp_path / "r")
    _check_files(files, [])


def test_bandwidth_spreads_bytes_over_a_calls_duration():
    edges = np.linspace(0.0, 4.0, 5)  # 1 s bins
    rate = plots._spread(np.array([0.5, 1.0]), np.array([0.5, 3.0]),
                         np.array([100.0, 400.0]), edges)
    assert rate.tolist() == [100.0, 200.0, 200.0, 0.0]


def test_spans_are_merged_per_rank():
    rank, start, end = plots.merged_spans(np.array([1, 0, 0, 0]), np.array([0.0, 0.0, 1.0, 5.0]),
                                          np.array([1.0, 2.0, 1.5, 6.0]), gap=0.5)
    assert (rank.tolist(), start.tolist(), end.tolist()) == ([0, 0, 1], [0.0, 5.0, 0.0],
                                                             [2.0, 6.0, 1.0])


@pytest.mark.parametrize("nprocs", [3, 200])
def test_rank_balance_of_many_ranks_is_a_sorted_curve(nprocs, tmp_path):
    calls = {r: [[call("read", 1000, 10, offset=0, nbytes=100 * (r + 1))]] for r in range(nprocs)}
    run = write_run(tmp_path / "run", calls, files=1)
    job = analysis.load_job(run)
    png = plots.rank_balance(job, analysis.characterize(job))
    assert _png_size(png) == (900, 400)

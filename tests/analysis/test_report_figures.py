"""The report's figures say what their data is, show every rank's share of the bytes (shared
records included) and never print bar labels over one another."""
import itertools
import warnings

import numpy as np

import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.reporting import plots
from oplog_fixtures import call, write_run

FIGURES = (plots.transfer_sizes_figure, plots.timeline_figure, plots.rank_balance_figure,
           plots.bandwidth_figure)


def _job(source, dxt=True):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", analysis.AnalysisWarning)
        job = analysis.load_job(source, dxt=dxt)
        return job, analysis.characterize(job)


def test_bar_labels_that_would_overlap_are_left_out(log):
    """IOR through HDF5: six series of ten buckets, counts side by side in narrow bars."""
    job, char = _job(log("ior_pnetcdf_hdf5__shane_ior-HDF5"), dxt=False)
    fig = plots.transfer_sizes_figure(job, char)
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    labels = [t for t in ax.texts if t.get_text()]
    shown = [t.get_window_extent(renderer) for t in labels if t.get_visible()]
    assert shown and len(shown) < len(labels)
    assert not any(a.overlaps(b) for a, b in itertools.combinations(shown, 2))
    left_out = len(labels) - len(shown)
    assert ax.get_title(loc="right") == (f"Darshan counters; {left_out} of {len(labels)} "
                                         "counts left out where they would overlap")


def test_a_run_directory_s_figures_are_captioned_as_its_op_log(tmp_path):
    calls = {r: [[call("read", 1000 + i * 1000, 500, file=r, offset=i * 100, nbytes=100)
                  for i in range(4)]] for r in range(2)}
    job, char = _job(write_run(tmp_path / "run", calls, phase_s=1.0))
    captions = {f.__name__: f(job, char).axes[0].get_title(loc="right") for f in FIGURES}
    assert captions == {
        "transfer_sizes_figure": "dlio_mpi op log",
        "timeline_figure": "dlio_mpi op log, POSIX calls, 8 calls",
        "rank_balance_figure": "dlio_mpi op log, POSIX",
        "bandwidth_figure": "dlio_mpi op log, POSIX calls"}


def test_bytes_per_rank_spreads_the_records_of_all_ranks(log):
    """One record reduced over the 4 ranks (a file every rank opened): its bytes are spread
    evenly over the ranks, drawn as shared."""
    job, char = _job(log("release_logs__mpi-io-test-x86_64-3.0.0"), dxt=False)
    own, shared = plots.bytes_per_rank(job, char)
    assert not own["read"].any() and not own["write"].any()
    assert shared["read"] + shared["write"] == char.totals.bytes_read + char.totals.bytes_written
    ax = plots.rank_balance_figure(job, char).axes[0]
    labels = [text.get_text() for text in ax.get_legend().get_texts()]
    assert all("shared (spread evenly)" in label for label in labels)
    heights = np.array([bar.get_height() for bar in ax.patches]).reshape(len(labels), 4)
    scale = 2**20 if max(shared.values()) / 4 >= 2**20 else 1024
    expected = [v / 4 / scale for v in (shared["read"], shared["write"]) if v]
    assert np.allclose(heights, np.array(expected)[:, None])
    assert "spread evenly over 4 ranks" in ax.get_title(loc="right")

"""The replay's text: the fitted workload, the two jobs' structure side by side, and every
metric of the score, those that differ and those that match."""
from types import SimpleNamespace

import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.comparison.compare import METRICS
from dlio_mpi_analysis.replays.replay import Replay, structure
from dlio_mpi_analysis.replays.replay import render_replay as replay_text  # runs nothing
from oplog_fixtures import call, write_run

WORKLOAD = {"dataset": {"format": "npy", "num_files_train": 1, "num_samples_per_file": 1,
                        "record_length": 1000},
            "reader": {"transfer_size": 100, "batch_size": 1, "read_threads": 0},
            "io": {"interface": "posix", "layout": "file_per_sample", "read_type": "pread"},
            "train": {"epochs": 1, "computation_time": 0.0}}


def test_replay_text_shows_every_metric_of_the_score(tmp_path):
    real = write_run(tmp_path / "real", {0: [[call("read", 1000 + i * 2000, 100,
                                                   offset=100 + i * 100, nbytes=100)
                                              for i in range(10)]]}, phase_s=1.0)
    emulated = write_run(tmp_path / "emulated", {0: [[call("read", 1000, 1000, offset=100,
                                                           nbytes=1000)]]}, phase_s=1.0)
    comparison = analysis.compare([real, emulated], labels=["real", "emulated"])
    jobs = [analysis.characterize(real), analysis.characterize(emulated)]
    result = Replay(fit=SimpleNamespace(workload=WORKLOAD, notes=[], ranks=1), run_dir="run",
                    comparison=comparison, real=structure(jobs[0]),
                    emulated=structure(jobs[1]))
    lines = replay_text(result).splitlines()
    assert next(line for line in lines if line.startswith("mean_read_size")).split()[1:] \
        == ["100", "B", "1,000", "B"]
    shown = {line.split()[0] for line in lines if line and not line.startswith(" ")}
    # the metrics that match (bytes read, files) as well as those that differ
    assert {metric for metric, _, _, _ in METRICS} <= shown
    assert any(line.startswith("  cost most: mean_read_size") for line in lines)

"""Whole-file loads (whole_file_loads: each file read whole by one rank, an open per load, in
4 MiB reads with a pause after each, 5 times): a sample is the file."""
import numpy as np
import pytest

import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.replays.replay import replay

from fitted_runs import TRUTH, log, run_changed

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec


def test_the_sample_is_the_whole_file():
    t = TRUTH["whole_file_loads"]
    f = analysis.fit(log("whole_file_loads"))
    ds, rd = f.workload["dataset"], f.workload["reader"]
    sizes = np.array(t["files_bytes"])
    assert (ds["num_files_train"], ds["num_samples_per_file"]) == (t["num_files"], 1)
    assert ds["record_length"] == pytest.approx(sizes.mean(), rel=0.01)
    assert ds["record_length_stdev"] == pytest.approx(sizes.std(), rel=0.01)
    assert (rd["transfer_size"], rd["access"], rd["eof_reads"]) \
        == (t["read_size"], "stream", t["eof_reads"])
    assert rd["sample_shuffle"] == "off" and f.workload["io"]["layout"] == "multi"
    assert f.workload["train"]["epochs"] == t["epochs"]
    assert f.evidence["whole_file_loads"]["loads"] == t["loads_per_file"] * t["num_files"]
    assert any("a sample is the whole file" in n for n in f.notes)


def test_replay_keeps_each_file_on_one_rank(tmp_path):
    r = replay(log("whole_file_loads"), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.emulated["shared_files"] == r.real["shared_files"] == 0
    assert r.emulated["bytes_read"] == pytest.approx(r.real["bytes_read"], rel=0.01)
    assert r.comparison.row("consecutive_read_fraction")[1] == pytest.approx(
        r.comparison.row("consecutive_read_fraction")[0], abs=0.05)


def test_shuffled_4_mib_samples_score_low(tmp_path):
    """The shape fitted before: 4 MiB samples, several per file, shuffled over the ranks."""
    def pieces(w):
        ds, rd = w["dataset"], w["reader"]
        ds.update(record_length=4 << 20, num_samples_per_file=2)
        ds.pop("record_length_stdev")
        rd.update(sample_shuffle="seed", batch_size=3)
        rd.pop("access")
        rd.pop("eof_reads")
    c = run_changed("whole_file_loads", tmp_path, pieces)
    assert c.score < 0.6, c.table

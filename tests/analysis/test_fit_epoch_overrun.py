"""Input pipelines that read past an epoch's end (real logs, Darshan 3.5.0 with DXT, truth in
truth.json): tf.data's prefetch over a repeated dataset reads the next pass's first files
before the epoch's iterator is dropped, and the next epoch reads them again. Those short
passes are no epochs: the fit takes the full passes for the epochs and the files read ahead
for reader.epoch_overrun, which the emulator reads and drops after each epoch."""
import pytest

import dlio_mpi_analysis as analysis

from fitted_runs import log, replay_like

pytestmark = pytest.mark.mpi      # its replays launch ranks under mpiexec


@pytest.mark.parametrize("name,ahead,steps", [
    ("dlio_resnet50_h100_tf_2r", 6, 6),     # a file a step
    ("dlio_resnet50_tf_shard", 4, 4),
    ("dlio_cosmoflow_tf_2r", 6, 2),         # 4 files a step: 1.5 steps read ahead
])
def test_passes_read_ahead_are_no_epochs(name, ahead, steps):
    """The DLIO benchmark's TensorFlow reader on 2 ranks: each rank's pass over its files,
    then the next pass's first files (about 6 of 16 in resnet50_h100: 0, 2, 4, 6, 8, 10
    read at 4.69-4.79 s after the pass ended at 4.48 s, read again from 4.80 s), twice: 2
    epochs (3 in resnet50_h100 and 4 in cosmoflow before, from the bytes or the passes)."""
    f = analysis.fit(log(name))
    assert f.workload["train"]["epochs"] == 2
    assert f.evidence["epoch_overrun"] == {"epochs": 2, "files": ahead}
    assert f.workload["reader"]["epoch_overrun"] == steps


@pytest.mark.parametrize("name,rel", [("dlio_resnet50_h100_tf_2r", 0.02),
                                      ("dlio_resnet50_tf_shard", 0.01)])
def test_the_files_read_ahead_are_replayed(tmp_path, name, rel):
    """The replay reads the files read ahead too: the bytes within 1-2 % (resnet50_h100:
    +10.3 % with 3 epochs; resnet50_tf_shard: -11 % without them)."""
    replay_like(name, tmp_path, bytes_rel=rel)


@pytest.mark.parametrize("name", ["tfdata_list_files_interleave", "tfdata_read_file_map_jpeg",
                                  "dlio_tfrecord"])
def test_passes_without_a_pass_read_ahead(name):
    """Programs whose passes follow one another without a short one between (a new order
    every epoch, or nothing read ahead): no overrun."""
    f = analysis.fit(log(name))
    assert "epoch_overrun" not in f.evidence
    assert "epoch_overrun" not in f.workload["reader"]


def test_a_replay_without_the_overrun_misses_its_bytes(tmp_path):
    """resnet50_h100's workload with no files read ahead: 2 epochs of 16 files a rank for
    the job's 2 x 22: the bytes read 27 % short, and scored under the right shape."""
    from fitted_runs import run_changed

    def no_overrun(w):
        del w["reader"]["epoch_overrun"]
    wrong = run_changed("dlio_resnet50_h100_tf_2r", tmp_path, no_overrun)
    real, emulated = wrong.row("bytes_read")
    assert emulated < 0.8 * real
    assert wrong.score < 0.99


def test_a_ranks_own_files_out_of_order_are_no_file_shuffle(tmp_path):
    """cosmoflow_v100 on 2 ranks: TensorFlow opens a rank's 8 files at once, so their first
    reads come out of name order, but each file is read by its one rank every pass. A file
    shuffle would deal them to other ranks each epoch (15 of 16 files read by both ranks in
    the replay before: 0.059); kept on their ranks, in name order."""
    name = "dlio_cosmoflow_v100_tf_2r"
    f = analysis.fit(log(name))
    assert "file_shuffle" not in f.workload["reader"]
    r = replay_like(name, tmp_path, bytes_rel=0.02)
    assert r.comparison.row("shared_file_fraction") == (0, 0)

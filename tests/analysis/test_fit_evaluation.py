"""Evaluation phases fitted from a real log (dlio_npz_eval, truth.json): the DLIO benchmark
reading its valid/ files apart from its train/ files after epochs 1 and 3 of 4; and the
phases of traces made up to show what is not an evaluation."""
import numpy as np
import pandas as pd
import pytest

from dlio_mpi_analysis.characterization.evaluation_phases import evaluation_phases, set_of
from dlio_mpi_analysis.fitting.fit import fit
from dlio_mpi_analysis.fitting.fit_evaluation import schedule
from dlio_mpi_analysis.replays.replay import replay

from fitted_runs import TRUTH, log, run_changed

pytestmark = pytest.mark.mpi      # the replays launch ranks under mpiexec


def test_the_evaluation_set_and_its_schedule_are_fitted(tmp_path):
    truth = TRUTH["dlio_npz_eval"]
    f = fit(log("dlio_npz_eval"), data_folder=str(tmp_path / "d"),
            output_folder=str(tmp_path / "o"))
    w = f.workload
    assert w["workflow"]["evaluation"] is True
    assert w["dataset"]["num_files_train"] == truth["num_files"]
    assert w["dataset"]["num_files_eval"] == truth["num_files_eval"]
    assert w["dataset"]["num_samples_per_file"] == truth["samples_per_file"]
    assert w["dataset"]["record_length"] == pytest.approx(truth["sample_bytes"], rel=0.05)
    assert w["train"]["epochs"] == truth["epochs"]
    assert w["reader"]["batch_size_eval"] == truth["batch_size_eval"]
    ev = w["evaluation"]
    assert (ev["eval_after_epoch"], ev["epochs_between_evals"]) == (1, 2)
    assert ev["eval_time"] > 0
    assert f.evidence["evaluation"]["phases"] == len(truth["evaluations_after_epochs"])


def test_an_evaluation_of_two_steps_a_phase(tmp_path):
    """dlio_eval_batch: 2 evaluation steps of 2 samples a rank and phase, 0.01 s each, after
    every epoch: the pauses between the phases (the training epochs) are no evaluation step's
    (before: a phase was one step of 4, with 0.107 s of compute)."""
    truth = TRUTH["dlio_eval_batch"]
    w = fit(log("dlio_eval_batch"), data_folder=str(tmp_path / "d"),
            output_folder=str(tmp_path / "o")).workload
    assert (w["reader"]["batch_size"], w["reader"]["batch_size_eval"]) \
        == (truth["batch_size"], truth["batch_size_eval"])
    ev = w["evaluation"]
    assert (ev["eval_after_epoch"], ev["epochs_between_evals"]) == (1, 1)
    assert ev["eval_time"] == pytest.approx(truth["eval_time_per_step_s"], rel=0.3)


def test_the_replay_evaluates_as_the_job_did_and_reading_it_as_training_fails(tmp_path):
    """The replay reads the same bytes in as many calls, its evaluation phases where the
    job's were; the same files read as one training set (no evaluation) falls to the
    structure gate."""
    truth = TRUTH["dlio_npz_eval"]
    r = replay(log("dlio_npz_eval"), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    total = truth["posix_train"]["POSIX_BYTES_READ"] + truth["posix_eval"]["POSIX_BYTES_READ"]
    assert r.real["bytes_read"] == total
    assert r.emulated["bytes_read"] == pytest.approx(total, rel=0.01)
    assert r.comparison.row("evaluation_phases") == (2, 2)
    (tmp_path / "as_training").mkdir()

    def as_training(w):
        w["dataset"]["num_files_train"] += w["dataset"].pop("num_files_eval")
        w["workflow"]["evaluation"] = False
        del w["evaluation"]
    wrong = run_changed("dlio_npz_eval", tmp_path / "as_training", as_training)
    assert wrong.row("evaluation_phases") == (2, 0)
    assert wrong.score < 0.6, wrong.table


def _trace(rows):
    """A DXT-like read trace from (rank, file id, start[, offset]) rows, 4 KiB a read."""
    rows = [r if len(r) == 4 else (*r, 0) for r in rows]
    rank, ids, start, offset = zip(*rows)
    n = len(rows)
    return pd.DataFrame({"rank": np.array(rank), "id": np.array(ids, dtype=np.uint64),
                         "op": ["read"] * n, "offset": np.array(offset, dtype=np.int64),
                         "length": np.full(n, 4096), "start": np.array(start, float),
                         "end": np.array(start, float) + 0.001})


NAMES = {1: "/d/train/a.bin", 2: "/d/train/b.bin", 3: "/d/valid/c.bin",
         4: "/d/train/x/e.bin"}


def test_sets_are_the_first_folders_below_the_shared_one():
    assert set_of(NAMES) == {1: "train", 2: "train", 3: "valid", 4: "train"}
    assert set(set_of({1: "/d/a.bin", 2: "/d/b.bin"}).values()) == {""}


def test_sets_read_together_are_one_training_set():
    """Two folders drawn at random together alternate again and again: no evaluation; a set
    read first is no evaluation either."""
    rng = np.random.default_rng(0)
    names = {i: f"/d/{'train' if i < 100 else 'valid'}/{i}.bin" for i in range(200)}
    mixed = [(0, int(i), t) for t, i in enumerate(rng.permutation(200))]   # one epoch
    assert evaluation_phases(_trace(mixed), names) is None
    first = [(0, 3, 0), (0, 3, 1)] + [(0, 1, t) for t in range(2, 20)]
    assert evaluation_phases(_trace(first), NAMES) is None
    # subfolders read one after the other in each of 2 epochs: train/ then valid/ files, the
    # second set starting half way through each pass
    halves = {i: f"/d/{'train' if i < 10 else 'valid'}/{i}.bin" for i in range(20)}
    rows = [(0, i, e * 20 + i) for e in range(2) for i in range(20)]
    assert evaluation_phases(_trace(rows), halves) is None


def test_phases_after_epochs_and_a_stray_read():
    """Two passes over the training files with the valid/ file read after each; a prefetched
    training read inside the first phase is no phase of its own."""
    one_epoch = [(f, k * 4096) for f in (1, 2) for k in range(10)]     # each file whole
    rows, t = [], 0
    for phase in range(2):
        for fid, offset in one_epoch:
            rows.append((0, fid, t, offset))
            t += 1
        rows += [(0, 3, t), (0, 3, t + 1)] + ([(0, 1, t + 2)] if phase == 0 else []) \
            + [(0, 3, t + 3), (0, 3, t + 4)]
        t += 5
    found = evaluation_phases(_trace(rows), NAMES)
    assert found["phases"] == 2 and found["set_names"] == {"train": "train",
                                                          "evaluation": "valid"}
    assert found["eval_ids"] == {3}
    assert schedule(found["before_share"], 2)[:2] == (1, 1)


def test_schedules():
    assert schedule([0.25, 0.75], 4) == (1, 2, True)
    assert schedule([0.5], 4) == (2, 3, True)
    assert schedule([1.0], 4) == (4, 1, True)
    assert schedule([0.4, 0.75], 4)[2] is False      # 1.6 epochs: not after an epoch

"""Real-log fixtures and runs of fitted workloads for the fit tests: the log's path and truth,
and a fitted workload, changed, run on the emulator and compared with the real log."""
import json
import os

import pytest
import yaml

from dlio_mpi_analysis.comparison.compare import compare
from dlio_mpi_analysis.fitting.fit import fit
from dlio_mpi_analysis.replays.launch import run_emulator
from dlio_mpi_analysis.replays.replay import replay

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                    "darshan")
with open(os.path.join(HERE, "truth.json")) as _f:
    TRUTH = json.load(_f)


def log(name):
    """A fixture's log: NAME.darshan, or the directory NAME of a set of non-MPI logs."""
    path = os.path.join(HERE, name)
    return path if os.path.isdir(path) else f"{path}.darshan"


def run_changed(name, tmp_path, change):
    """The score against the real log of an emulator run of the workload fitted to log
    ``name`` after ``change(workload)`` (a workload of another shape)."""
    fitted = fit(log(name), data_folder=str(tmp_path / "data"),
                 output_folder=str(tmp_path / "run"))
    change(fitted.workload)
    path = tmp_path / "changed.yaml"
    path.write_text(yaml.safe_dump(fitted.workload, sort_keys=False))
    run_emulator("changed", fitted.ranks, ["run", "--config", str(path), "io.keep_oplog=true",
                                           "workflow.generate_data=true"])
    return compare([log(name), str(tmp_path / "run")], labels=["real", "emulated"])


def replay_like(name, tmp_path, equal=("files", "interfaces", "bytes_written"), bytes_rel=0.01):
    """The replay of log ``name``, checked to look like the real program: a score of 0.95 or
    more, the ``equal`` figures the same, the bytes read within ``bytes_rel``."""
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    for key in equal:
        assert r.emulated[key] == r.real[key], key
    assert r.emulated["bytes_read"] == pytest.approx(r.real["bytes_read"], rel=bytes_rel)
    return r


def fitted_shape(name, *also):
    """The fit of log ``name``, checked against its truth: ranks, files, samples per file,
    batch and epochs, and each of ``also`` ("sample_bytes": the record length, exactly;
    "read_threads")."""
    fitted = fit(log(name))
    w = fitted.workload
    ds, rd = w["dataset"], w["reader"]
    t = TRUTH[name]
    assert fitted.ranks == t["ranks"]
    assert (ds["num_files_train"], ds["num_samples_per_file"]) \
        == (t["num_files"], t["samples_per_file"])
    assert (rd["batch_size"], w["train"]["epochs"]) == (t["batch_size"], t["epochs"])
    if "sample_bytes" in also:
        assert ds["record_length"] == t["sample_bytes"]
    if "read_threads" in also:
        assert rd["read_threads"] == t["read_threads"]
    return fitted, w

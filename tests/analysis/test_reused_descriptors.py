"""I/O that Darshan counted under a file through a reused descriptor number (a duplicate closed
by C stdio's fclose out of the POSIX module's sight), left out by the loader: on a torch
DataLoader's logs (its workers' pipe traffic under the .npy files) and on logs of a small C
program that reproduces the mechanism (tests/fixtures/darshan/dup_descriptor.c)."""
import dataclasses
import json
import os

import numpy as np
import pytest
from click.testing import CliRunner

import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.loading import reused_descriptors
from dlio_mpi_analysis.cli import analyze
from dlio_mpi_analysis.loading.logfile import read_log
from dlio_mpi_analysis.loading.loader import log_paths
from dlio_mpi_analysis.loading.trace_ops import segments_frame

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                    "darshan")
with open(os.path.join(HERE, "truth.json")) as _f:
    TRUTH = json.load(_f)
TORCH = os.path.join(HERE, "torch_npy_workers")
DUP = os.path.join(HERE, "dup_descriptor.darshan")
DUP_NO_DXT = os.path.join(HERE, "dup_descriptor_nodxt.darshan")
MARK = reused_descriptors.NOTE_MARK


def _raw(path, dxt=True):
    """The logs of ``path`` as read_log has them, nothing left out."""
    return [read_log(p, ("POSIX", "STDIO"), ("DXT_POSIX",) if dxt else ())
            for p in log_paths(path)]


def _frames(log):
    """A log read by read_log with its records and traces as DataFrames (the traces' op as
    its names), as DarshanJob.frames() gives a job's."""
    return dataclasses.replace(log, records={m: t.frame() for m, t in log.records.items()},
                               dxt_segments={m: segments_frame(t)
                                             for m, t in log.dxt_segments.items()})


def _by_name(job, module="POSIX"):
    frame = job.records[module]
    return {os.path.basename(job.names[int(i)]): frame.iloc[k]
            for k, i in enumerate(frame["id"].to_numpy())}


def _notes(warnings):
    return [w for w in warnings if w.startswith(MARK)]


@pytest.mark.parametrize("dxt", [True, False])
def test_torch_workers_data_records_hold_numpy_loads_only(dxt):
    """numpy.load of a .npy file: one 4096-byte buffer fill at offset 0 through POSIX (the
    header), one fread of the array through STDIO. Each file is loaded once per epoch, by a
    worker of that epoch: per file, exactly 2 POSIX reads of 4096 bytes and 2 STDIO reads of
    the array, nothing written. The raw logs hold 24 reads and 19 writes more."""
    t = TRUTH["torch_npy_workers"]
    size, array = t["files_bytes_min_max"][0], t["sample_bytes"]
    header = min(4096, size)
    raw = _raw(TORCH)
    assert sum(int(log.records["POSIX"]["POSIX_READS"].sum()) for log in raw if log.records) \
        == 2 * t["num_files"] + 24
    job = analysis.load(TORCH, dxt=dxt).frames()
    posix, stdio = job.records["POSIX"], job.records["STDIO"]
    data = posix.assign(name=[job.names[int(i)] for i in posix["id"]])
    assert len(data) == 2 * t["num_files"] and data["name"].nunique() == t["num_files"]
    per_file = data.groupby("name")[["POSIX_READS", "POSIX_BYTES_READ", "POSIX_WRITES",
                                     "POSIX_BYTES_WRITTEN", "POSIX_SEQ_READS",
                                     "POSIX_CONSEC_READS", "POSIX_SEQ_WRITES",
                                     "POSIX_SIZE_READ_1K_10K"]].sum()
    assert (per_file["POSIX_READS"] == t["epochs"]).all()
    assert (per_file["POSIX_BYTES_READ"] == t["epochs"] * header).all()
    assert (per_file["POSIX_SIZE_READ_1K_10K"] == t["epochs"]).all()
    assert (per_file[["POSIX_WRITES", "POSIX_BYTES_WRITTEN", "POSIX_SEQ_READS",
                      "POSIX_CONSEC_READS", "POSIX_SEQ_WRITES"]] == 0).all().all()
    assert (data["POSIX_MAX_BYTE_READ"] == header - 1).all()
    assert (data["POSIX_MAX_BYTE_WRITTEN"] == 0).all()
    assert (data["POSIX_F_WRITE_START_TIMESTAMP"] == 0).all()
    assert (stdio["STDIO_READS"] == 1).all() and (stdio["STDIO_BYTES_READ"] == array).all()
    assert len(stdio) == 2 * t["num_files"]
    if dxt:
        trace = job.dxt_segments["DXT_POSIX"]
        assert len(trace) == 2 * t["num_files"]
        assert set(trace["op"]) == {"read"} and (trace["offset"] == 0).all()
        assert (trace["length"] == header).all()
    else:
        assert job.dxt_segments is None
    [note] = _notes(job.warnings)
    assert "24 reads (273 B) and 19 writes (214 B)" in note and "s_000.npy" in note


def test_characterize_prints_the_note():
    result = CliRunner().invoke(analyze, ["characterize", TORCH])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if MARK in line]
    assert len(lines) == 1
    assert "24 reads (273 B) and 19 writes (214 B) at or past the file's end" in lines[0]
    assert "POSIX_DUPS" in lines[0]
    c = analysis.characterize(TORCH)
    assert c.totals.bytes_written == 0
    assert c.modules["POSIX"].ops["reads"] == 64


def test_fit_and_compare_pass_the_note_on():
    fitted = analysis.fit(TORCH)
    assert _notes(fitted.notes) == _notes(analysis.load(TORCH).warnings)
    assert fitted.evidence["file_size"]["max"] == TRUTH["torch_npy_workers"][
        "files_bytes_min_max"][1]
    comparison = analysis.compare([TORCH, TORCH], labels=["a", "b"])
    assert [n for n in comparison.notes if MARK in n] == \
        [f"{label}: {note}" for label in "ab" for note in _notes(fitted.notes)]


def test_duplicate_without_io_past_the_end_is_unchanged():
    """clean.bin: a load with a duplicate (POSIX_DUPS 1), its last read a read of 0 bytes at
    the file's end, nothing past it: the record and its trace are as logged."""
    [raw] = [_frames(log) for log in _raw(DUP)]
    job = analysis.load(DUP, dxt=True).frames()
    ids = {os.path.basename(n): i for i, n in job.names.items()}
    clean = ids["clean.bin"]
    before = raw.records["POSIX"][raw.records["POSIX"]["id"] == clean].reset_index(drop=True)
    after = job.records["POSIX"][job.records["POSIX"]["id"] == clean].reset_index(drop=True)
    assert int(before.at[0, "POSIX_DUPS"]) == 1
    assert before.equals(after)
    trace = job.dxt_segments["DXT_POSIX"]
    kept = trace[trace["id"] == clean]
    assert list(zip(kept["op"], kept["offset"], kept["length"])) == \
        [("read", 0, 4096), ("read", 8192, 0)]


def test_other_descriptors_io_is_left_out_of_the_duplicated_files_record():
    """polluted.bin: the same load, then a socket pair's read of 20 bytes and write of 7
    counted under it: left out, the record then counts what clean.bin's load counts."""
    t = TRUTH["dup_descriptor"]
    [raw] = [_frames(log) for log in _raw(DUP)]
    job = analysis.load(DUP, dxt=True).frames()
    records, logged = _by_name(job), _by_name(_job_of(raw))
    assert (logged["polluted.bin"]["POSIX_READS"], logged["polluted.bin"]["POSIX_WRITES"]) \
        == (3, 1)
    same = [c for c in records["clean.bin"].index if c.startswith("POSIX_") and not
            c.startswith("POSIX_F_")]
    assert records["polluted.bin"][same].equals(records["clean.bin"][same])
    assert records["polluted.bin"]["POSIX_READS"] == t["per_load"]["POSIX_READS"]
    assert records["polluted.bin"]["POSIX_BYTES_READ"] == t["per_load"]["POSIX_BYTES_READ"]
    assert records["polluted.bin"]["POSIX_WRITES"] == 0
    assert records["polluted.bin"]["POSIX_F_WRITE_TIME"] == 0
    trace = job.dxt_segments["DXT_POSIX"]
    polluted = {i for i, n in job.names.items() if n.endswith("polluted.bin")}
    mine = trace[trace["id"].isin(polluted)]
    assert list(zip(mine["op"], mine["offset"], mine["length"])) == \
        [("read", 0, 4096), ("read", t["file_bytes"], 0)]
    [note] = _notes(job.warnings)
    assert "polluted.bin" in note and "clean.bin" not in note
    assert "1 read (20 B) and 1 write (7 B)" in note


def _job_of(log):
    """A DarshanJob-like view (records, names) of one raw log."""
    return type("Raw", (), {"records": log.records, "names": log.names})


def test_without_dxt_the_counters_are_kept_and_noted():
    [raw] = [_frames(log) for log in _raw(DUP_NO_DXT, dxt=False)]
    assert "DXT_POSIX" not in raw.modules
    job = analysis.load(DUP_NO_DXT).frames()
    assert job.records["POSIX"].equals(raw.records["POSIX"])
    [note] = _notes(job.warnings)
    assert "polluted.bin" in note and "clean.bin" not in note
    assert "may be counted" in note and "counted as logged" in note
    text = CliRunner().invoke(analyze, ["characterize", DUP_NO_DXT]).output
    assert sum(MARK in line for line in text.splitlines()) == 1


def test_an_incomplete_trace_keeps_the_counters():
    """A record whose trace lacks one of its counted operations cannot be recomputed."""
    [log] = _raw(DUP)
    polluted = [i for i, n in log.names.items() if n.endswith("polluted.bin")]
    trace = log.dxt_segments["DXT_POSIX"]
    kept = np.ones(len(trace), dtype=bool)
    kept[np.flatnonzero(np.isin(trace["id"], np.array(polluted, dtype=np.uint64)))[0]] = False
    log.dxt_segments["DXT_POSIX"] = trace[kept]
    before = log.records["POSIX"].frame()
    notes = reused_descriptors.clean([log])
    assert log.records["POSIX"].frame().equals(before)
    assert len(notes) == 1 and "may be counted" in notes[0] and "polluted.bin" in notes[0]


def test_a_file_the_job_writes_is_not_cleaned():
    """Writes elsewhere to the file (here: its STDIO record) make accesses past its extent
    possibly its own: the record stays as logged, without a note."""
    [log] = _raw(DUP)
    stdio = log.records["STDIO"]
    polluted = [i for i, n in log.names.items() if n.endswith("polluted.bin")]
    stdio["STDIO_WRITES"][np.isin(stdio["id"], np.array(polluted, dtype=np.uint64))] = 1
    before = log.records["POSIX"].frame()
    assert reused_descriptors.clean([log]) == []
    assert log.records["POSIX"].frame().equals(before)


def test_numpy_loads_with_duplicates_and_no_reuse_are_unchanged():
    """A real MPI log of numpy.load (16 POSIX records with POSIX_DUPS > 0, no other
    descriptor's I/O): records and trace as logged, no note."""
    path = os.path.join(HERE, "numpy_npy.darshan")
    [raw] = [_frames(log) for log in _raw(path)]
    assert int((raw.records["POSIX"]["POSIX_DUPS"] > 0).sum()) == 16
    job = analysis.load(path, dxt=True).frames()
    assert job.records["POSIX"].equals(raw.records["POSIX"])
    assert len(job.dxt_segments["DXT_POSIX"]) == len(raw.dxt_segments["DXT_POSIX"])
    assert not _notes(job.warnings)
    assert np.array_equal(job.dxt_segments["DXT_POSIX"]["offset"].to_numpy(),
                          raw.dxt_segments["DXT_POSIX"]["offset"].to_numpy())

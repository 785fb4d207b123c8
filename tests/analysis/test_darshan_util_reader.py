"""read_log reads logs through darshan-util's C library without PyDarshan, and gives what
PyDarshan gives: the same records, traces, names, job, mounts, hints, modules and heat maps,
on every log of tests/fixtures/darshan and of ../shared/darshan-logs that it reads."""
import glob
import os
import subprocess
import sys

import darshan
import numpy as np
import pytest

from dlio_mpi_analysis.errors import LogError
from dlio_mpi_analysis.loading.logfile import read_log
from dlio_mpi_analysis.loading.trace_ops import segments_frame

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(os.path.dirname(HERE), "fixtures", "darshan")
SHARED = os.path.join(os.path.dirname(os.path.dirname(HERE)), "..", "shared", "darshan-logs")
MODULES = ("POSIX", "STDIO", "MPI-IO", "H5F", "H5D")
TRACES = ("DXT_POSIX", "DXT_MPIIO")
HEATMAP_MODULES = {"POSIX": "POSIX", "STDIO": "STDIO", "MPIIO": "MPI-IO"}


def logs(folder):
    return sorted(glob.glob(os.path.join(folder, "**", "*.darshan"), recursive=True))


def assert_pydarshans(path):
    """Every field of read_log's LogContents against PyDarshan's report of the same log."""
    try:
        contents = read_log(path, MODULES, TRACES)
    except LogError:
        pytest.skip("not a readable log (PyDarshan is not asked: it may crash on it)")
    with darshan.DarshanReport(path, read_all=False) as report:
        assert_reports(contents, report)


def assert_reports(contents, report):
    job = report.metadata["job"]
    assert contents.version == job["log_ver"]
    assert contents.exe == report.metadata["exe"]
    assert (contents.nprocs, contents.job_id, contents.uid) == (job["nprocs"], job["jobid"],
                                                                job["uid"])
    assert contents.start_time == job["start_time_sec"] + job["start_time_nsec"] * 1e-9
    assert contents.end_time == job["end_time_sec"] + job["end_time_nsec"] * 1e-9
    assert contents.run_time == job["run_time"]
    assert contents.hints == job["metadata"].get("h", "")
    assert contents.library_version == job["metadata"].get("lib_ver", "")
    assert contents.mounts == tuple(report.data["mounts"])
    assert contents.modules == {mod: info["partial_flag"] for mod, info in report.modules.items()}
    report.read_name_records()
    assert contents.names == report.name_records

    assert set(contents.records) == {mod for mod in MODULES if mod in report.modules}
    for mod in contents.records:
        report.mod_read_all_records(mod, dtype="numpy")
        rows = list(report.records[mod])
        frame = contents.records[mod].frame()
        assert frame["id"].tolist() == [r["id"] for r in rows], mod
        assert frame["rank"].tolist() == [r["rank"] for r in rows], mod
        names = report.counters[mod]["counters"] + report.counters[mod]["fcounters"]
        assert list(frame.columns) == ["id", "rank"] + names
        expected = np.array([list(r["counters"]) + list(r["fcounters"]) for r in rows],
                            dtype=np.float64).reshape(len(rows), len(names))
        np.testing.assert_array_equal(frame[names].to_numpy(dtype=np.float64), expected)
        np.testing.assert_array_equal(
            frame[report.counters[mod]["counters"]].to_numpy(),
            np.array([r["counters"] for r in rows], dtype=np.int64).reshape(len(rows), -1))

    assert set(contents.dxt_segments) == {mod for mod in TRACES if mod in report.modules}
    for mod, table in contents.dxt_segments.items():
        frame = segments_frame(table)
        report.mod_read_all_dxt_records(mod)
        rows = [(r["rank"], r["id"], op, s["offset"], s["length"], s["start_time"],
                 s["end_time"])
                for r in report.records[mod] for op in ("read", "write")
                for s in r[f"{op}_segments"]]
        got = list(zip(frame["rank"], frame["id"], frame["op"].astype(str), frame["offset"],
                       frame["length"], frame["start"], frame["end"]))
        assert got == rows, mod

    totals, bins = {}, {}
    if "HEATMAP" in report.modules:
        report.read_all_heatmap_records()
        for name, heatmap in report.heatmaps.items():
            if name not in HEATMAP_MODULES:
                continue
            module = HEATMAP_MODULES[name]
            frames = {op: heatmap.to_df(ops=[op]) for op in ("read", "write")}
            totals[module] = {op: int(f.to_numpy().sum()) for op, f in frames.items()}
            columns = frames["read"].columns
            edges = [columns[0].left] + [c.right for c in columns] if len(columns) else [0.0]
            bins[module] = {"edges": edges, **{op: f.to_numpy().sum(axis=0).tolist()
                                                for op, f in frames.items()}}
    assert contents.heatmap_bytes == totals
    assert set(contents.heatmap_bins) == set(bins)
    for module, expected in bins.items():
        got = contents.heatmap_bins[module]
        assert got["edges"].tolist() == expected["edges"], module
        for op in ("read", "write"):
            assert got[op].dtype == np.int64 and got[op].tolist() == expected[op], (module, op)


@pytest.mark.parametrize("path", logs(FIXTURES), ids=lambda p: os.path.relpath(p, FIXTURES))
def test_fixture_log_read_as_pydarshan_reads_it(path):
    assert_pydarshans(path)


@pytest.mark.skipif(not os.path.isdir(SHARED), reason="../shared/darshan-logs is not here")
@pytest.mark.parametrize("path", logs(SHARED), ids=os.path.basename)
def test_shared_log_read_as_pydarshan_reads_it(path):
    assert_pydarshans(path)


def test_heatmap_fixture_is_compared():
    """The fixtures hold heat maps with bytes in them, so that the comparison above covers
    the bins and not only empty tables."""
    contents = read_log(os.path.join(FIXTURES, "ior_mpiio_coll_4ranks.darshan"), ("POSIX",))
    assert set(contents.heatmap_bins) == {"POSIX", "STDIO", "MPI-IO"}
    assert contents.heatmap_bytes["POSIX"]["read"] > 0


def test_reading_a_log_does_not_import_pydarshan():
    path = os.path.join(FIXTURES, "ior_mpiio_coll.darshan")
    code = ("import sys\n"
            "from dlio_mpi_analysis.loading.logfile import read_log\n"
            f"contents = read_log({path!r}, ('POSIX',), ('DXT_POSIX',))\n"
            "assert len(contents.records['POSIX']) and len(contents.names)\n"
            "print(sorted(m for m in sys.modules if m == 'darshan' or m.startswith('darshan.')))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"

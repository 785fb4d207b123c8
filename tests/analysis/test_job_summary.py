"""The job summary figures of a characterization against what PyDarshan's own summary functions
compute for the same log: its job metadata, the I/O cost bars (get_io_cost_df), the
accumulator's performance estimate and file categories (accumulate_records, which the
"Overview" and "File Count Summary" tables show) and the "Common Access Sizes" table."""

import datetime
import glob
import os

import darshan
import pytest
from darshan.backend.cffi_backend import accumulate_records
from darshan.experimental.plots import plot_common_access_table
from darshan.experimental.plots.plot_io_cost import get_io_cost_df

import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.characterization import text
from conftest import REPO, find_logs_dir

darshan.enable_experimental()

FIXTURES = os.path.join(REPO, "tests", "fixtures", "darshan")
# logs whose records the loader changes on purpose, so PyDarshan's figures differ: the I/O
# that Darshan counted under a file through a reused descriptor is left out
CHANGED_BY_LOADER = {"dup_descriptor.darshan", "dup_descriptor_nodxt.darshan"}
CATEGORY_INDEX = {"all": 0, "read_only": 1, "write_only": 2, "read_write": 3}
TIME_MODULES = {"POSIX": "POSIX", "MPI-IO": "MPIIO", "STDIO": "STDIO", "H5F": "HDF5",
                "H5D": "HDF5"}


def _logs():
    logs = sorted(glob.glob(os.path.join(find_logs_dir(), "*.darshan")))
    logs += sorted(p for p in glob.glob(os.path.join(FIXTURES, "*.darshan"))
                   if os.path.basename(p) not in CHANGED_BY_LOADER)
    return logs


LOGS = _logs()


def _close(got, want, rel=0.01):
    return got == pytest.approx(want, rel=rel, abs=1e-9)


@pytest.fixture(scope="module")
def reports():
    cache = {}

    def report(path):
        if path not in cache:
            r = darshan.DarshanReport(path, read_all=False)
            r.read_all_generic_records()
            cache[path] = r
        return cache[path]
    return report


@pytest.mark.parametrize("path", LOGS, ids=os.path.basename)
def test_job_matches_pydarshan_metadata(path, reports, characterized):
    job = reports(path).metadata["job"]
    got = characterized(path).job
    assert got.job_id == job["jobid"]
    assert got.uid == job["uid"]
    assert int(got.start_time) == job["start_time_sec"]
    assert int(got.end_time) == job["end_time_sec"]
    assert got.darshan_versions == ([job["metadata"]["lib_ver"]]
                                    if job["metadata"].get("lib_ver") else [])
    assert got.log_versions == [job["log_ver"]]


@pytest.mark.parametrize("path", LOGS, ids=os.path.basename)
def test_io_cost_matches_pydarshan(path, reports, characterized):
    report = reports(path)
    want = get_io_cost_df(report)
    summary = characterized(path).summary
    got = {}
    for module, s in summary.items():
        row = got.setdefault(TIME_MODULES[module], [0.0, 0.0, 0.0])
        for i, value in enumerate((s.io_cost.read, s.io_cost.write, s.io_cost.meta)):
            row[i] += value
    for label in want.index:
        if label not in TIME_MODULES.values():
            continue        # PnetCDF, DAOS: modules characterize does not read
        assert label in got, f"{label} missing"
        for i, kind in enumerate(("Read", "Write", "Meta")):
            assert _close(got[label][i], float(want.loc[label, kind])), (label, kind)
    assert set(got) <= set(want.index)


def _accumulated(report, module):
    records = report.records[module].to_df()
    return accumulate_records(records, module, report.metadata["job"]["nprocs"])


@pytest.mark.parametrize("path", LOGS, ids=os.path.basename)
def test_performance_and_categories_match_pydarshan(path, reports, characterized):
    report = reports(path)
    summary = characterized(path).summary
    checked = 0
    for module in ("POSIX", "MPI-IO", "STDIO"):
        if module not in report.records or len(report.records[module]) == 0:
            assert module not in summary
            continue
        metrics = _accumulated(report, module).derived_metrics
        got = summary[module]
        perf = got.performance
        assert perf.bytes == metrics.total_bytes
        assert _close(perf.mib_per_s, metrics.agg_perf_by_slowest), module
        assert _close(perf.time, metrics.agg_time_by_slowest), module
        if report.metadata["job"]["nprocs"] > 1:
            assert _close(perf.shared_time, metrics.shared_io_total_time_by_slowest), module
            assert _close(perf.unique_time, metrics.unique_io_total_time_by_slowest), module
            assert _close(perf.unique_rw_time, metrics.unique_rw_only_time_by_slowest)
            assert _close(perf.unique_meta_time, metrics.unique_md_only_time_by_slowest)
        # in a one-process log the loader gives a reduced record its process's rank, so its
        # time counts as that rank's own: the split differs, the total is the same
        for category, index in CATEGORY_INDEX.items():
            want = metrics.category_counters[index]
            have = got.file_categories[category]
            assert have.files == want.count, (module, category)
            assert have.bytes_read == want.total_read_volume_bytes, (module, category)
            assert have.bytes_written == want.total_write_volume_bytes, (module, category)
            assert have.max_bytes_read == want.max_read_volume_bytes, (module, category)
            assert have.max_bytes_written == want.max_write_volume_bytes, (module, category)
            if module == "MPI-IO" or want.count == 0 or want.max_offset_bytes < 0:
                continue    # the module records no offsets; PyDarshan shows none either
            assert have.max_size == want.max_offset_bytes + 1, (module, category)
            assert _close(have.mean_size,
                          (want.total_max_offset_bytes + want.count) / want.count)
        checked += 1
    assert checked or not any(m in summary for m in ("POSIX", "MPI-IO", "STDIO"))


@pytest.mark.parametrize("path", LOGS, ids=os.path.basename)
def test_common_access_sizes_match_pydarshan(path, reports, characterized):
    report = reports(path)
    summary = characterized(path).summary
    for module in ("POSIX", "MPI-IO", "H5D"):
        if module not in report.records or len(report.records[module]) == 0:
            continue
        table = plot_common_access_table.plot_common_access_table(report, module).df
        want = [(int(size), int(count)) for size, count in
                zip(table["Access Size"], table["Count"]) if count > 0]
        got = [tuple(pair) for pair in summary[module].common_access_sizes]
        assert sorted(c for _, c in got) == sorted(c for _, c in want), module
        # sizes of equal count may be cut at the fourth row in another order: compare the
        # sizes whose count is above the last one shown
        last = min((c for _, c in want), default=0)
        assert {p for p in got if p[1] > last} == {p for p in want if p[1] > last}, module


def test_top_files_and_mounts(log, characterized, reports):
    path = log("e3sm_io_heatmaps_and_dxt__")
    c = characterized(path)
    report = reports(path)
    frame = report.records["POSIX"].to_df()
    counters, fcounters = frame["counters"], frame["fcounters"]
    moved = (counters["POSIX_BYTES_READ"] + counters["POSIX_BYTES_WRITTEN"]).groupby(
        counters["id"]).sum().sort_values(ascending=False)
    names = report.name_records
    top = c.summary["POSIX"].top_files_by_bytes
    assert [f.name for f in top] == [names[i] for i in moved.index[:len(top)]]
    assert [f.bytes_read + f.bytes_written for f in top] == moved.iloc[:len(top)].tolist()
    times = fcounters[["POSIX_F_READ_TIME", "POSIX_F_WRITE_TIME", "POSIX_F_META_TIME"]]
    slowest = times.sum(axis=1).groupby(fcounters["id"]).sum().sort_values(ascending=False)
    by_time = c.summary["POSIX"].top_files_by_time
    assert _close(by_time[0].io_time, slowest.iloc[0])
    assert by_time[0].name == names[slowest.index[0]]
    mount_points = dict(report.data["mounts"])
    assert c.mounts and all(mount_points[m.mount_point] == m.fs_type for m in c.mounts)
    posix_stdio = sum(int(report.records[m].to_df()["counters"][f"{m}_BYTES_READ"].sum())
                      for m in ("POSIX", "STDIO") if m in report.records)
    assert sum(m.bytes_read for m in c.mounts) == posix_stdio


def test_mpiio_hints_as_recorded(log, characterized, reports):
    path = log("ior_pnetcdf_hdf5__shane_ior-HDF5")
    report = reports(path)
    hints = characterized(path).mpiio_hints
    assert hints["set_hints"] == int(report.records["MPI-IO"].to_df()["counters"]
                                     ["MPIIO_HINTS"].sum()) == 8
    assert hints["log_hints"] == [report.metadata["job"]["metadata"]["h"]]


def test_text_and_json_carry_the_summary(log, characterized):
    c = characterized(log("ior_pnetcdf_hdf5__shane_ior-HDF5"))
    out = text.render_text(c)
    start = datetime.datetime.fromtimestamp(c.job.start_time, datetime.timezone.utc)
    assert f"job id:      {c.job.job_id}" in out
    assert start.strftime("%Y-%m-%d %H:%M:%S") in out
    assert "I/O performance estimate" in out and "common access sizes" in out
    assert "262144 B x 32" in out
    plain = c.to_dict()
    assert plain["job"]["job_id"] == 438090
    assert plain["summary"]["POSIX"]["common_access_sizes"][0] == [262144, 32]
    assert plain["mpiio_hints"]["set_hints"] == 8


def test_report_carries_the_summary(log, tmp_path):
    import warnings
    from pathlib import Path
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", analysis.AnalysisWarning)
        files = analysis.write_report(log("ior_pnetcdf_hdf5__shane_ior-HDF5"), tmp_path,
                                      dxt=False)
    for page in (Path(files.markdown).read_text(), Path(files.html).read_text()):
        assert "Job summary" in page and "438090 / 1000" in page
        assert "262144 B x 32" in page and "2,413.48 MiB/s" in page
        assert "/home (ext4)" in page

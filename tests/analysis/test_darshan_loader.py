"""Loading real logs: every format version, empty, partial, truncated and garbage files, sets."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
import warnings

import pytest

import dlio_mpi_analysis as analysis
import dlio_mpi_analysis.loading.loader
import raw_darshan as raw

MIB = 2**20
PARTIAL = {  # log name prefix -> modules it marks partial
    "imbalanced_io__": {"POSIX"},
    "partial_data_dxt__": {"DXT_POSIX", "DXT_MPIIO"},
    "partial_data_stdio__": {"STDIO"},
}
NEGATIVE_META_TIME = {f"release_logs__mpi-io-test-ppc64-{v}" for v in ("3.0.1", "3.1.5", "3.1.6")}


def _name(path):
    return os.path.basename(path)


def test_every_log_loads_and_characterizes(all_logs):
    """Every log of the collection, format 3.00 to 3.41, with DXT; only the expected warnings."""
    assert len(all_logs) >= 60
    warned = {}
    for path in all_logs:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = analysis.characterize(path, dxt=True)
            json.loads(analysis.to_json(result))
            analysis.render_text(result)
        warned[_name(path)] = {w.category for w in caught}
        for metrics in result.modules.values():
            assert (metrics.bytes_read or 0) >= 0 and (metrics.bytes_written or 0) >= 0
            assert metrics.io_time.slowest_rank >= metrics.io_time.mean_per_rank >= 0
        assert result.totals.bytes_read >= 0 and result.totals.bytes_written >= 0
        assert result.run_time > 0 and result.nprocs >= 1
    for name, categories in warned.items():
        expected = set()
        if any(name.startswith(prefix) for prefix in PARTIAL):
            expected.add(analysis.PartialLogWarning)
        if any(name.startswith(prefix) for prefix in NEGATIVE_META_TIME):
            expected.add(analysis.InvalidCounterWarning)
        assert categories == expected, name


def test_release_logs_read_and_write_64_mib_in_every_format(all_logs, characterized):
    releases = [p for p in all_logs if _name(p).startswith("release_logs__")]
    assert len(releases) == 36
    versions = set()
    for path in releases:
        result = characterized(path)
        versions.update(result.log_versions)
        for module in ("POSIX", "MPI-IO"):
            assert result.modules[module].bytes_read == 64 * MIB, (path, module)
            assert result.modules[module].bytes_written == 64 * MIB, (path, module)
    assert versions == {"3.00", "3.10", "3.20", "3.21", "3.41"}


def test_load_reads_only_the_modules_asked_for(log):
    job = analysis.load(log("mpi_io_test_with_dxt__"), modules=("MPI-IO",))
    assert set(job.records) == {"MPI-IO"}
    assert job.dxt_segments is None
    assert set(job.modules) == {"POSIX", "MPI-IO", "STDIO", "DXT_POSIX", "DXT_MPIIO"}
    assert list(job.records["MPI-IO"].columns[:2]) == ["id", "rank"]


def test_empty_log_is_no_io(log):
    result = analysis.characterize(log("empty_log__"), dxt=True)
    assert result.no_io
    assert result.modules == {} and result.dxt == {} and result.interfaces == []
    assert (result.totals.bytes_read, result.totals.bytes_written) == (0, 0)
    assert result.totals.files.total == 0
    assert result.totals.io_time.slowest_rank == 0.0
    assert "No I/O recorded." in analysis.render_text(result)


@pytest.mark.parametrize("prefix", sorted(PARTIAL))
def test_partial_logs_warn_naming_the_module(prefix, log):
    with pytest.warns(analysis.PartialLogWarning) as caught:
        job = analysis.load(log(prefix))
    named = {mod for mod in PARTIAL[prefix] for w in caught if f"module {mod} " in str(w.message)}
    assert named == PARTIAL[prefix]
    assert set(job.partial_modules) == PARTIAL[prefix]
    assert len(job.warnings) == len(PARTIAL[prefix])


def _cut(src, dest, keep):
    with open(src, "rb") as f:
        data = f.read()
    size = keep if keep > 0 else len(data) + keep
    dest.write_bytes(data[:size])
    return str(dest)


@pytest.mark.parametrize("prefix", ["release_logs__mpi-io-test-x86_64-3.5.0",
                                    "release_logs__mpi-io-test-ppc64-3.0.0",
                                    "imbalanced_io__", "mpi_io_test_with_dxt__"])
@pytest.mark.parametrize("fraction", [0.5, 0.1, 0.9])
def test_truncated_log_raises_log_error(prefix, fraction, log, tmp_path, capfd):
    src = log(prefix)
    path = _cut(src, tmp_path / _name(src), int(os.path.getsize(src) * fraction))
    with pytest.raises(analysis.LogError) as error:
        analysis.characterize(path, dxt=True)
    message = str(error.value)
    assert message.startswith(path + ":") and "\n" not in message
    assert "Error:" not in capfd.readouterr().err  # darshan-util's own lines are captured


def test_cut_in_a_region_not_read_is_still_detected(log, tmp_path):
    """Ten bytes off the end of the DXT region: found from the header, traces not read."""
    src = log("mpi_io_test_with_dxt__")
    path = _cut(src, tmp_path / _name(src), -10)
    with pytest.raises(analysis.LogError, match="truncated"):
        analysis.load(path, dxt=False)


@pytest.mark.parametrize("prefix", ["release_logs__mpi-io-test-x86_64-3.5.0", "imbalanced_io__"])
def test_corrupt_region_raises_log_error(prefix, log, tmp_path, capfd):
    """Bytes overwritten inside the compressed module data: found by inflating the region
    before darshan-util reads it, one line."""
    src = log(prefix)
    with open(src, "rb") as f:
        data = bytearray(f.read())
    start = int(len(data) * 0.75)
    data[start:start + 40] = b"\xff" * 40
    path = tmp_path / _name(src)
    path.write_bytes(bytes(data))
    with pytest.raises(analysis.LogError, match=r": corrupt: the module \d+ region \(bytes "
                                                r"\d+ to \d+\) does not decompress: ") as error:
        analysis.load(path)
    assert str(error.value).startswith(f"{path}: ") and "\n" not in str(error.value)
    assert "Error:" not in capfd.readouterr().err


@pytest.mark.parametrize("content", [b"hello, this is not a Darshan log\n", b"",
                                     bytes(range(256)) * 8, b"darshan3.41" + b"\0" * 4000])
def test_not_a_darshan_log_raises_log_error(content, tmp_path):
    path = tmp_path / "garbage.darshan"
    path.write_bytes(content)
    with pytest.raises(analysis.LogError, match=f"^{str(path)}: "):
        analysis.load(path)


def test_missing_file_and_empty_sources_raise_log_error(tmp_path):
    with pytest.raises(analysis.LogError, match="no such file"):
        analysis.load(tmp_path / "missing.darshan")
    with pytest.raises(analysis.LogError, match="no \\*.darshan files"):
        analysis.load(tmp_path)
    with pytest.raises(analysis.LogError, match="empty"):
        analysis.load([])


def test_set_of_per_process_logs_is_one_job(log, tmp_path):
    """Two copies of a one-process log form a two-process job with every file shared."""
    src = log("nonmpi_dxt_anonymized__")
    for name in ("a.darshan", "b.darshan"):
        shutil.copy(src, tmp_path / name)
    single = analysis.characterize(src, dxt=True)
    pair = analysis.characterize(tmp_path, dxt=True)
    assert pair.logs == [str(tmp_path / "a.darshan"), str(tmp_path / "b.darshan")]
    assert pair.nprocs == 2 and pair.run_time == single.run_time
    posix, posix1 = pair.modules["POSIX"], single.modules["POSIX"]
    assert posix.bytes_read == 2 * posix1.bytes_read
    assert posix.files.total == posix.files.shared == posix1.files.total
    assert posix.rank_balance.min_bytes == posix.rank_balance.max_bytes
    assert [span.rank for span in pair.dxt["DXT_POSIX"].timeline] == [0, 1]
    assert pair.dxt["DXT_POSIX"].operations == 2 * single.dxt["DXT_POSIX"].operations


def test_set_shifts_ranks_and_times(log):
    """A 4-process log then a 1-process log: ranks 0-3 then 4; times from the earliest start."""
    paths = [log("release_logs__mpi-io-test-x86_64-3.1.6"), log("nonmpi_dxt_anonymized__")]
    job = analysis.load(paths, dxt=True, merge_jobs=True).frames()
    singles = [analysis.load(path, dxt=True).frames() for path in paths]
    assert job.nprocs == 5
    stdio = job.records["STDIO"]
    assert sorted(stdio["rank"].unique()) == [0, 4]
    assert (stdio["rank"] == 4).sum() == len(raw.records(paths[1], "STDIO"))
    assert job.start_time == min(single.start_time for single in singles)
    assert job.run_time == pytest.approx(max(
        single.start_time - job.start_time + single.run_time for single in singles))
    segments = job.dxt_segments["DXT_POSIX"]
    second = segments[segments["rank"] == 4]
    offset = singles[1].start_time - job.start_time
    assert offset > 10**7  # the two runs lie months apart
    assert second["start"].to_numpy() == pytest.approx(
        singles[1].dxt_segments["DXT_POSIX"]["start"].to_numpy() + offset)
    assert len(segments) == sum(len(s.dxt_segments["DXT_POSIX"]) for s in singles)


RELEASE_PAIR = ("release_logs__mpi-io-test-ppc64-3.0.0", "release_logs__mpi-io-test-ppc64-3.0.1")


def test_a_folder_of_two_jobs_is_refused_naming_them(log, tmp_path):
    """Before: one job of 8 processes and a run time of 199,402,738 s (two release logs of
    mpi-io-test two months apart)."""
    for prefix in RELEASE_PAIR:
        shutil.copy(log(prefix), tmp_path / f"{prefix}.darshan")
    with pytest.raises(analysis.LogError) as caught:
        analysis.characterize(tmp_path)
    line = str(caught.value)
    assert "\n" not in line
    assert line.startswith(f"{tmp_path} holds the logs of 2 jobs, not one: job 770702 "
                           "(mpi-io-test, 4 processes, started 2016-03-24 19:18:01 UTC: "
                           f"{RELEASE_PAIR[0]}.darshan); job 826939 (mpi-io-test, 4 processes, "
                           f"started 2016-05-20 17:37:33 UTC: {RELEASE_PAIR[1]}.darshan)"), line
    assert line.endswith("--merge-jobs to read them as one job"), line
    with pytest.raises(analysis.LogError, match="the 2 logs given are the logs of 2 jobs"):
        analysis.load([log(prefix) for prefix in RELEASE_PAIR])
    merged = analysis.load(tmp_path, merge_jobs=True)
    assert merged.nprocs == 8


def test_two_mpi_jobs_at_the_same_time_are_two_jobs(log, tmp_path):
    """An MPI job writes one log: two logs of several processes are two jobs, even when they
    overlap in time (two copies of one log)."""
    shutil.copy(log(RELEASE_PAIR[0]), tmp_path / "a.darshan")
    shutil.copy(log(RELEASE_PAIR[0]), tmp_path / "b.darshan")
    with pytest.raises(analysis.LogError, match="holds the logs of 2 jobs"):
        analysis.load(tmp_path)


def test_heatmap_disagreeing_with_counters_warns(log, monkeypatch):
    path = log("release_logs__mpi-io-test-x86_64-3.5.0")
    assert analysis.load(path).heatmap_bytes["POSIX"] == {"read": 64 * MIB, "write": 64 * MIB}
    real_read_log = dlio_mpi_analysis.loading.loader.read_log

    def lose_reads(*args, **kwargs):
        contents = real_read_log(*args, **kwargs)
        contents.heatmap_bytes["POSIX"]["read"] = 66 * MIB  # 3% more than the counters
        return contents

    monkeypatch.setattr(dlio_mpi_analysis.loading.loader, "read_log", lose_reads)
    with pytest.warns(analysis.HeatmapMismatchWarning, match="POSIX read bytes"):
        analysis.load(path)


def test_65536_process_log_loads_in_bounded_memory(log):
    """Peak RSS of a fresh interpreter that loads and characterizes the 65,536-process log."""
    script = textwrap.dedent(f"""
        import resource, analysis
        result = analysis.characterize({log("skew_io__skew-app")!r})
        assert result.nprocs == 65536, result.nprocs
        print(result.totals.bytes_written, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    """)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([sys.executable, "-c", script], cwd=repo, capture_output=True,
                          text=True, check=True, timeout=120)
    written, peak_kib = map(int, done.stdout.split())
    assert written == raw.total(raw.records(log("skew_io__skew-app"), "POSIX"),
                                "POSIX_BYTES_WRITTEN")
    assert peak_kib * 1024 < 1.5 * 2**30, f"peak RSS {peak_kib} KiB"
    print(f"peak RSS for the 65,536-process log: {peak_kib / 1024:.0f} MiB")


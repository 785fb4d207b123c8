"""The characterization against values computed straight from PyDarshan's raw records."""


import pandas as pd
import pytest

import dlio_mpi_analysis as analysis
import raw_darshan as raw
from dlio_mpi_analysis.characterization.dxt_metrics import dxt_metrics

# Counters each characterized operation sums, per module (the documented definitions).
OPS = {
    "POSIX": {"reads": ["POSIX_READS"], "writes": ["POSIX_WRITES"], "opens": ["POSIX_OPENS"],
              "stats": ["POSIX_STATS"], "seeks": ["POSIX_SEEKS"],
              "syncs": ["POSIX_FSYNCS", "POSIX_FDSYNCS"]},
    "MPI-IO": {"reads": ["MPIIO_INDEP_READS", "MPIIO_COLL_READS", "MPIIO_SPLIT_READS",
                         "MPIIO_NB_READS"],
               "writes": ["MPIIO_INDEP_WRITES", "MPIIO_COLL_WRITES", "MPIIO_SPLIT_WRITES",
                          "MPIIO_NB_WRITES"],
               "opens": ["MPIIO_INDEP_OPENS", "MPIIO_COLL_OPENS"], "syncs": ["MPIIO_SYNCS"],
               "independent_reads": ["MPIIO_INDEP_READS", "MPIIO_NB_READS"],
               "collective_reads": ["MPIIO_COLL_READS", "MPIIO_SPLIT_READS"],
               "independent_writes": ["MPIIO_INDEP_WRITES", "MPIIO_NB_WRITES"],
               "collective_writes": ["MPIIO_COLL_WRITES", "MPIIO_SPLIT_WRITES"]},
    "STDIO": {"reads": ["STDIO_READS"], "writes": ["STDIO_WRITES"],
              "opens": ["STDIO_OPENS", "STDIO_FDOPENS"], "seeks": ["STDIO_SEEKS"]},
    "H5F": {"opens": ["H5F_OPENS"]},
    "H5D": {"reads": ["H5D_READS"], "writes": ["H5D_WRITES"], "opens": ["H5D_OPENS"]},
}
HISTOGRAM = {"POSIX": "POSIX_SIZE_{}_", "MPI-IO": "MPIIO_SIZE_{}_AGG_", "H5D": "H5D_SIZE_{}_AGG_"}

COUNTER_LOGS = {
    "release_logs__mpi-io-test-x86_64-3.0.0": ("POSIX", "MPI-IO"),
    "release_logs__mpi-io-test-ppc64-3.1.0": ("POSIX", "MPI-IO", "STDIO"),
    "release_logs__mpi-io-test-x86_64-3.1.6": ("POSIX", "MPI-IO", "STDIO"),
    "release_logs__mpi-io-test-x86_64-3.5.0": ("POSIX", "MPI-IO", "STDIO"),
    "ior_pnetcdf_hdf5__shane_ior-HDF5": ("POSIX", "MPI-IO", "STDIO", "H5F", "H5D"),
    "hdf5_diagonal_write_only__hdf5_diagonal_write_half_ranks": ("POSIX", "H5F", "H5D"),
    "hdf5_diagonal_write_only__hdf5_diagonal_write_bytes_range": ("POSIX", "H5F", "H5D"),
    "hdf5_orthogonality__treddy_h5d_no_h5f": ("POSIX", "H5D"),
    "imbalanced_io__imbalanced-io": ("POSIX", "MPI-IO", "STDIO"),
    "mpi_io_test_with_dxt__": ("POSIX", "MPI-IO", "STDIO"),
    "e3sm_io_heatmaps_and_dxt__": ("POSIX", "MPI-IO", "STDIO"),
    "skew_io__skew-autobench-ior": ("POSIX", "MPI-IO", "STDIO"),
    "nonmpi_dxt_anonymized__": ("POSIX", "STDIO"),
    "partial_data_stdio__": ("POSIX", "MPI-IO", "STDIO"),
}


@pytest.mark.parametrize("prefix,module",
                         [(p, m) for p, modules in COUNTER_LOGS.items() for m in modules])
def test_module_metrics_equal_raw_counters(prefix, module, log, characterized):
    path = log(prefix)
    got = characterized(path).modules[module]
    job = raw.job(path)
    nprocs, run_time = job["nprocs"], job["run_time"]
    recs = raw.records(path, module)
    pre = raw.PREFIX[module]
    has_bytes = module != "H5F"

    assert got.records == len(recs)
    assert got.ops == {op: raw.total(recs, *names) for op, names in OPS[module].items()}
    if has_bytes:
        assert got.bytes_read == raw.total(recs, f"{pre}_BYTES_READ")
        assert got.bytes_written == raw.total(recs, f"{pre}_BYTES_WRITTEN")
        assert got.files.__dict__ == raw.files(recs, nprocs, f"{pre}_BYTES_READ",
                                               f"{pre}_BYTES_WRITTEN")
    else:
        assert got.bytes_read is None and got.bytes_written is None
        assert got.files.__dict__ == raw.files(recs, nprocs)

    for op, sizes, moved, count in (("READ", got.read_sizes, got.bytes_read, got.ops.get("reads")),
                                    ("WRITE", got.write_sizes, got.bytes_written,
                                     got.ops.get("writes"))):
        if module not in HISTOGRAM:
            assert sizes is None
            continue
        expected = raw.histogram(recs, HISTOGRAM[module].format(op))
        assert {k: getattr(sizes, k) for k in expected} == expected
        assert sizes.mean == (moved / count if count else None)

    reads, writes = got.ops.get("reads"), got.ops.get("writes")
    if module == "POSIX":
        assert got.sequential_read_pct == (
            100 * raw.total(recs, "POSIX_SEQ_READS") / reads if reads else None)
        assert got.consecutive_read_pct == (
            100 * raw.total(recs, "POSIX_CONSEC_READS") / reads if reads else None)
        assert got.sequential_write_pct == (
            100 * raw.total(recs, "POSIX_SEQ_WRITES") / writes if writes else None)
        assert got.consecutive_write_pct == (
            100 * raw.total(recs, "POSIX_CONSEC_WRITES") / writes if writes else None)
    else:
        assert got.sequential_read_pct is None and got.consecutive_write_pct is None

    if module == "H5F":
        slowest, mean = raw.io_times(recs, pre, nprocs, kinds=("META",), slowest=False)
    else:
        slowest, mean = raw.io_times(recs, pre, nprocs)
    assert got.io_time.slowest_rank == pytest.approx(slowest, rel=1e-9, abs=1e-12)
    assert got.io_time.mean_per_rank == pytest.approx(mean, rel=1e-9, abs=1e-12)
    assert got.io_time.slowest_rank_share == pytest.approx(slowest / run_time, rel=1e-9)

    expected_balance = raw.balance(recs, pre, nprocs) if has_bytes else None
    if expected_balance is None:
        assert got.rank_balance is None
    else:
        assert got.rank_balance.__dict__ == pytest.approx(expected_balance, rel=1e-12)


@pytest.mark.parametrize("prefix", ["ior_pnetcdf_hdf5__shane_ior-HDF5", "mpi_io_test_with_dxt__",
                                    "nonmpi_dxt_anonymized__", "imbalanced_io__imbalanced-io"])
def test_job_totals_add_posix_and_stdio(prefix, log, characterized):
    path = log(prefix)
    got = characterized(path).totals
    nprocs = raw.job(path)["nprocs"]
    posix, stdio = raw.records(path, "POSIX"), raw.records(path, "STDIO")
    assert got.basis == ["POSIX", "STDIO"]
    assert got.bytes_read == (raw.total(posix, "POSIX_BYTES_READ")
                              + raw.total(stdio, "STDIO_BYTES_READ"))
    assert got.bytes_written == (raw.total(posix, "POSIX_BYTES_WRITTEN")
                                 + raw.total(stdio, "STDIO_BYTES_WRITTEN"))
    both = raw.relabel(posix, "POSIX") + raw.relabel(stdio, "STDIO")
    assert got.files.__dict__ == raw.files(both, nprocs, "T_BYTES_READ", "T_BYTES_WRITTEN")
    slowest, mean = raw.io_times(both, "T", nprocs)
    assert got.io_time.slowest_rank == pytest.approx(slowest, rel=1e-9)
    assert got.io_time.mean_per_rank == pytest.approx(mean, rel=1e-9)


def test_known_values_of_mpi_io_test(log, characterized):
    """Values fixed by what mpi-io-test does (4 ranks, one shared file, one 16 MiB write and
    one 16 MiB read per rank), not derived from the counters."""
    got = characterized(log("release_logs__mpi-io-test-x86_64-3.5.0"))
    assert got.nprocs == 4
    posix = got.modules["POSIX"]
    assert posix.bytes_read == posix.bytes_written == 64 * 2**20
    assert (posix.files.total, posix.files.shared, posix.files.unique) == (1, 1, 0)
    assert posix.read_sizes.histogram["10M_100M"] == 4
    assert posix.read_sizes.median_bucket == "10M_100M"
    assert got.modules["MPI-IO"].ops["independent_reads"] == 4
    # its STDIO record is its <STDOUT>: a standard stream is no interface
    assert got.interfaces == ["POSIX", "MPI-IO independent"]


@pytest.mark.parametrize("prefix,interfaces", [
    ("ior_pnetcdf_hdf5__shane_ior-HDF5", ["POSIX", "MPI-IO independent", "HDF5"]),
    ("skew_io__skew-app", ["POSIX", "MPI-IO collective"]),
    ("e3sm_io_heatmaps_and_dxt__",
     ["POSIX", "MPI-IO independent", "MPI-IO collective", "PnetCDF"]),
    ("stdio_no_posix__", ["STDIO"]),
    ("hdf5_orthogonality__treddy_h5d_no_h5f", ["POSIX", "HDF5"]),
])
def test_interfaces(prefix, interfaces, log, characterized):
    assert characterized(log(prefix)).interfaces == interfaces


def test_reduced_records_of_one_process_are_not_shared(log, characterized):
    got = characterized(log("partial_data_stdio__")).modules["STDIO"]
    assert (got.records, got.files.shared, got.files.unique) == (1022, 0, 1022)
    assert got.rank_balance.ranks == 1


def test_negative_time_counts_as_zero_with_a_warning(log):
    path = log("release_logs__mpi-io-test-ppc64-3.1.5")
    with pytest.warns(analysis.InvalidCounterWarning, match="POSIX_F_META_TIME"):
        got = analysis.characterize(path)
    recs = raw.records(path, "POSIX")
    assert recs[0]["POSIX_F_META_TIME"] < 0
    assert got.modules["POSIX"].io_time.mean_per_rank == pytest.approx(
        (recs[0]["POSIX_F_READ_TIME"] + recs[0]["POSIX_F_WRITE_TIME"]) / 4, rel=1e-12)
    assert any("POSIX_F_META_TIME" in message for message in got.warnings)


DXT_LOGS = [
    ("mpi_io_test_with_dxt__", "DXT_POSIX"),
    ("mpi_io_test_with_dxt__", "DXT_MPIIO"),
    ("hdf5_diagonal_write_only__hdf5_diagonal_write_1_byte", "DXT_POSIX"),
    ("nonmpi_dxt_anonymized__", "DXT_POSIX"),
    ("release_logs__mpi-io-test-ppc64-3.1.6", "DXT_MPIIO"),
]


@pytest.mark.parametrize("prefix,module", DXT_LOGS)
def test_dxt_metrics_equal_raw_segments(prefix, module, log, characterized):
    path = log(prefix)
    got = characterized(path, dxt=True).dxt[module]
    run_time = raw.job(path)["run_time"]
    segments = raw.dxt_segments(path, module)
    assert got.operations == len(segments)
    for op in ("read", "write"):
        sizes, bandwidth = getattr(got, f"{op}_sizes"), getattr(got, f"{op}_bandwidth")
        expected_sizes, expected_bw = raw.dxt_sizes(segments, op), raw.dxt_bandwidth(segments, op)
        assert (sizes is None) == (expected_sizes is None)
        if sizes is not None:
            assert sizes.__dict__ == pytest.approx(expected_sizes, rel=1e-12)
            assert bandwidth.__dict__ == pytest.approx(expected_bw, rel=1e-9)
    read_bytes = sum(s[2] for s in segments if s[1] == "read")
    early = sum(s[2] for s in segments if s[1] == "read" and s[3] < 0.1 * run_time)
    assert got.early_read_fraction == (early / read_bytes if read_bytes else None)
    ranks = sorted({s[0] for s in segments})
    assert [span.rank for span in got.timeline] == ranks
    for span in got.timeline:
        mine = [s for s in segments if s[0] == span.rank]
        assert span.reads == sum(1 for s in mine if s[1] == "read")
        assert span.bytes_written == sum(s[2] for s in mine if s[1] == "write")
        assert span.first_start == min(s[3] for s in mine)
        assert span.last_end == max(s[4] for s in mine)


def test_zero_length_segments_are_counted_apart(log, characterized):
    got = characterized(log("hdf5_diagonal_write_only__hdf5_diagonal_write_1_byte"),
                        dxt=True).dxt["DXT_POSIX"]
    zero = got.write_sizes.zero_length + (got.read_sizes.zero_length if got.read_sizes else 0)
    assert zero == 200
    assert got.write_bandwidth.zero_length_excluded == got.write_sizes.zero_length
    assert got.write_bandwidth.operations == (got.write_sizes.operations
                                              - got.write_sizes.zero_length)


def test_read_pattern_on_demand(log, characterized):
    got = characterized(log("mpi_io_test_with_dxt__"), dxt=True).dxt["DXT_POSIX"]
    assert got.early_read_fraction == 0.0 and got.read_pattern == "on demand"


def test_dxt_definitions_on_made_up_segments():
    """Zero-length and zero-duration operations, the early-read window, per-rank spans."""
    segments = pd.DataFrame({
        "rank": [0, 0, 0, 1, 1, 1],
        "id": [7] * 6,
        "op": pd.Categorical(["read", "read", "read", "read", "write", "read"],
                             categories=["read", "write"]),
        "offset": [0, 100, 200, 0, 0, 300],
        "length": [100, 0, 50, 200, 10, 400],
        "start": [0.5, 0.9, 1.0, 3.0, 4.0, 9.5],
        "end": [1.5, 1.5, 1.0, 2.5, 6.0, 10.5],  # rank 0's third and rank 1's first: no time
    })
    got = dxt_metrics("DXT_POSIX", segments, run_time=10.0, partial=False)
    assert got.read_sizes.__dict__ == {"operations": 5, "zero_length": 1, "min": 0,
                                       "mean": 150.0, "median": 100.0, "max": 400}
    assert got.read_bandwidth.__dict__ == {
        "operations": 2, "zero_length_excluded": 1, "zero_duration_excluded": 2,
        "min": 100.0, "median": 250.0, "mean": 250.0, "max": 400.0}
    assert got.write_bandwidth.operations == 1 and got.write_bandwidth.max == 5.0
    assert got.early_read_fraction == 100 / 750  # reads that start before 1.0 s (10% of 10 s)
    assert got.read_pattern == "on demand"
    assert [(s.rank, s.reads, s.writes, s.bytes_read, s.bytes_written, s.first_start, s.last_end)
            for s in got.timeline] == [(0, 3, 0, 150, 0, 0.5, 1.5), (1, 2, 1, 600, 10, 3.0, 10.5)]

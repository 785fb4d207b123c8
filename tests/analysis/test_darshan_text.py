"""Rendering: plain text, JSON and tidy tables."""

import json

import dlio_mpi_analysis as analysis
HDF5_LOG = "ior_pnetcdf_hdf5__shane_ior-HDF5"


def _plain_types_only(value):
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain_types_only(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain_types_only(v) for v in value)
    return value is None or type(value) in (bool, int, float, str)


def test_text_report(log, characterized):
    path = log(HDF5_LOG)
    text = analysis.render_text(characterized(path))
    lines = text.splitlines()
    assert lines[0] == "Darshan I/O characterization"
    assert f"  log:         {path}" in lines
    # its STDIO record is its <STDOUT>: no interface, and apart from its data I/O
    assert "  interfaces:  POSIX, MPI-IO independent, HDF5" in lines
    assert any(line.startswith("  not data:        stream 1 files") for line in lines)
    header = next(line for line in lines if line.startswith("metric"))
    assert header.split() == ["metric", "POSIX", "STDIO", "MPI-IO", "H5F", "H5D"]
    bytes_read = next(line for line in lines if line.startswith("bytes read "))
    assert bytes_read.split()[2:] == ["4.0", "MiB", "0", "B", "4.0", "MiB", "-", "4", "MiB"]
    assert "Warnings:" not in text


def test_text_report_of_a_partial_trace(log, characterized):
    result = characterized(log("partial_data_dxt__"), dxt=True)
    text = analysis.render_text(result)
    assert "DXT_POSIX (partial trace): 65536 operations" in text
    assert "  partial:     DXT_POSIX, DXT_MPIIO" in text
    warnings_section = text[text.index("\nWarnings:\n"):]
    assert [line.split(": module ")[1].split()[0] for line in warnings_section.splitlines()[2:]] \
        == ["DXT_POSIX", "DXT_MPIIO"]
    assert len(result.warnings) == 2


def test_json_is_the_plain_dict(log, characterized):
    result = characterized(log("mpi_io_test_with_dxt__"), dxt=True)
    data = result.to_dict()
    assert _plain_types_only(data)
    assert json.loads(analysis.to_json(result)) == data
    assert "dxt_segments" not in data
    assert data["modules"]["MPI-IO"]["ops"]["reads"] == result.modules["MPI-IO"].ops["reads"]
    assert len(data["dxt"]["DXT_POSIX"]["timeline"]) == 32


def test_tables_are_tidy(log, characterized):
    result = characterized(log("mpi_io_test_with_dxt__"), dxt=True)
    tables = result.tables()
    modules = tables["modules"]
    assert list(modules.columns) == ["module", "metric", "value"]
    assert not modules.duplicated(["module", "metric"]).any()
    value = modules.set_index(["module", "metric"])["value"]
    assert value[("POSIX", "bytes_read")] == result.modules["POSIX"].bytes_read
    assert value[("MPI-IO", "io_time.slowest_rank")] == \
        result.modules["MPI-IO"].io_time.slowest_rank
    histograms = tables["size_histograms"]
    assert (histograms.groupby(["module", "op"]).size() == 10).all()
    assert set(histograms["module"]) == {"POSIX", "MPI-IO"}
    summary = tables["summary"].set_index("metric")["value"]
    assert summary["totals.bytes_read"] == result.totals.bytes_read
    assert summary["nprocs"] == 32
    assert len(tables["dxt_timeline"]) == 64  # 32 ranks in each of two traces
    assert len(tables["dxt_segments"]) == sum(d.operations for d in result.dxt.values())

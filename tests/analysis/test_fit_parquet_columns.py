"""A Parquet table read in part (a column projection) on real logs (tests/fixtures/darshan,
Darshan 3.5.0 with DXT, pyarrow 26; truth in truth.json): the layout of the row groups from
the holes their reads leave (analysis/fitting/fit_parquet_columns.py), a row group's chunks
read alone (ParquetFile.read_row_group) or the row groups' at once (pandas.read_parquet),
the fit, the replay, and the shape fitted before (the row groups read whole)."""
import pandas as pd
import pytest

import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.fitting import fit_parquet_columns
from fitted_runs import fitted_shape, log, replay_like, run_changed

pytestmark = pytest.mark.mpi      # its replays launch ranks under mpiexec

FEATURES, SKIPPED, WEIGHT = 1049254, 390919, 700      # label and aux lie in the skipped run


def test_row_groups_read_in_part_one_at_a_time():
    """features and weight of 4 columns, read_row_group(g) after read_row_group(g-1): the
    layout's runs, and two reads a row group, the weight of one and the features of the
    next adjacent but read apart."""
    f, w = fitted_shape("parquet_columns_row_groups", "sample_bytes", "read_threads")
    p = f.evidence["parquet_columns"]
    assert (p["period"], p["columns"], p["read"]) == (1440873, [FEATURES, SKIPPED, WEIGHT],
                                                      [0, 2])
    assert (p["together"], p["files"]) == (False, 8)
    ds, rd = w["dataset"], w["reader"]
    assert (ds["format"], ds["parquet_row_group_size"]) == ("parquet", 1)
    assert ds["parquet_columns"] == [FEATURES, SKIPPED, WEIGHT]
    assert rd["parquet_columns_read"] == [0, 2]
    assert "parquet_coalesce" not in rd and rd["parquet_open"] == "file"


def test_files_loaded_whole_in_part():
    """pandas.read_parquet(columns=...) pre-buffers all row groups at once: one read holds a
    row group's weight and the next one's features; a file loaded whole is a sample whose
    row holds the 4 row groups' layouts."""
    f, w = fitted_shape("pandas_read_parquet_columns", "sample_bytes", "read_threads")
    p = f.evidence["parquet_columns"]
    assert (p["period"], p["columns"], p["read"]) == (1440873, [FEATURES, SKIPPED, WEIGHT],
                                                      [0, 2])
    assert p["together"] is True
    ds, rd = w["dataset"], w["reader"]
    assert ds["parquet_columns"] == [FEATURES, SKIPPED, WEIGHT] * 4
    assert rd["parquet_columns_read"] == [0, 2, 3, 5, 6, 8, 9, 11]
    assert rd["sample_shuffle"] == "seed"


def test_row_groups_of_every_read_are_one_read():
    """Each rank's consecutive reads of a row group stand as one read of the row group,
    timed from the first's start to the last's end; a later visit is another."""
    trace = pd.DataFrame({"rank": [0, 0, 0, 1, 0], "id": [7, 7, 7, 7, 7],
                          "offset": [4, 70, 104, 4, 4], "length": [50, 30, 60, 50, 50],
                          "start": [0.0, 1.0, 2.0, 2.5, 3.0], "end": [0.5, 1.5, 2.2, 2.6, 3.1]})
    merged = fit_parquet_columns.row_group_reads(trace, 100)
    assert merged["offset"].tolist() == [4, 104, 4, 4]
    assert merged["length"].tolist() == [100] * 4
    assert merged["end"].tolist() == [1.5, 2.2, 2.6, 3.1]


@pytest.mark.parametrize("name", ["parquet_loader", "parquet_whole_files",
                                  "parquet_row_group_per_open_workers2"])
def test_tables_read_whole_are_no_projection(name):
    assert "parquet_columns" not in analysis.fit(log(name)).evidence


@pytest.mark.parametrize("name,below", [("parquet_columns_row_groups", 0.9),
                                        ("pandas_read_parquet_columns", 0.6)])
def test_replay_and_the_row_groups_read_whole(tmp_path, name, below):
    """The replay reads what the program read (0.98 or more here); reading the row groups
    whole scores far lower: 0.84 one at a time (bytes 1.37 times, half the reads, of
    another size), 0.39 a file at once (a read a file for 5)."""
    r = replay_like(name, tmp_path)
    assert r.real["read_ops"] == r.emulated["read_ops"]

    def whole(w):
        del w["dataset"]["parquet_columns"], w["reader"]["parquet_columns_read"]
        w["reader"].pop("parquet_coalesce", None)
    (tmp_path / "wrong").mkdir()
    wrong = run_changed(name, tmp_path / "wrong", whole)
    assert wrong.score < below, wrong.table


def test_a_dataset_s_batches_of_two_columns_of_four(tmp_path):
    """pyarrow.dataset's to_batches(columns=[emb, y]) over shards it was not built from: id
    and text skipped in every row group (emb and y adjacent, one read); a footer read a file
    and epoch, the first file's once more (the dataset's schema): a file kept open while its
    row groups are read, 2 epochs (before: a read a batch's footers, and the projection's
    bytes taken for a partial first epoch; 0.80), replayed at 0.99."""
    name = "pyarrow_dataset_projection"
    f, w = fitted_shape(name, "sample_bytes", "read_threads")
    assert w["dataset"]["parquet_columns"] == [205168, 106002]
    assert w["reader"]["parquet_columns_read"] == [1]
    assert w["reader"]["parquet_open"] == "file"
    replay_like(name, tmp_path, bytes_rel=0.03)     # the 2 schema footers not emulated

"""The column table the loader gives its records and traces in: row selection, columns,
concatenation (empty tables too), dtypes kept, and its pandas DataFrame."""
import numpy as np
import pytest

from dlio_mpi_analysis.loading.table import Table, as_table, concat
from dlio_mpi_analysis.loading.trace_ops import READ_OP, WRITE_OP, as_trace_table, segments_frame


def _trace():
    return Table({"rank": np.array([1, 0, 1, 0], np.int64),
                  "id": np.array([7, 7, 9, 9], np.uint64),
                  "op": np.array([READ_OP, WRITE_OP, READ_OP, READ_OP], np.int8),
                  "start": np.array([0.5, 0.25, 0.125, 1.0])})


def test_columns_length_and_membership():
    t = _trace()
    assert len(t) == 4 and not t.empty
    assert t.columns == ("rank", "id", "op", "start")
    assert "id" in t and "offset" not in t
    assert isinstance(t["id"], np.ndarray) and t["id"].dtype == np.uint64


def test_rows_by_mask_by_indexes_and_by_slice_keep_dtypes():
    t = _trace()
    reads = t[t["op"] == READ_OP]
    assert len(reads) == 3 and reads["rank"].tolist() == [1, 1, 0]
    picked = t[np.array([3, 0])]
    assert picked["start"].tolist() == [1.0, 0.5]
    assert t[1:3]["id"].tolist() == [7, 9]
    for part in (reads, picked, t[1:3], t[np.zeros(4, bool)]):
        assert {n: c.dtype for n, c in part.items()} == {n: c.dtype for n, c in t.items()}
    assert t[np.zeros(4, bool)].empty


def test_a_wrong_mask_or_column_length_is_refused():
    t = _trace()
    with pytest.raises(ValueError, match="row mask"):
        t[np.array([True, False])]
    with pytest.raises(ValueError, match="3 values for 4 rows"):
        t["offset"] = np.zeros(3)
    with pytest.raises(KeyError, match="no column 'offset'"):
        t["offset"]


def test_set_a_column_a_scalar_and_with_column():
    t = _trace()
    t["process"] = 2
    assert t["process"].tolist() == [2, 2, 2, 2]
    more = t.with_column("end", t["start"] + 1)
    assert "end" in more and "end" not in t
    t["start"] += 1.0       # in place, as the loader shifts a log's times
    assert t["start"].tolist() == [1.5, 1.25, 1.125, 2.0]


def test_sorted_by_is_stable_over_several_columns():
    t = _trace().sorted_by("rank", "start")
    assert t["rank"].tolist() == [0, 0, 1, 1]
    assert t["start"].tolist() == [0.25, 1.0, 0.125, 0.5]


def test_concat_keeps_dtypes_and_order_and_empty_tables():
    t = _trace()
    joined = concat([t, t[np.zeros(4, bool)], t[:1]])
    assert len(joined) == 5 and joined["start"].tolist()[-1] == 0.5
    assert joined["id"].dtype == np.uint64 and joined["op"].dtype == np.int8
    empty = concat([t[np.zeros(4, bool)], t[np.zeros(4, bool)]])
    assert empty.empty and empty.columns == t.columns and empty["id"].dtype == np.uint64
    assert concat([]).empty
    with pytest.raises(ValueError, match="different columns"):
        concat([t, t.drop(["start"])])


def test_frame_and_back():
    t = _trace()
    frame = t.frame()
    assert list(frame.columns) == list(t.columns)
    assert [frame[n].dtype for n in t.columns] == [t[n].dtype for n in t.columns]
    back = as_table(frame)
    assert all(np.array_equal(back[n], t[n]) and back[n].dtype == t[n].dtype for n in t.columns)
    assert Table().frame().empty


def test_a_trace_frame_has_the_op_names_and_comes_back_as_codes():
    t = _trace()
    frame = segments_frame(t)
    assert frame["op"].tolist() == ["read", "write", "read", "read"]
    back = as_trace_table(frame)
    assert back["op"].dtype == np.int8 and back["op"].tolist() == t["op"].tolist()

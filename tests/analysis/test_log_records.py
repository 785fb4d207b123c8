"""The records and DXT traces read_log takes through darshan-util's C API are PyDarshan's own:
the same records, in the same order, with the same counters and segments."""
import os

import darshan
import numpy as np
import pandas as pd
import pytest

from dlio_mpi_analysis.loading.logfile import read_log
from dlio_mpi_analysis.loading.trace_ops import segments_frame

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(os.path.dirname(HERE), "fixtures", "darshan")
MODULES = ("POSIX", "STDIO", "MPI-IO", "H5F", "H5D")
TRACES = ("DXT_POSIX", "DXT_MPIIO")


def pydarshan_frames(path):
    """(module -> counters frame, DXT module -> segments frame) as PyDarshan reads them."""
    report = darshan.DarshanReport(path, read_all=False)
    records, segments = {}, {}
    for mod in MODULES:
        if mod not in report.modules:
            continue
        report.mod_read_all_records(mod, dtype="numpy")
        rows = list(report.records[mod])
        names = report.counters[mod]["counters"] + report.counters[mod]["fcounters"]
        frame = pd.DataFrame([list(r["counters"]) + list(r["fcounters"]) for r in rows],
                             columns=names)
        records[mod] = (np.array([r["id"] for r in rows], dtype=np.uint64),
                        np.array([r["rank"] for r in rows], dtype=np.int64), frame)
    for mod in TRACES:
        if mod not in report.modules:
            continue
        report.mod_read_all_dxt_records(mod)
        rows = [(r["rank"], r["id"], op, s["offset"], s["length"], s["start_time"],
                 s["end_time"])
                for r in report.records[mod] for op in ("read", "write")
                for s in r[f"{op}_segments"]]
        segments[mod] = rows
    return records, segments


@pytest.mark.parametrize("name", ["ior_mpiio_coll_4ranks.darshan", "h5py_chunked.darshan",
                                  "dlio_tfrecord.darshan", "ior_random.darshan"])
def test_records_and_traces_are_pydarshans(name):
    path = os.path.join(FIXTURES, name)
    contents = read_log(path, MODULES, TRACES)
    records, segments = pydarshan_frames(path)
    assert set(contents.records) == set(records)
    for mod, (ids, ranks, counters) in records.items():
        frame = contents.records[mod]
        assert frame["id"].dtype == np.uint64 and frame["rank"].dtype == np.int64
        assert frame["id"].tolist() == ids.tolist() and frame["rank"].tolist() == ranks.tolist()
        assert list(frame.columns[2:]) == list(counters.columns)
        for column in counters.columns:
            assert frame[column].tolist() == counters[column].tolist(), (mod, column)
    assert set(contents.dxt_segments) == set(segments)
    for mod, rows in segments.items():
        frame = segments_frame(contents.dxt_segments[mod])
        assert len(rows) > 0
        got = list(zip(frame["rank"], frame["id"], frame["op"].astype(str), frame["offset"],
                       frame["length"], frame["start"], frame["end"]))
        assert got == rows, mod

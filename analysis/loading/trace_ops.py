"""The ``op`` column of a DXT trace table: an int8 code per traced operation, READ_OP or
WRITE_OP, the index of the operation's name in OP_NAMES.

Codes, not names: a trace of millions of operations is compared and selected as small
integers, and no category type is needed. :func:`segments_frame` gives the pandas DataFrame of
a trace with the names as a categorical column, for the code that reads traces with pandas.
"""

import numpy as np

OP_NAMES = ("read", "write")
READ_OP, WRITE_OP = 0, 1
OP_DTYPE = np.int8


def op_code(name):
    """The code of an operation's name ("read" or "write")."""
    return OP_NAMES.index(name)


def as_trace_table(trace):
    """A trace as a Table with the op's code: a Table as it is, a DataFrame of the trace's
    columns (its op the names, as :func:`segments_frame` gives) with its op turned to codes;
    None as None."""
    from dlio_mpi_analysis.loading.table import as_table

    table = as_table(trace)
    if table is not None and "op" in table and table["op"].dtype.kind not in "iu":
        table = table.with_column("op", np.array([op_code(str(o)) for o in table["op"]],
                                                 dtype=OP_DTYPE))
    return table


def segments_frame(table):
    """A trace table as a pandas DataFrame, its ``op`` column the names as a categorical of
    OP_NAMES (the trace of a table without an ``op`` column as it is)."""
    import pandas as pd

    frame = table.frame()
    if "op" in frame:
        frame["op"] = pd.Categorical.from_codes(table["op"].astype(np.int8),
                                                categories=list(OP_NAMES))
    return frame

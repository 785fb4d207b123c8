"""A column table: the records and traces the analysis reads, as numpy arrays by column name.

A :class:`Table` is an ordered mapping of column names to 1-D numpy arrays of one length.
``t[name]`` is the column itself (an ndarray, changed in place by assignments to its
elements); ``t[mask]`` or ``t[indexes]`` the table of those rows; ``t[name] = values`` sets or
adds a column. The diagnosis path reads its records and traces this way because importing
pandas costs a fresh process more than a small log's whole diagnosis; :meth:`Table.frame` gives
a pandas DataFrame to the code that wants one (pandas imported there and then).
"""

import numpy as np


class Table:
    """Columns of equal length, in insertion order (see the module docstring)."""

    __slots__ = ("_columns", "_length")

    def __init__(self, columns=None, length=None):
        """``columns``: a mapping (or pairs) of name -> 1-D array-like; ``length``: the number
        of rows of a table without columns (else taken from the columns)."""
        self._columns = {}
        self._length = length
        for name, values in dict(columns or {}).items():
            self[name] = values
        if self._length is None:
            self._length = 0

    def __len__(self):
        return self._length

    @property
    def empty(self):
        """True without rows."""
        return self._length == 0

    @property
    def columns(self):
        """The column names, in order."""
        return tuple(self._columns)

    def __contains__(self, name):
        return name in self._columns

    def __iter__(self):
        return iter(self._columns)

    def items(self):
        """(name, column) pairs, in order."""
        return self._columns.items()

    def __getitem__(self, key):
        if isinstance(key, str):
            try:
                return self._columns[key]
            except KeyError:
                raise KeyError(f"no column {key!r} (columns: {', '.join(self._columns)})") \
                    from None
        return self.rows(key)

    def __setitem__(self, name, values):
        if not isinstance(name, str):
            raise TypeError(f"a column name is a str, not {type(name).__name__}")
        array = np.asarray(values)
        if array.ndim == 0:     # a scalar: one value on every row
            array = np.full(self._length or 0, array[()])
        if array.ndim != 1:
            raise ValueError(f"column {name!r}: a 1-D array is expected, not {array.ndim}-D")
        if not self._columns and not self._length:    # the first column sets the length
            self._length = len(array)
        if len(array) != self._length:
            raise ValueError(f"column {name!r} has {len(array)} values for {self._length} rows")
        self._columns[name] = array

    def with_column(self, name, values):
        """A new table with column ``name`` set to ``values`` (the other columns shared)."""
        out = self.copy(deep=False)
        out[name] = values
        return out

    def rows(self, which):
        """The table of the rows a boolean mask, an index array or a slice selects."""
        if isinstance(which, slice):
            return Table({name: column[which] for name, column in self._columns.items()},
                         length=len(range(*which.indices(self._length))))
        which = np.asarray(which)
        if which.dtype == bool:
            if which.shape != (self._length,):
                raise ValueError(f"a row mask of {which.shape} for {self._length} rows")
            length = int(which.sum())
        else:
            which = which.astype(np.intp, copy=False)
            length = len(which)
        return Table({name: column[which] for name, column in self._columns.items()},
                     length=length)

    def copy(self, deep=True):
        """A table of the same columns; copies of their arrays when ``deep``."""
        return Table({name: column.copy() if deep else column
                      for name, column in self._columns.items()}, length=self._length)

    def drop(self, names):
        """The table without the columns ``names``."""
        names = set(names)
        return Table({n: c for n, c in self._columns.items() if n not in names},
                     length=self._length)

    def sorted_by(self, *names):
        """The rows ordered by the columns ``names`` (the first the primary key), a stable
        sort: rows equal in all of them keep their order."""
        if not names or self.empty:
            return self
        return self.rows(np.lexsort([self._columns[n] for n in reversed(names)]))

    def frame(self):
        """The table as a pandas DataFrame (same columns, order and dtypes)."""
        import pandas as pd

        return pd.DataFrame({name: column for name, column in self._columns.items()},
                            index=pd.RangeIndex(self._length))

    @classmethod
    def from_frame(cls, frame):
        """The table of a pandas DataFrame's columns (its index left out)."""
        return cls({str(name): frame[name].to_numpy() for name in frame.columns},
                   length=len(frame))

    def __repr__(self):
        shown = ", ".join(f"{n}: {c.dtype}" for n, c in self._columns.items())
        return f"Table({self._length} rows; {shown})"


def concat(tables):
    """The rows of ``tables`` one after the other; every table must have the same columns (in
    any order: the first table's order is kept). An empty list gives a table without columns."""
    tables = list(tables)
    if not tables:
        return Table()
    names = tables[0].columns
    for t in tables[1:]:
        if set(t.columns) != set(names):
            raise ValueError(f"tables of different columns: {', '.join(names)} and "
                             f"{', '.join(t.columns)}")
    if len(tables) == 1:
        return tables[0]
    return Table({n: np.concatenate([t[n] for t in tables]) for n in names},
                 length=sum(len(t) for t in tables))


def as_table(data):
    """``data`` as a Table: a Table as it is, a pandas DataFrame's columns, None as None."""
    if data is None or isinstance(data, Table):
        return data
    if hasattr(data, "columns") and hasattr(data, "to_numpy"):
        return Table.from_frame(data)
    return Table(data)

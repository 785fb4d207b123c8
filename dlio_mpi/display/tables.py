"""Plain-text tables for a terminal, a pipe or a text file, laid out by tabulate: columns as wide
as their widest cell, two spaces apart, no colour codes and no trailing blanks. Every text table
the package prints goes through :func:`table`; cells arrive as text already formatted (sizes by
:mod:`dlio_mpi.display.units`), and are shown as they are: never re-parsed as numbers,
leading blanks kept (an indented row label is a sub-row)."""

import tabulate

ALIGN = {"l": "left", "r": "right", "c": "center"}


def table(rows, header, align="l", rule=False):
    """The lines of a table of ``rows`` (lists of cells, turned into text) under ``header``.
    ``align``: one letter per column, 'l' (left), 'r' (right) or 'c', its last letter
    repeated for the columns beyond it ("lr": the first column left, the others right).
    ``rule``: a line of dashes under the header, one run per column."""
    header = [str(h) for h in header]
    rows = [[str(c) for c in row] for row in rows]
    columns = max([len(header), *(len(r) for r in rows)])
    letters = (align + align[-1] * columns)[:columns]
    padding = tabulate.MIN_PADDING
    # a header cell as wide as its column, not two wider than its text
    tabulate.MIN_PADDING = 0
    try:
        text = tabulate.tabulate(rows, headers=header, tablefmt="simple" if rule else "plain",
                                 colalign=[ALIGN[a] for a in letters], disable_numparse=True,
                                 preserve_whitespace=True)
    finally:
        tabulate.MIN_PADDING = padding
    return [line.rstrip() for line in text.splitlines()]

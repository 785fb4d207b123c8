"""Text tables through tabulate: columns as wide as their widest cell, two spaces apart, cells
shown as given."""
from dlio_mpi.display.tables import table


def test_columns_aligned_as_asked_and_cells_kept_as_given():
    lines = table([["records", "1,024", "7"], ["  shared / unique", "3 / 4", "-"],
                   ["mean read size", "4.0 KiB", "007"]], ["metric", "POSIX", "STDIO"],
                  align="lr")
    assert lines == ["metric               POSIX  STDIO",
                     "records              1,024      7",
                     "  shared / unique    3 / 4      -",
                     "mean read size     4.0 KiB    007"]


def test_a_rule_under_the_header_and_no_trailing_blanks_or_colour():
    lines = table([["imagenet", "npy", ""], ["ffn", "hdf5", "x"]], ["application", "format",
                                                                     "note"], rule=True)
    assert lines == ["application  format  note",
                     "-----------  ------  ----",
                     "imagenet     npy",
                     "ffn          hdf5    x"]
    assert not any("\x1b" in line for line in lines)


def test_per_column_alignment_repeats_its_last_letter():
    lines = table([["a", "b", "1", "22"]], ["c1", "c2", "c3", "c4"], align="llr")
    assert lines == ["c1  c2  c3  c4", "a   b    1  22"]

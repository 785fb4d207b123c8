"""Sizes, rates and durations as text: binary units, whole numbers where exact."""
import pytest

from dlio_mpi.display import units


@pytest.mark.parametrize("n, text", [
    (0, "0 B"), (1, "1 B"), (1023, "1,023 B"), (1024, "1 KiB"), (1536, "1.5 KiB"),
    (4096, "4 KiB"), (256 * 1024, "256 KiB"), (2**20, "1 MiB"), (1_000_000, "976.6 KiB"),
    (24_588_000_000, "22.9 GiB"), (5 * 2**40, "5 TiB"), (3 * 2**50, "3 PiB"),
    (2048 * 2**50, "2,048 PiB"), (None, "-"),
])
def test_size_in_binary_units(n, text):
    assert units.size(n) == text


def test_size_decimals_and_fixed_units():
    assert units.size(1_234_567, decimals=2) == "1.18 MiB"
    assert units.size_in(3 * 2**29, "GiB") == "1.50 GiB"
    assert units.size_in(2**30, "GiB", 3) == "1.000 GiB"
    assert units.size_in(None, "GiB") == "-"


def test_rates_are_sizes_per_second():
    assert units.rate(410.6e6) == "391.6 MiB/s"
    assert units.rate(512 * 2**20) == "512 MiB/s"
    assert units.rate_in(0.5 * 2**30, "GiB", 3) == "0.500 GiB/s"
    assert units.rate(None) == "-"


def test_durations():
    assert units.seconds(0.0123456) == "0.01235 s"
    assert units.seconds(12.5) == "12.5 s"
    assert units.seconds(3600) == "3,600 s"
    assert units.seconds(None) == "-"
    assert [units.duration(s) for s in (0.25, 40, 720, 9000)] == \
        ["0.25 s", "40 s", "12 min", "2.5 h"]

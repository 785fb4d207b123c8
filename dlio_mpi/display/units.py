"""Sizes, rates and durations as text, in one convention for everything the package shows.

Sizes of files, transfers and data sets are in binary units (B, KiB, MiB, GiB, TiB, PiB: powers
of 1024), a whole number where the size is an exact multiple of its unit (``4 KiB``) and one
decimal otherwise (``22.9 GiB``); rates are a size per second (``391.6 MiB/s``). Decimal MB
appear only as numbers under the DLIO benchmark's own keys (``train_io_mean_MB_per_second``),
never in text made here. Every module that shows a size calls this one
(tests/display/test_size_text_scan.py checks that no other formats one by hand).
"""

BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
UNIT_BYTES = {unit: 1 << (10 * i) for i, unit in enumerate(BINARY_UNITS)}
MISSING = "-"


def size(n, decimals=1):
    """Bytes in the largest binary unit that keeps the figure at least 1: '512 B', '4 KiB',
    '1.5 MiB', '22.9 GiB' (thousands separated in PiB). None gives '-'."""
    if n is None:
        return MISSING
    value, unit = float(n), BINARY_UNITS[0]
    for unit in BINARY_UNITS:
        if abs(value) < 1024 or unit == BINARY_UNITS[-1]:
            break
        value /= 1024
    if value == int(value):
        return f"{int(value):,} {unit}"
    return f"{value:,.{1 if unit == 'B' else decimals}f} {unit}"


def size_in(n, unit, decimals=2):
    """Bytes in a given binary unit with a fixed number of decimals ('1.50 GiB'), for figures
    that are read side by side in the same unit. None gives '-'."""
    if n is None:
        return MISSING
    return f"{n / UNIT_BYTES[unit]:,.{decimals}f} {unit}"


def rate(bytes_per_s, decimals=1):
    """Bytes per second as a size per second: '391.6 MiB/s'. None gives '-'."""
    return MISSING if bytes_per_s is None else f"{size(bytes_per_s, decimals)}/s"


def rate_in(bytes_per_s, unit, decimals=1):
    """Bytes per second in a given binary unit per second: '0.532 GiB/s'."""
    return MISSING if bytes_per_s is None else f"{size_in(bytes_per_s, unit, decimals)}/s"


def seconds(value):
    """A duration in seconds: four significant figures below 1000 s, whole seconds above
    ('0.01234 s', '12.5 s', '3,600 s'). None gives '-'."""
    if value is None:
        return MISSING
    return f"{value:,.0f} s" if value >= 1000 else f"{value:.4g} s"


def duration(value):
    """A coarse duration for estimates: hours above two hours, minutes above two minutes,
    else seconds ('1.5 h', '12 min', '40 s', '0.25 s')."""
    if value >= 7200:
        return f"{value / 3600:.1f} h"
    if value >= 120:
        return f"{value / 60:.0f} min"
    return f"{value:.0f} s" if value >= 1 else f"{value:.2g} s"

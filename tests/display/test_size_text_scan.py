"""No module of dlio_mpi/ or analysis/ but dlio_mpi/display/units.py writes a size or a rate
into text by hand: an f-string with a figure followed by a unit (f"{n / 2**20:.1f} MiB"), or a
ladder of units to pick from (("KiB", "MiB", "GiB")). Read from the source, not run."""
import ast
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGES = ("dlio_mpi", "analysis")
FORMATTER = os.path.join("dlio_mpi", "display", "units.py")
# a unit of bytes right after a formatted figure: " MiB", " GB/s", "KB"
UNIT_AFTER_FIGURE = re.compile(r"^\s?(B|KiB|MiB|GiB|TiB|PiB|kB|KB|MB|GB|TB)(/s)?\b")
UNITS = {"KiB", "MiB", "GiB", "TiB", "KB", "MB", "GB", "TB"}


def hand_formatted(tree):
    """(line, text) of every size written by hand in a module's syntax tree."""
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = node.values
            for figure, after in zip(parts, parts[1:]):
                if isinstance(figure, ast.FormattedValue) and isinstance(after, ast.Constant) \
                        and isinstance(after.value, str) and UNIT_AFTER_FIGURE.match(after.value) \
                        and not _exact_bytes(figure, after.value) \
                        and not _dlio_key(figure, after.value):
                    hits.append((node.lineno, ast.unparse(node)))
                    break
        elif isinstance(node, (ast.Tuple, ast.List)):
            names = {e.value for e in ast.walk(node)
                     if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            if len(names & UNITS) >= 2:
                hits.append((node.lineno, ast.unparse(node)[:80]))
    return hits


def _exact_bytes(figure, after):
    """A byte count shown exactly ('{n} B', '{n:,} B'): a count, not a scaled size."""
    return after.lstrip().startswith("B") and not after.lstrip().startswith("B/s") \
        and (figure.format_spec is None
             or ast.unparse(figure.format_spec) in ("f','", "f','"))


def _dlio_key(figure, after):
    """A figure under one of the DLIO benchmark's own decimal keys (io_MB_per_second), shown
    in the unit its key names."""
    unit = after.split()[0].split("/")[0]
    return unit in ("MB", "GB") and f"_{unit}_per_second" in ast.unparse(figure.value)


def modules():
    for package in PACKAGES:
        for folder, _, files in os.walk(os.path.join(ROOT, package)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    if os.path.relpath(path, ROOT) != FORMATTER:
                        yield path


def test_the_scan_finds_a_size_written_by_hand():
    for source in ('f"{n / 2**20:.1f} MiB"', 'f"{n / 1e6:.0f} MB/s of reads"',
                   'UNITS = ("B", "KiB", "MiB")', 'f"{gib:.2f} GiB/s (median)"'):
        assert hand_formatted(ast.parse(source)), source
    for source in ('f"{n} B"', 'f"{n:,} B x {count}"', 'f"{size(n)} read"',
                   '"train_io_mean_MB_per_second"', 'f"{r[\'io_MB_per_second\']:.1f} MB/s"'):
        assert not hand_formatted(ast.parse(source)), source


def test_no_module_formats_a_size_by_hand():
    hits = []
    for path in modules():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        hits += [f"{os.path.relpath(path, ROOT)}:{line}: {text}"
                 for line, text in hand_formatted(tree)]
    assert not hits, "sizes formatted by hand (use dlio_mpi.display.units):\n" + "\n".join(hits)

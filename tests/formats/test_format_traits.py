"""Each format module carries its traits, and the emulator asks them: no dataset format is
tested by its name outside dlio_mpi/formats (but for a key of one format's own)."""
import ast
import os

from dlio_mpi import formats
from dlio_mpi.config.schema import FORMATS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_every_format_has_its_traits():
    assert set(formats.TRAITS) == set(FORMATS)
    for name, t in formats.TRAITS.items():
        assert t.name == name and t.extension == formats.get(name).EXTENSION
        assert t.index_computed == hasattr(formats.get(name), "layout"), name
    t = formats.TRAITS
    assert [n for n in t if t[n].rows] == ["hdf5"]
    assert sorted(n for n in t if t[n].numpy_load) == ["npy", "npz"]
    assert sorted(n for n in t if t[n].written_first) == ["hdf5", "raw"]
    assert formats.listed(lambda x: "zip" in x.compressions) == "npz"


def _format_comparisons(path):
    with open(path) as f:
        tree = ast.parse(f.read())
    hits = []
    for n in ast.walk(tree):
        if not isinstance(n, ast.Compare):
            continue
        ops = [n.left] + n.comparators
        text = " ".join(ast.unparse(o) for o in ops)
        names = [c.value for o in ops for c in ast.walk(o)
                 if isinstance(c, ast.Constant) and isinstance(c.value, str)]
        if "format" in text and "checkpoint" not in text and "ck." not in text \
                and any(v in FORMATS for v in names):
            hits.append(f"{os.path.relpath(path, ROOT)}:{n.lineno}: {ast.unparse(n)}")
    return hits


def test_no_format_is_tested_by_name_outside_the_formats():
    hits = []
    for folder, _, files in os.walk(os.path.join(ROOT, "dlio_mpi")):
        if os.path.join("dlio_mpi", "formats") in folder:
            continue
        for name in files:
            if name.endswith(".py"):
                hits += _format_comparisons(os.path.join(folder, name))
    # dataset.npz_layout is a key of the npz format's own: its checks name the format
    assert len(hits) <= 2, "\n".join(hits)


def _dataset_format_comparisons(path):
    """Comparisons of a dataset format (a name `fmt`, or a "format" looked up outside a
    checkpoint section) with a format's name."""
    with open(path) as f:
        tree = ast.parse(f.read())
    hits = []
    for n in ast.walk(tree):
        if not isinstance(n, ast.Compare):
            continue
        ops = [n.left] + n.comparators
        named = any(isinstance(c, ast.Name) and c.id == "fmt" for o in ops for c in ast.walk(o))
        looked_up = any(isinstance(c, ast.Constant) and c.value == "format"
                        for o in ops for c in ast.walk(o)) \
            and "checkpoint" not in ast.unparse(n)
        names = [c.value for o in ops for c in ast.walk(o)
                 if isinstance(c, ast.Constant) and isinstance(c.value, str)]
        if (named or looked_up) and any(v in FORMATS for v in names):
            hits.append(f"{os.path.relpath(path, ROOT)}:{n.lineno}: {ast.unparse(n)}")
    return hits


def test_the_analysis_asks_the_formats_too():
    """Before: the fit, the replay's size and the diagnosis named formats (fmt == "hdf5",
    fmt in ("tfrecord", "csv"), a table of framing bytes) in 20 places; they ask the traits."""
    hits = []
    for folder, _, files in os.walk(os.path.join(ROOT, "analysis")):
        for name in files:
            if name.endswith(".py"):
                hits += _dataset_format_comparisons(os.path.join(folder, name))
    assert hits == [], "\n".join(hits)


def test_the_fits_framing_and_fields_are_the_formats():
    from dlio_mpi.formats import csvtext, tfrecord
    t = formats.TRAITS
    assert (t["tfrecord"].framing, t["npz"].framing, t["raw"].framing) == (tfrecord.OVERHEAD,
                                                                             128, 0)
    assert t["csv"].field_bytes == csvtext.FIELD and t["raw"].field_bytes == 1
    assert sorted(n for n in t if t[n].streamed) == ["csv", "tfrecord"]

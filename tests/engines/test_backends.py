"""The backend registry: every io.interface is one Backend whose traits the rest of the emulator
asks, and nothing outside the registry tests an interface by its name."""
import ast
import os

import pytest

from dlio_mpi import backends, engines
from dlio_mpi.config import loader as config
from dlio_mpi.config.schema import SCHEMA

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_every_interface_the_schema_takes_is_a_backend():
    assert SCHEMA["io"]["interface"].choices == backends.NAMES
    assert set(backends.NAMES) == {"posix", "posix_direct", "stdio", "mmap", "mpiio",
                                   "mpiio_coll", "hdf5", "hdf5_coll", "hdf5_sec2", "hdf5_core",
                                   "io_uring"}
    with pytest.raises(KeyError, match="no io.interface 'nfs'"):
        backends.get("nfs")


def test_traits():
    b = backends.BACKENDS
    assert [n for n in b if b[n].collective] == ["mpiio_coll", "hdf5_coll"]
    assert [n for n in b if b[n].threadable] == ["posix", "posix_direct", "stdio", "mmap",
                                                 "mpiio", "hdf5", "hdf5_sec2", "hdf5_core",
                                                 "io_uring"]
    assert [n for n in b if b[n].streams] == ["posix", "posix_direct", "stdio", "mmap",
                                              "mpiio", "io_uring"]
    assert [n for n in b if b[n].reads_past_end] == ["posix", "stdio", "mpiio", "io_uring"]
    assert [n for n in b if b[n].buffered] == ["posix", "stdio"]
    assert [n for n in b if b[n].uses_mpi] == ["mpiio", "mpiio_coll", "hdf5", "hdf5_coll"]
    assert [n for n in b if b[n].mpi_threads] == ["mpiio", "hdf5"]
    assert {n: b[n].hdf5_driver for n in b if b[n].hdf5_driver} == {
        "hdf5": "mpio", "hdf5_coll": "mpio", "hdf5_sec2": "sec2", "hdf5_core": "core"}
    # the op log's interfaces are the engines' own
    assert {x.oplog for x in b.values()} <= set(engines.IFACES)
    assert backends.listed(lambda x: x.buffered) == "posix or stdio"


@pytest.mark.parametrize("name,kind", [("posix", engines.PosixFile),
                                       ("posix_direct", engines.PosixFile),
                                       ("stdio", engines.StdioFile), ("mmap", engines.PosixFile),
                                       ("mpiio", engines.MPIFile),
                                       ("io_uring", engines.UringFile)])
def test_open_read_reads_through_the_backend(datafile, name, kind):
    path, data = datafile(1 << 16)
    cfg = config.load(["workload=default", f"io.interface={name}"])
    b = backends.of(cfg)
    log = engines.OpLog(100)
    with b.open_read(path, io=cfg.io, file_id=5, oplog=log) as h:
        assert isinstance(h, kind)
        out, got = h.readv([0], [4096])
        assert got == 4096 and bytes(out[:4096]) == data[:4096].tobytes()
    a = log.arrays()
    reads = a["op"] == engines.OP["read"]
    assert set(a["iface"][reads].tolist()) == {engines.IFACE[b.oplog]}


def _interface_comparisons(path):
    """Comparisons of an expression naming the interface (io.interface, interface, kind) with
    a literal interface name."""
    with open(path) as f:
        tree = ast.parse(f.read())
    hits = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Compare):
            ops = [n.left] + n.comparators
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                and n.func.attr in ("startswith", "endswith"):
            ops = [n.func.value] + n.args
        else:
            continue
        text = " ".join(ast.unparse(o) for o in ops)
        names = [c.value for o in ops for c in ast.walk(o)
                 if isinstance(c, ast.Constant) and isinstance(c.value, str)]
        if ("interface" in text or "kind" in text) and any(
                v in backends.NAMES or v in ("hdf5", "mpiio") for v in names):
            hits.append(f"{os.path.relpath(path, ROOT)}:{n.lineno}: {ast.unparse(n)}")
    return hits


def test_no_interface_is_tested_by_name_outside_the_registry():
    hits = []
    for folder, _, files in os.walk(os.path.join(ROOT, "dlio_mpi")):
        if os.path.join("dlio_mpi", "backends") in folder:
            continue
        for name in files:
            if name.endswith(".py"):
                hits += _interface_comparisons(os.path.join(folder, name))
    # reader.odirect is io.interface=posix_direct by another name: the one left
    assert len(hits) <= 1, "\n".join(hits)


def test_the_scan_sees_a_comparison(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("def f(cfg):\n    return cfg.io.interface in ('mpiio', 'stdio')\n")
    assert len(_interface_comparisons(p)) == 1

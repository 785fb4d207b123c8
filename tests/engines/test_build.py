"""The build stops with one line saying what to install when MPI or a parallel HDF5 is missing."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def build_probe(env):
    """Run setup.py far enough to look for the MPI compiler and HDF5 (no compilation)."""
    full = {k: v for k, v in os.environ.items() if k not in ("MPICC", "HDF5_DIR")}
    full.update(env)
    return subprocess.run([sys.executable, "setup.py", "--version"], cwd=ROOT, env=full,
                          capture_output=True, text=True, timeout=120)


def last_line(p):
    return p.stderr.strip().splitlines()[-1]


def test_missing_mpi_compiler(tmp_path):
    p = build_probe({"PATH": str(tmp_path), "MPICC": ""})
    assert p.returncode != 0
    line = last_line(p)
    assert line.startswith("dlio_mpi build error: no MPI C compiler wrapper (mpicc) found")
    assert "apt-get install" in line


def test_serial_hdf5_is_refused(tmp_path):
    inc = tmp_path / "include"
    inc.mkdir()
    (inc / "H5pubconf.h").write_text("#define H5_HAVE_THREADSAFE 1\n")
    p = build_probe({"HDF5_DIR": str(tmp_path)})
    assert p.returncode != 0
    line = last_line(p)
    assert "not built with MPI (parallel) support" in line and str(tmp_path) in line


def test_hdf5_dir_without_headers(tmp_path):
    p = build_probe({"HDF5_DIR": str(tmp_path)})
    assert p.returncode != 0
    assert "HDF5 headers not found" in last_line(p)


def test_a_header_whose_op_log_codes_differ_is_refused(tmp_path):
    """setup.py checks csrc/dm.h's operation and interface codes against
    dlio_mpi/run/oplog_format.py before compiling anything."""
    (tmp_path / "csrc").mkdir()
    (tmp_path / "dlio_mpi" / "run").mkdir(parents=True)
    with open(os.path.join(ROOT, "csrc", "dm.h")) as f:
        header = f.read()
    (tmp_path / "csrc" / "dm.h").write_text(header.replace("DM_OP_MMAP = 8", "DM_OP_MAP = 8"))
    for name in ("setup.py", os.path.join("dlio_mpi", "run", "oplog_format.py")):
        with open(os.path.join(ROOT, name)) as f:
            (tmp_path / name).write_text(f.read())
    p = subprocess.run([sys.executable, "setup.py", "--version"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode != 0
    line = last_line(p)
    assert line.startswith("dlio_mpi build error: csrc/dm.h enum dm_op") and "MAP=8" in line


def test_setup_rebuilds_when_any_engine_source_changes():
    """scripts/setup.sh rebuilds the package when the hash of its sources changes: every
    C, Cython (.pyx, .pxi, .pxd) and op-log format source is among them."""
    import glob
    import shlex

    with open(os.path.join(ROOT, "scripts", "setup.sh")) as f:
        line = next(x for x in f if x.startswith("src_id="))
    words = shlex.split(line[line.index("cat ") + 4:line.index("2>/dev/null")])
    hashed = {os.path.normpath(p) for w in words for p in glob.glob(os.path.join(ROOT, w))}
    sources = [p for pattern in ("csrc/**/*.c", "csrc/**/*.h", "dlio_mpi/**/*.pyx",
                                 "dlio_mpi/**/*.pxi", "dlio_mpi/**/*.pxd")
               for p in glob.glob(os.path.join(ROOT, pattern), recursive=True)]
    sources.append(os.path.join(ROOT, "dlio_mpi", "run", "oplog_format.py"))
    assert len(sources) > 15
    missing = [os.path.relpath(p, ROOT) for p in sources if os.path.normpath(p) not in hashed]
    assert not missing, missing

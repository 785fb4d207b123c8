"""The build stops with one line saying what to install when MPI or a parallel HDF5 is missing."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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

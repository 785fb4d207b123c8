"""Build of dlio_mpi's native engines: csrc/**/*.c and one Cython module, compiled with the MPI
compiler wrapper against a parallel HDF5 found through HDF5_DIR, pkg-config or h5pcc."""
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from glob import glob

from setuptools import Extension, find_packages, setup


def fail(msg):
    sys.exit(f"dlio_mpi build error: {msg}")


def mpi_compiler():
    cc = os.environ.get("MPICC") or shutil.which("mpicc")
    if not cc:
        fail("no MPI C compiler wrapper (mpicc) found: install an MPI "
             "(Debian: apt-get install openmpi-bin libopenmpi-dev), load your MPI module, "
             "or set MPICC")
    return cc


def _flags_from(tokens):
    inc = [t[2:] for t in tokens if t.startswith("-I")]
    lib = [t[2:] for t in tokens if t.startswith("-L")]
    return inc, lib


def parallel_hdf5():
    """(include dirs, library dirs, where) of a parallel HDF5."""
    tried = []
    hdir = os.environ.get("HDF5_DIR")
    if hdir:
        inc, lib = [os.path.join(hdir, "include")], [os.path.join(hdir, "lib")]
        where = f"HDF5_DIR={hdir}"
    else:
        inc = lib = None
        for pc in ("hdf5-mpi", "hdf5-openmpi", "hdf5-mpich", "hdf5"):
            tried.append(f"pkg-config {pc}")
            try:
                out = subprocess.run(["pkg-config", "--cflags", "--libs", pc],
                                     capture_output=True, text=True)
            except FileNotFoundError:
                break
            if out.returncode == 0:
                inc, lib = _flags_from(shlex.split(out.stdout))
                where = f"pkg-config {pc}"
                break
        if inc is None and shutil.which("h5pcc"):
            tried.append("h5pcc")
            out = subprocess.run(["h5pcc", "-show"], capture_output=True, text=True)
            inc, lib = _flags_from(shlex.split(out.stdout))
            h5root = os.path.dirname(os.path.dirname(shutil.which("h5pcc")))
            inc = inc + [os.path.join(h5root, "include")]
            lib = lib + [os.path.join(h5root, "lib")]
            where = "h5pcc"
        if inc is None:
            fail("no parallel HDF5 found (looked at HDF5_DIR, " + ", ".join(tried) +
                 "): install one (Debian: apt-get install libhdf5-openmpi-dev), "
                 "load your parallel HDF5 module, or set HDF5_DIR")
    conf = None
    # pkg-config leaves out system include directories
    for d in inc or ["/usr/include", "/usr/local/include"]:
        for name in ("H5pubconf.h", "H5pubconf-64.h"):
            if os.path.exists(os.path.join(d, name)):
                conf = os.path.join(d, name)
                break
        if conf:
            break
    if conf is None:
        fail(f"HDF5 headers not found from {where} (no H5pubconf.h in {inc})")
    with open(conf) as f:
        if not re.search(r"#define\s+H5_HAVE_PARALLEL\s+1", f.read()):
            fail(f"the HDF5 of {where} ({conf}) is not built with MPI (parallel) support: "
                 "install a parallel HDF5 (Debian: libhdf5-openmpi-dev) or set HDF5_DIR")
    return inc, lib, where


def liburing():
    """(libraries, macros) for the io_uring engine: liburing where pkg-config or the compiler
    finds it, else none (the engine then says at open that the build has no liburing)."""
    try:
        out = subprocess.run(["pkg-config", "--libs", "liburing"], capture_output=True,
                             text=True)
        if out.returncode == 0:
            return ["uring"], [("DM_HAVE_URING", None)]
    except FileNotFoundError:
        pass
    if os.path.exists("/usr/include/liburing.h"):
        return ["uring"], [("DM_HAVE_URING", None)]
    print("dlio_mpi: no liburing found: io.interface=io_uring is not in this build "
          "(Debian: apt-get install liburing-dev)", file=sys.stderr)
    return [], []


def check_oplog_format():
    """csrc/dm.h's operation and interface codes must be those of dlio_mpi/run/oplog_format.py,
    which the engines and the analysis read the op log with."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("oplog_format", "dlio_mpi/run/oplog_format.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with open("csrc/dm.h") as f:
        mismatches = module.header_mismatches(f.read())
    if mismatches:
        fail("; ".join(mismatches))


def extensions():
    import mpi4py
    import numpy
    from Cython.Build import cythonize

    check_oplog_format()
    cc = mpi_compiler()
    inc, lib, where = parallel_hdf5()
    uring_libs, uring_macros = liburing()
    os.environ["CC"] = cc
    ldshared = (sysconfig.get_config_var("LDSHARED") or "cc -shared").split()
    os.environ["LDSHARED"] = " ".join([cc] + ldshared[1:])
    print(f"dlio_mpi: compiling with {cc}, parallel HDF5 from {where}", file=sys.stderr)
    ext = Extension(
        "dlio_mpi.engines._engines",
        sources=["dlio_mpi/engines/_engines.pyx"]
        + sorted(glob("csrc/**/*.c", recursive=True)),
        include_dirs=["csrc", numpy.get_include(), mpi4py.get_include()] + inc,
        library_dirs=lib,
        runtime_library_dirs=[d for d in lib if d.startswith("/") and not d.startswith("/usr/lib")],
        libraries=["hdf5"] + uring_libs,
        extra_compile_args=["-O2", "-std=gnu11", "-Wall", "-Wno-unused-function",
                            "-Wno-sign-compare"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION"),
                       ("H5_USE_110_API", None)] + uring_macros,
    )
    return cythonize([ext], compiler_directives={"language_level": "3"},
                     include_path=[mpi4py.get_include(), os.path.dirname(mpi4py.__file__)])


def packages():
    """dlio_mpi, and the analysis (the folder analysis/) installed as dlio_mpi_analysis: a
    top-level package named "analysis" would clash with any other of that name."""
    ours = find_packages(include=["dlio_mpi", "dlio_mpi.*"])
    analysis = find_packages(include=["analysis", "analysis.*"])
    return ours + ["dlio_mpi_analysis" + name[len("analysis"):] for name in analysis]


setup(ext_modules=extensions(), packages=packages(),
      package_dir={"dlio_mpi_analysis": "analysis"})

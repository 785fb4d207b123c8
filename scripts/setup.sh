#!/usr/bin/env bash
# Set up everything dlio_mpi needs, idempotently:
#   1. an MPI and a parallel HDF5: used as found (mpicc on PATH and h5pcc, HDF5_DIR or
#      pkg-config hdf5-mpi/hdf5-openmpi); otherwise, on Debian as root, installed with apt-get
#      (Open MPI, parallel HDF5, fio, strace);
#   2. a virtual environment (DLIO_MPI_VENV, default <project>/.venv);
#   3. mpi4py built from source against that MPI, h5py built with HDF5_MPI=ON against that HDF5;
#   4. dlio_mpi itself, with its dependencies (hydra-core: Hydra's override parser; pyarrow: the
#      parquet format) and its test extras (pytest; Sphinx and MyST, which build docs/).
# A second run rebuilds nothing. Prints the venv's path on its last line.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${DLIO_MPI_VENV:-$here/.venv}
log() { printf 'setup: %s\n' "$*" >&2; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

find_parallel_hdf5() {
  if [ -n "${HDF5_DIR:-}" ] && [ -f "$HDF5_DIR/include/H5pubconf.h" ]; then echo "HDF5_DIR=$HDF5_DIR"; return 0; fi
  for pc in hdf5-mpi hdf5-openmpi hdf5-mpich; do
    if pkg-config --exists "$pc" 2>/dev/null; then echo "pkg-config $pc"; return 0; fi
  done
  if command -v h5pcc >/dev/null 2>&1; then echo "h5pcc"; return 0; fi
  return 1
}

# 1. system MPI and parallel HDF5
if command -v mpicc >/dev/null 2>&1 && command -v mpiexec >/dev/null 2>&1 && find_parallel_hdf5 >/dev/null; then
  log "using MPI $(command -v mpicc) and parallel HDF5 from $(find_parallel_hdf5)"
else
  command -v apt-get >/dev/null 2>&1 || die "no MPI compiler (mpicc) or no parallel HDF5 found, and no apt-get to install them: load your MPI and parallel HDF5 modules (or set HDF5_DIR) and run again"
  [ "$(id -u)" = 0 ] || die "no MPI or parallel HDF5 found; as root, this script installs them: sudo $0 (or apt-get install openmpi-bin libopenmpi-dev libhdf5-openmpi-dev fio strace)"
  log "installing Open MPI, parallel HDF5, fio and strace with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends openmpi-bin libopenmpi-dev libhdf5-openmpi-dev \
      hdf5-tools fio strace pkg-config liburing-dev >/dev/null
fi
# tools and libraries some tests and benchmarks use: fio (bench-engines), strace (the start-up metadata test,
# bench-scale)
missing=()
for tool in fio strace; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
# liburing: the io_uring engine (io.interface=io_uring); without it the build leaves it out
pkg-config --exists liburing 2>/dev/null || [ -f /usr/include/liburing.h ] || missing+=(liburing-dev)
if [ ${#missing[@]} -gt 0 ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; } \
    || log "not installed: ${missing[*]} (fio: bench-engines; strace: a start-up test, bench-scale; liburing-dev: io.interface=io_uring)"
fi

# 2. virtual environment
if [ ! -x "$venv/bin/python" ]; then
  log "creating virtual environment $venv"
  python3 -m venv "$venv"
fi
py="$venv/bin/python"
pip() { "$py" -m pip --disable-pip-version-check -q "$@"; }

# 3. mpi4py against the system MPI, h5py with HDF5_MPI=ON against the same libhdf5
stamp="$venv/.dlio_mpi-deps"
mpi_id="$(command -v mpicc) $(mpicc -show 2>/dev/null || mpicc --showme 2>/dev/null) $(find_parallel_hdf5)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$mpi_id" ] \
   || ! "$py" -c "import mpi4py, h5py, sys; sys.exit(0 if h5py.get_config().mpi else 1)" 2>/dev/null; then
  pip install -U "setuptools>=77" wheel "cython>=3" numpy pkgconfig
  log "building mpi4py from source against $(command -v mpicc) (a few minutes the first time)"
  MPICC=$(command -v mpicc) pip install --no-binary=mpi4py --no-build-isolation "mpi4py>=3.1"
  hdf5_env=()
  if [ -z "${HDF5_DIR:-}" ]; then
    for pc in hdf5-mpi hdf5-openmpi hdf5-mpich; do
      if pkg-config --exists "$pc" 2>/dev/null; then hdf5_env=(HDF5_PKGCONFIG_NAME="$pc"); break; fi
    done
    if [ ${#hdf5_env[@]} = 0 ] && command -v h5pcc >/dev/null 2>&1; then
      hdf5_env=(HDF5_DIR="$(cd "$(dirname "$(command -v h5pcc)")/.." && pwd)")
    fi
  fi
  log "building h5py with HDF5_MPI=ON (a few minutes the first time)"
  env "${hdf5_env[@]}" CC="$(command -v mpicc)" HDF5_MPI=ON \
      "$py" -m pip --disable-pip-version-check -q install --no-binary=h5py --no-build-isolation "h5py>=3.8"
  "$py" -c "import h5py, sys; sys.exit(0 if h5py.get_config().mpi else 1)" \
      || die "h5py was built without MPI support"
  echo "$mpi_id" > "$stamp"
fi

# 4. the package, with its test extras (the docs' Sphinx and MyST among them); rebuilt only
#    when its sources changed
src_id=$(cd "$here" && cat setup.py pyproject.toml csrc/*.c csrc/*.h csrc/*/*.c csrc/*/*.h dlio_mpi/engines/*.pyx dlio_mpi/engines/*.pxi dlio_mpi/engines/*.pxd dlio_mpi/run/oplog_format.py 2>/dev/null | sha1sum | cut -c1-40)
pkg_stamp="$venv/.dlio_mpi-pkg"
if [ ! -f "$pkg_stamp" ] || [ "$(cat "$pkg_stamp")" != "$src_id $here" ] \
   || ! "$py" -c "import dlio_mpi.engines._engines" 2>/dev/null; then
  log "building and installing dlio_mpi"
  (cd "$here" && pip install --no-build-isolation -e ".[test]")
  echo "$src_id $here" > "$pkg_stamp"
fi
# bytecode of the package, so that no rank compiles it at start-up (where
# PYTHONDONTWRITEBYTECODE is set, nothing else would write it); only what changed is compiled
"$py" -m compileall -q -j 0 "$here/dlio_mpi" "$here/analysis" >/dev/null || true
echo "$venv"

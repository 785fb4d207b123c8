"""Facts about the machine and the libraries a run uses, recorded with its results."""
import os
import resource
import socket
import time

from dlio_mpi.display import units


def mpi_library():
    from mpi4py import MPI

    return MPI.Get_library_version().split(",")[0].strip()


def mpiio_component():
    """The MPI-IO implementation Open MPI will use (OMPI_MCA_io), or the library's default."""
    from mpi4py import MPI

    lib = MPI.Get_library_version()
    if "Open MPI" in lib:
        return os.environ.get("OMPI_MCA_io", "default (ompio unless set)")
    if "MPICH" in lib or "Intel" in lib or "Cray" in lib:
        return "ROMIO"
    return "unknown"


def romio_in_use():
    """Whether MPI-IO goes through ROMIO (MPICH-family libraries, or Open MPI with OMPI_MCA_io
    naming a romio component)."""
    return "romio" in mpiio_component().lower()


def filesystem_type(path):
    """The mount's file system type of path, from /proc/mounts (longest matching mount point)."""
    path = os.path.realpath(path)
    best, fstype = "", "unknown"
    try:
        with open("/proc/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 3:
                    continue
                mnt = parts[1].replace("\\040", " ")
                if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
                    best, fstype = mnt, parts[2]
    except OSError:
        pass
    return fstype


def free_bytes(directory):
    """Bytes an unprivileged writer may still write on directory's file system (statvfs), or
    None when the file system does not say (no size: ramfs)."""
    try:
        st = os.statvfs(directory)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize if st.f_frsize and st.f_blocks else None


def space_error(directory, need, what):
    """One line when directory's file system has clearly less room than need bytes (checked
    before a collective write, where a failure on one rank is hard to recover), else None."""
    free = free_bytes(directory)
    if free is not None and free < need:
        return (f"{what}: No space left on device: {directory} has {free} bytes free, "
                f"{need} needed")
    return None


def process_start_time():
    """When this process started (time.time() scale), from /proc (its age is known to the
    clock tick)."""
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return time.time() - (uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return time.time()


def cpu_seconds():
    """CPU time (user + system) this process has used so far."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def peak_rss_mib():
    """This process's peak resident set size (MiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _meminfo(key):
    """Field key of /proc/meminfo in bytes (0 when unknown)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def memory_bytes():
    """MemTotal of this host, from /proc/meminfo (0 when unknown)."""
    return _meminfo("MemTotal")


def available_memory_bytes():
    """MemAvailable of this host (what can be allocated without swapping), from /proc/meminfo
    (0 when unknown)."""
    return _meminfo("MemAvailable")


def dataset_vs_memory(dataset_bytes, host_memory_bytes):
    """A warning when the page cache of one host could hold the whole dataset (the run then
    measures memory more than storage), else None."""
    if host_memory_bytes and dataset_bytes <= host_memory_bytes:
        return (f"the dataset ({units.size_in(dataset_bytes, 'GiB')}) fits in the memory of one "
                f"host ({units.size_in(host_memory_bytes, 'GiB', 1)}): reads after the first epoch may come "
                "from the page cache, not the storage")
    return None


def describe(directory="."):
    import h5py

    from dlio_mpi import engines

    out = {
        "host": socket.gethostname(),
        "mpi": mpi_library(),
        "mpiio": mpiio_component(),
        "hdf5": h5py.version.hdf5_version + (" (parallel)" if h5py.get_config().mpi else ""),
        "directory": os.path.realpath(directory),
        "filesystem": filesystem_type(directory),
    }
    try:
        mem, off, src = engines.dio_alignment(directory)
        engines.dio_probe(directory)
        out["o_direct"] = f"yes, alignment {off} B (memory {mem} B, from {src})"
    except engines.EngineError as e:
        out["o_direct"] = f"no ({e})"
    return out

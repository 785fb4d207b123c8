"""Dropping checkpoint files from the page cache between their writes and their reads, so that
the reads come from the file system: posix_fadvise(POSIX_FADV_DONTNEED) on each file by the
rank that wrote it (on the host whose cache holds its pages; needs no privilege), or the whole
page cache of each host through /proc/sys/vm/drop_caches (needs root, or a writable file).
Either runs after the files were fsynced, when their pages are clean and can be dropped."""
import os

from mpi4py import MPI

METHODS = ("fadvise", "drop_caches")
DROP_CACHES = "/proc/sys/vm/drop_caches"


def drop_caches_writable():
    return os.access(DROP_CACHES, os.W_OK)


def storage_read_bytes():
    """Bytes this process caused to be fetched from the storage layer (/proc/self/io
    read_bytes): reads served by the page cache do not count. None where unavailable."""
    try:
        with open("/proc/self/io") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key == "read_bytes":
                    return int(value)
    except OSError:
        pass
    return None


def _advise(paths):
    """POSIX_FADV_DONTNEED on each file; returns (files, bytes)."""
    files = nbytes = 0
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            nbytes += os.fstat(fd).st_size
        finally:
            os.close(fd)
        files += 1
    return files, nbytes


def _drop_host_cache():
    os.sync()
    # a kernel setting that exists or not: opened without O_CREAT, never made
    fd = os.open(DROP_CACHES, os.O_WRONLY)
    try:
        os.write(fd, b"1\n")
    finally:
        os.close(fd)


def _line(comm, method, e):
    where = f"{e.filename}: " if e.filename else ""
    return f"rank {comm.Get_rank()}: cannot drop the page cache ({method}): {where}{e.strerror}"


def clear(comm, paths, method):
    """Collective: drop the pages of the files this rank wrote (paths) by method. Returns, on
    every rank, {"method", "files", "bytes", "hosts"} summed over the ranks (files and bytes
    advised, or on drop_caches the files and bytes written whose hosts' caches were dropped).
    An OSError on any rank raises RuntimeError with its line on every rank."""
    if method not in METHODS:
        raise ValueError(f"unknown page-cache method {method!r}: use one of "
                         f"{', '.join(METHODS)}")
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    error, files, nbytes = None, 0, 0
    try:
        if method == "fadvise":
            files, nbytes = _advise(paths)
        else:
            files, nbytes = len(paths), sum(os.stat(p).st_size for p in paths)
    except OSError as e:
        error = _line(comm, method, e)
    if method == "drop_caches":
        node.Barrier()      # every rank of the host has written and fsynced its files
        if node.Get_rank() == 0:
            try:
                _drop_host_cache()
            except OSError as e:
                error = error or _line(comm, method, e)
    hosts = comm.allreduce(1 if node.Get_rank() == 0 else 0)
    node.Free()
    errors = [e for e in comm.allgather(error) if e]
    if errors:
        raise RuntimeError(errors[0])
    return {"method": method, "files": comm.allreduce(files), "bytes": comm.allreduce(nbytes),
            "hosts": hosts}

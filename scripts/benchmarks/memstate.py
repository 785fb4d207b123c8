"""The page cache and memory state around a benchmark's I/O (scripts/bench-checkpoint): evicting
files between a write and its read, whether the VM's balloon reports free memory to its host,
and backing memory before a timed write or read."""
import glob
import os
import shutil
import subprocess
import time

import numpy as np


class Cache:
    """Evicts the benchmark's files from the page cache between a write and its read:
    posix_fadvise(DONTNEED) on each (fsynced, so clean) file, checked with fincore; when pages
    stay, the whole cache is dropped (drop_caches, as root). Not dropped before the writes:
    drop_caches also evicts the file system's block bitmaps, and the next write then waits for
    them to be read back (seconds here, on either side)."""

    def __init__(self):
        self.method = "fadvise"
        self.fincore = shutil.which("fincore")

    def cached(self, paths):
        """Bytes of paths in the page cache (None without fincore)."""
        if not self.fincore or not paths:
            return None
        out = subprocess.run([self.fincore, "--bytes", "--noheadings", "--output", "RES"]
                             + paths, capture_output=True, text=True)
        return sum(int(x) for x in out.stdout.split()) if out.returncode == 0 else None

    def drop(self, paths):
        """Evicts paths; returns the bytes of them still cached (None if unknown)."""
        os.sync()
        for p in paths:
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fdatasync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
        left = self.cached(paths)
        if left:
            try:
                with open("/proc/sys/vm/drop_caches", "w") as f:
                    f.write("3\n")
                self.method = "fadvise, then drop_caches"
                left = self.cached(paths)
            except OSError:
                pass
        return left


def free_page_reporting():
    """Whether a virtio balloon reports this guest's free pages to its host (feature bit 5,
    VIRTIO_BALLOON_F_REPORTING); None when no balloon is found."""
    found = None
    for dev in glob.glob("/sys/bus/virtio/drivers/virtio_balloon/virtio*"):
        try:
            bits = open(os.path.join(dev, "features")).read().strip()
        except OSError:
            continue
        found = bool(found) or (len(bits) > 5 and bits[5] == "1")
    return found


def back_memory(nbytes):
    """Writes nbytes of fresh memory, then frees it (see Settle): the page cache a write then
    takes is memory the host backs, for either side. Returns the seconds it took."""
    t0 = time.perf_counter()
    a = np.ones(int(nbytes), dtype=np.uint8)     # every page written
    del a
    return time.perf_counter() - t0

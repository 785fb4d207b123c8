"""Data files a job opened but never read or wrote through a call Darshan records.

Darshan's POSIX and STDIO modules wrap open, read, write and their kin; they do not see the
I/O of a memory mapping (numpy.memmap, Megatron's indexed datasets, LMDB: page faults, not
calls), of Linux native AIO (io_submit: fio's libaio engine) or of io_uring. Such a file's
records count opens and no byte, which alone cannot say which of these moved its data (the
3.5.0 runtime leaves POSIX_MMAPS at -1). Files whose names say they are no data (code,
configuration, the MPI library's own) are not listed: a program opens many of those without
reading them. A file whose every recorded read is one buffer's fill at its start, come back
whole, and nothing past it (``header_reads_only``) is one whose header was read before it was
mapped (numpy.load with mmap_mode): its data moved unseen too.
"""

import numpy as np

from dlio_mpi_analysis.characterization.counters import SPECS

# the modules whose records count a file's opens and its bytes
OPENING_MODULES = ("POSIX", "STDIO")
# what the message calls the ways of moving data that leave no call in a Darshan log
UNSEEN_WAYS = "a memory mapping such as numpy.memmap, Linux native AIO or io_uring"
# the least buffer whose fill at offset 0 alone may be a header's read before a mapping
MIN_BUFFER = 4096


def opened_without_io(records, names, roles):
    """The names of the data files (``roles``: record id -> role) that a POSIX or STDIO record
    shows opened and that no record of any module shows read or written, sorted."""
    opened, moved = set(), set()
    for module, frame in records.items():
        spec = SPECS.get(module)
        if spec is None or frame is None or len(frame) == 0 or spec.bytes_read is None:
            continue
        ids = np.asarray(frame["id"]).astype(np.uint64)
        bytes_moved = np.maximum(np.asarray(frame[spec.bytes_read]), 0) \
            + np.maximum(np.asarray(frame[spec.bytes_written]), 0)
        moved.update(int(i) for i in ids[bytes_moved > 0])
        if module in OPENING_MODULES:
            opens = sum(np.maximum(np.asarray(frame[c]), 0) for c in spec.ops["opens"])
            opened.update(int(i) for i in ids[opens > 0])
    return sorted(names.get(i, str(i)) for i in opened - moved if roles.get(i) == "data")


def header_reads_only(records, names, roles):
    """The names of the data files (``roles``: record id -> role) whose every read Darshan saw
    is one buffer's fill at offset 0 that came back whole (a power of two of at least
    MIN_BUFFER bytes, each read the same), with no write and nothing read past it: a header
    read through a buffered file before the file was mapped (numpy.load with mmap_mode reads
    the array's header, then maps it). From the POSIX counters of records that are all a
    process's own or reduced alike, the STDIO record reading nothing; sorted."""
    posix = records.get("POSIX")
    if posix is None or len(posix) == 0:
        return []
    stdio = records.get("STDIO")
    stdio_read = set()
    if stdio is not None and len(stdio):
        ids = np.asarray(stdio["id"]).astype(np.uint64)
        stdio_read = {int(i) for i in ids[np.asarray(stdio["STDIO_BYTES_READ"]) > 0]}
    found = {}
    ids = np.asarray(posix["id"]).astype(np.uint64)
    reads = np.asarray(posix["POSIX_READS"])
    nbytes = np.asarray(posix["POSIX_BYTES_READ"])
    top = np.asarray(posix["POSIX_MAX_BYTE_READ"])
    written = np.asarray(posix["POSIX_BYTES_WRITTEN"])
    for i, r, b, m, w in zip(ids.tolist(), reads.tolist(), nbytes.tolist(), top.tolist(),
                             written.tolist()):
        if roles.get(int(i)) != "data" or int(i) in stdio_read:
            continue
        fill = int(m) + 1
        ok = (r > 0 and w <= 0 and fill >= MIN_BUFFER and fill & (fill - 1) == 0
              and b == r * fill)
        found[int(i)] = found.get(int(i), True) and ok
    return sorted(names.get(i, str(i)) for i, ok in found.items() if ok)


def unseen_io_line(files):
    """One sentence on ``files`` (opened_without_io), for a message or a report; "" if none."""
    if not files:
        return ""
    which = files[0] if len(files) == 1 else f"{files[0]} and {len(files) - 1} more"
    return (f"{len(files)} data file{'s' if len(files) > 1 else ''} opened with no read or "
            f"write that Darshan saw ({which}): their I/O went through calls Darshan does not "
            f"record ({UNSEEN_WAYS})")


def header_reads_line(files):
    """One sentence on ``files`` (header_reads_only), for a message or a report; "" if none."""
    if not files:
        return ""
    which = files[0] if len(files) == 1 else f"{files[0]} and {len(files) - 1} more"
    return (f"{len(files)} data file{'s' if len(files) > 1 else ''} of which Darshan saw only "
            f"a buffer's fill at the start, read whole, and nothing past it ({which}): a "
            f"header read before the file was mapped, its data moved through calls Darshan "
            f"does not record ({UNSEEN_WAYS})")

"""Data files a job opened but never read or wrote through a call Darshan records.

Darshan's POSIX and STDIO modules wrap open, read, write and their kin; they do not see the
I/O of a memory mapping (numpy.memmap, Megatron's indexed datasets, LMDB: page faults, not
calls), of Linux native AIO (io_submit: fio's libaio engine) or of io_uring. Such a file's
records count opens and no byte, which alone cannot say which of these moved its data (the
3.5.0 runtime leaves POSIX_MMAPS at -1). Files whose names say they are no data (code,
configuration, the MPI library's own) are not listed: a program opens many of those without
reading them.
"""

import numpy as np

from dlio_mpi_analysis.characterization.counters import SPECS

# the modules whose records count a file's opens and its bytes
OPENING_MODULES = ("POSIX", "STDIO")
# what the message calls the ways of moving data that leave no call in a Darshan log
UNSEEN_WAYS = "a memory mapping such as numpy.memmap, Linux native AIO or io_uring"


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


def unseen_io_line(files):
    """One sentence on ``files`` (opened_without_io), for a message or a report; "" if none."""
    if not files:
        return ""
    which = files[0] if len(files) == 1 else f"{files[0]} and {len(files) - 1} more"
    return (f"{len(files)} data file{'s' if len(files) > 1 else ''} opened with no read or "
            f"write that Darshan saw ({which}): their I/O went through calls Darshan does not "
            f"record ({UNSEEN_WAYS})")

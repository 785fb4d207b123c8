"""The op log's format, in one place for the engines that record it (csrc/dm.h, the Cython
module), the run that saves it and analysis/, which reads it back (dlio_mpi_analysis.loading.oplog): operation
and interface codes, the keys of a rank's ``oplog_rankNNNNN.npz``, the file ids given to
dataset files, HDF5 companion files and checkpoint files, and the dataset files' names.

The codes must be csrc/dm.h's ``enum dm_op`` and ``enum dm_iface`` (DM_OP_<NAME>,
DM_IF_<NAME>, in this order, with DM_OP_N and DM_IF_N their counts): setup.py refuses to build
when ``header_mismatches`` finds a difference, and so does a test. Pure Python, no MPI: the
analysis imports it."""
import os
import re

# enum dm_op and enum dm_iface of csrc/dm.h, by code
OPS = ("read", "write", "open", "close", "fsync", "fdatasync", "seek", "stat", "mmap", "view")
IFACES = ("posix", "posix_direct", "stdio", "mmap", "mpiio_ind", "mpiio_coll", "hdf5_ind",
          "hdf5_coll", "hdf5_sec2", "io_uring")
OP = {name: code for code, name in enumerate(OPS)}
IFACE = {name: code for code, name in enumerate(IFACES)}

# a rank's op log: oplog_rankNNNNN.npz holding the phases' names, the log's origin on
# CLOCK_MONOTONIC, the job's and the training part's start and end on the same clock, and
# per phase i the columns e{i}_start, e{i}_dur, ...
FILE_GLOB = "oplog_rank*.npz"
PHASES = "phases"
ORIGIN = "origin_mono_ns"
JOB = "job_mono_ns"
WINDOW = "window_mono_ns"
COLUMNS = ("start", "dur", "offset", "bytes", "file", "op", "iface")

# file ids: dataset files count from 0 (training files, then evaluation files); a companion
# file of an HDF5 volume is COMPANION_ID_BASE + (k << COMPANION_KEY_SHIFT) + its dataset file's
# id (k counts the companion keys from 1); checkpoint index i's file number j is
# CHECKPOINT_ID_BASE + (i % CHECKPOINT_INDEXES) * CHECKPOINT_FILES + j
COMPANION_ID_BASE = 1 << 28
COMPANION_KEY_SHIFT = 20
CHECKPOINT_ID_BASE = 1 << 30
CHECKPOINT_INDEXES = 1 << 24
CHECKPOINT_FILES = 8


def file_name(rank):
    """The name of rank ``rank``'s op log."""
    return f"oplog_rank{rank:05d}.npz"


def save(directory, rank, phases, origin, window, job):
    """Write rank ``rank``'s op log into directory: phases is [(name, {column: array})],
    origin the log's origin, window and job (start, end) pairs, all on CLOCK_MONOTONIC (ns)."""
    import numpy as np

    from dlio_mpi.files import safe_files

    with safe_files.replaced(os.path.join(directory, file_name(rank)), "wb") as f:
        np.savez(f, **{PHASES: np.array([name for name, _ in phases]),
                       ORIGIN: np.int64(origin),
                       WINDOW: np.array(window, np.int64),
                       JOB: np.array(job, np.int64)},
                 **{column_key(i, k): v for i, (_, columns) in enumerate(phases)
                    for k, v in columns.items()})


def rank_of(path):
    """The rank whose op log ``path`` is."""
    return int(os.path.basename(path)[len("oplog_rank"):-len(".npz")])


def column_key(phase, column):
    """The npz key of phase ``phase``'s column ``column``."""
    return f"e{phase}_{column}"


def companion_id(key_number, file_id):
    """The file id of companion ``key_number`` (from 1) of the dataset file ``file_id``."""
    return COMPANION_ID_BASE + (key_number << COMPANION_KEY_SHIFT) + file_id


def companion_of(file_id):
    """(key number, dataset file id) of a companion file's id (COMPANION_ID_BASE <= file_id <
    CHECKPOINT_ID_BASE)."""
    rel = file_id - COMPANION_ID_BASE
    return rel >> COMPANION_KEY_SHIFT, rel & ((1 << COMPANION_KEY_SHIFT) - 1)


def checkpoint_id(index, number=0):
    """The file id of file ``number`` of checkpoint ``index``."""
    return CHECKPOINT_ID_BASE + (index % CHECKPOINT_INDEXES) * CHECKPOINT_FILES + number


def checkpoint_of(file_id):
    """(checkpoint index, file number) of a checkpoint file's id."""
    return divmod(file_id - CHECKPOINT_ID_BASE, CHECKPOINT_FILES)


def data_file_name(split, index, count, prefix, ext, subfolders=0):
    """The name, under the data folder, of dataset file ``index`` of ``count`` of a split
    ("train" or "valid"), spread over ``subfolders`` subfolders (0: none)."""
    sub = f"{index % subfolders}/" if subfolders > 0 else ""
    return f"{split}/{sub}{prefix}_{index:07d}_of_{count}{ext}"


def header_mismatches(text):
    """What differs between the codes here and csrc/dm.h's text: a list of lines, empty when
    the header's enum dm_op and enum dm_iface are OPS and IFACES."""
    out = []
    for enum, prefix, names in (("dm_op", "DM_OP_", OPS), ("dm_iface", "DM_IF_", IFACES)):
        m = re.search(r"enum\s+" + enum + r"\s*\{([^}]*)\}", text)
        if not m:
            out.append(f"csrc/dm.h: no enum {enum}")
            continue
        pairs = re.findall(prefix + r"(\w+)\s*=\s*(\d+)", m.group(1))
        header = {name: int(code) for name, code in pairs}
        count = header.pop("N", None)
        want = {name.upper(): code for code, name in enumerate(names)}
        if header != want:
            out.append(f"csrc/dm.h enum {enum} ({_codes(header)}) is not "
                       f"dlio_mpi/run/oplog_format.py's ({_codes(want)})")
        if count != len(names):
            out.append(f"csrc/dm.h {prefix}N is {count}, dlio_mpi/run/oplog_format.py has "
                       f"{len(names)} codes")
    return out


def _codes(codes):
    return ", ".join(f"{name}={code}" for name, code in sorted(codes.items(),
                                                               key=lambda item: item[1]))

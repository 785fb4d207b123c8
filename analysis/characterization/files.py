"""What a file is, from its name: the data format its extension says, and whether it is data
at all (rather than the program's own code, libraries and system files).

Used by :mod:`dlio_mpi_analysis.characterization.file_roles`, the classification of a job's files that characterize,
compare and fit share, and for the data formats. A name without an extension this
module knows (an anonymized log's hashed names, ImageNet's ``train-00000-of-01024``) is "raw".
"""

import os
import re

from dlio_mpi import formats

# the extension dlio_mpi gives each format's files (each format module's EXTENSION)
EMULATOR_EXTENSIONS = {name: module.EXTENSION for name, module in formats.MODULES.items()}
# extension (lower case) -> the dlio_mpi dataset.format it is: the emulator's own, where one
# format has it (indexed_binary's .bin files are read by byte ranges as raw ones are, and
# taken for raw by their name), and the other names real programs give the same formats
FORMAT_OF_EXTENSION = {
    **{ext: name for name, ext in EMULATOR_EXTENSIONS.items()
       if list(EMULATOR_EXTENSIONS.values()).count(ext) == 1},
    ".bin": "raw",
    ".hdf5": "hdf5", ".hdf": "hdf5", ".he5": "hdf5", ".tfrecords": "tfrecord", ".jpg": "jpeg",
}
# files that are not a training job's data: code, libraries, configuration, system files
NOT_DATA_EXTENSIONS = frozenset({
    ".py", ".pyc", ".pyo", ".pyd", ".so", ".a", ".o", ".pth", ".egg", ".whl", ".h", ".pxd",
    ".pyx", ".mod", ".lock", ".pid", ".yaml", ".yml", ".json", ".cfg", ".ini", ".toml",
    ".darshan", ".log", ".sh", ".conf", ".mo", ".pem", ".crt",
})
NOT_DATA_PREFIXES = ("/proc/", "/sys/", "/dev/", "/etc/", "/usr/lib", "/usr/share", "/lib",
                     "<STDIN>", "<STDOUT>", "<STDERR>", "heatmap:")


# the system's trees themselves, and a path that walks up (a tool walking a tree by the
# directories' descriptors, as hwloc walks sysfs; Darshan joins such a relative name to the
# working directory): no data file
SYSTEM_ROOTS = frozenset({"/", "/proc", "/sys", "/dev", "/etc"})
WALKED_UP = re.compile(r"/\.\.(/|$)")


def extension(name):
    """The lower-case extension of a file name ("" if none); ``.so.1.2`` counts as ``.so``."""
    base = os.path.basename(name or "")
    if ".so." in base:
        return ".so"
    return os.path.splitext(base)[1].lower()


# the suffixes of a whole file's compression, beneath which the name keeps its format's
# (part-000.tfrecord.gz: TFRecords written with GZIP)
COMPRESSED_SUFFIXES = frozenset({".gz", ".gzip", ".zst", ".bz2", ".xz", ".lz4", ".zlib"})


def file_format(name, hdf5=False):
    """The dataset.format of a file: "hdf5" when ``hdf5`` (the file has HDF5 records) or its
    extension says so, else the format of its extension (of the name beneath a whole file's
    compression suffix), else "raw"."""
    if hdf5:
        return "hdf5"
    ext = extension(name)
    if ext in COMPRESSED_SUFFIXES:
        ext = extension(os.path.splitext(name)[0])
    return FORMAT_OF_EXTENSION.get(ext, "raw")


# files a job's tools make beside its data: Open MPI's MPI-IO lock-test files, the emulator's
# O_DIRECT probe and the partial files of a dataset being written
NOT_DATA_NAMES = re.compile(r"(\.locktest\.\d+|/\.dlio_mpi_odirect_probe\.\d+|\.part(\.\d+)?)$")


# the files dlio_mpi itself (and Open MPI's MPI-IO beneath it) reads or writes beside a
# workload's data and checkpoints: its dataset manifest, O_DIRECT probe, output-folder files,
# checkpoint record and MPI-IO lock tests. A characterization leaves their records out
# (characterize says how many), so that a run is characterized by its workload's I/O alone, as
# its op log is, under Darshan or not.
TOOL_FILES = re.compile(r"(/manifest\.json|\.locktest\.\d+|/\.dlio_mpi_odirect_probe\.\d+"
                        r"|/\.write_probe|/\.dlio_mpi\.(lock|failed)|/status\.json(\.[\w.]*)?"
                        r"|/summary\.json|/per_rank\.csv|/oplog_rank\d+\.npz"
                        r"|/dlio_mpi_checkpoints\.txt)$")


def is_tool_file(name):
    """True for a file dlio_mpi or its MPI-IO makes beside the data (TOOL_FILES)."""
    return bool(name) and TOOL_FILES.search(name) is not None


def is_data_file(name):
    """False for names that are code, libraries, configuration or system files, or files the
    tools make beside the data (NOT_DATA_NAMES)."""
    if not name:
        return True
    if name.startswith(NOT_DATA_PREFIXES) or name in SYSTEM_ROOTS \
            or "/site-packages/" in name or "/__pycache__/" in name \
            or NOT_DATA_NAMES.search(name) or WALKED_UP.search(name):
        return False
    return extension(name) not in NOT_DATA_EXTENSIONS

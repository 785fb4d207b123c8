"""The role of every file of a job: the one classification that characterize, compare and fit
use to tell a job's data I/O from the rest.

- "data": the files the job's training data is in (read, or read and written).
- "checkpoint": files of data-like names that the job wrote and never read (model states,
  also while they carry a temporary name such as ``.part`` before their rename).
- "stream": the standard streams. Darshan names them ``<STDIN>``, ``<STDOUT>`` and
  ``<STDERR>`` in its POSIX and STDIO modules; a program may also open them by name
  (``/dev/stdout``, ``/proc/self/fd/1``) or write to its terminal (``/dev/tty``,
  ``/dev/pts/N``). A program's printing is neither data nor an I/O interface of the job.
- "mpi": files the MPI library makes for its own use, recognised by where they live and by
  what makes them, not by one program's file names:
    * everything under the library's session directory (Open MPI's
      ``<tmp>/ompi.<host>.<uid>/``, PRRTE's ``prte.<host>.<uid>/``, older Open MPI's
      ``openmpi-sessions-<user>@<host>_0/``; ompio's shared-file-pointer segments are there)
      and shared-memory segments in ``/dev/shm``;
    * companions made beside a file the job opened: ompio's lock test
      ``<file>.locktest.<rank>``, ROMIO's shared file pointer ``<dir>/.<name>.shfp.<n>``.
      A companion needs its file among the job's files: the library made it for that file.
- "other": code (the program and script the job's command line names among them),
  libraries, configuration, logs and system files
  (:func:`dlio_mpi_analysis.characterization.files.is_data_file`), files only written whose names say they are a
  report (``.txt``, ``.out``, a table of results ``.csv``, ...), multiprocessing's temporary directory of a process
  (``<tmp>/pymp-XXXXXXXX``), and Python's probe of a temporary directory: the first
  ``tempfile`` call of a process (TensorFlow's import makes one) creates a file of 8 random
  characters in each candidate directory, writes 4 bytes to it and removes it, to see that it
  can; no model state.

``file_roles(names, records, programs)`` gives every record id of the job its role (an H5D record, named
``file:/dataset``, takes its file's role). ``DATA_IO`` are the roles whose I/O is the job's
data I/O, the one that a characterization's data figures, a comparison and a fit count.
"""

import os
import re

import numpy as np

from dlio_mpi_analysis.characterization.counters import SPECS
from dlio_mpi_analysis.characterization.files import WALKED_UP, extension, is_data_file
from dlio_mpi_analysis.characterization.layers import dataset_file

ROLES = ("data", "checkpoint", "stream", "mpi", "other")
DATA_IO = ("data", "checkpoint")

STREAM_NAMES = frozenset({"<STDIN>", "<STDOUT>", "<STDERR>", "/dev/stdin", "/dev/stdout",
                          "/dev/stderr", "/dev/tty"})
STREAM_PATTERN = re.compile(r"^(/dev/pts/\d+|/proc/(self|\d+)/fd/[012])$")

# a directory of an MPI library's session: Open MPI 4 (ompi.<host>.<uid>), PRRTE / Open MPI 5
# (prte.<host>.<uid>, prterun.<host>.<pid>...), Open MPI before 2 (openmpi-sessions-...)
SESSION_DIRECTORY = re.compile(r"/(ompi|prte|prterun)\.[^/]+\.\d+(/|$)|/openmpi-sessions-[^/]+/")
SHARED_MEMORY = "/dev/shm/"
LOCK_TEST = re.compile(r"^(?P<file>.+)\.locktest\.\d+$")
SHARED_POINTER = re.compile(r"^(?P<dir>.*)/\.(?P<base>[^/]+)\.shfp\.[\d.]+$")

# files only written whose extension says they are a report, not a model state
REPORT_EXTENSIONS = frozenset({".txt", ".out", ".err", ".md", ".html", ".csv", ".tsv"})
# Python's tempfile probe (module docstring): its random name, and the bytes it writes
TEMPFILE_PROBE = re.compile(r"^[a-z0-9_]{8}$")
TEMPFILE_PROBE_BYTES = 4
# the temporary directory Python's multiprocessing makes for a process (tempfile.mkdtemp with
# prefix "pymp-"; a data loader's workers each open theirs) and what lies in it
MULTIPROCESSING_DIRECTORY = re.compile(r"/pymp-[A-Za-z0-9_]+(/|$)")
# the temporary name a writer gives a file until it renames it (the name without it tells
# what the file is)
TEMPORARY = re.compile(r"\.(part|tmp)(\.\d+)?$")
# a temporary name's suffix, TensorFlow's too (its checkpoint writer's .tempstate<n>)
RENAMED = re.compile(r"\.(part|tmp)(\.\d+)?$|\.tempstate\d+$")


def is_stream(name):
    """True for a standard stream's name (module docstring)."""
    return name in STREAM_NAMES or STREAM_PATTERN.match(name or "") is not None


def mpi_library_file(name, job_files):
    """True for a file the MPI library made (module docstring); ``job_files``: the names of
    all the job's files."""
    if not name:
        return False
    if SESSION_DIRECTORY.search(name) or name.startswith(SHARED_MEMORY):
        return True
    lock = LOCK_TEST.match(name)
    if lock and lock.group("file") in job_files:
        return True
    pointer = SHARED_POINTER.match(name)
    return bool(pointer) and os.path.join(pointer.group("dir"), pointer.group("base")) \
        in job_files


def moved_bytes(names, records):
    """File name -> [bytes read, bytes written] over the modules with byte counters (an H5D
    record counts under its file)."""
    moved = {}
    for module, frame in records.items():
        spec = SPECS.get(module)
        if spec is None or spec.bytes_read is None or frame.empty:
            continue
        read = np.maximum(frame[spec.bytes_read], 0)
        written = np.maximum(frame[spec.bytes_written], 0)
        if module == "POSIX" and "POSIX_MAX_BYTE_READ" in frame:
            read = np.where(_read_past_written_end(frame, read, written), 0, read)
        for i, r, w in zip(frame["id"].tolist(), read.tolist(), written.tolist()):
            name = names.get(int(i), "")
            if module == "H5D":
                name = dataset_file(name)
            totals = moved.setdefault(name, [0, 0])
            totals[0] += int(r)
            totals[1] += int(w)
    return moved


def _read_past_written_end(frame, read, written):
    """Per POSIX record, True where every byte read lies past the end the job wrote the file
    to: no read of a regular file returns bytes beyond its end, so those reads were another
    object's on the file's descriptor number once the file was closed (a pipe's messages
    from a data loader's workers, which Darshan charges to the last file that number named,
    at offsets running on from its end)."""
    end = np.asarray(frame["POSIX_MAX_BYTE_WRITTEN"])
    last = np.asarray(frame["POSIX_MAX_BYTE_READ"])
    return (written > 0) & (read > 0) & (last > end) & (last - end >= read)


def walk_starts(job_files):
    """Where the job's walks up a tree begin: each name that walks up (a tool walking a tree
    by the directories' descriptors, as hwloc walks sysfs, Darshan joining the relative names
    to the working directory: ``cwd/block/../../devices/...``) up to its first ``/..``."""
    return {m.string[:m.start()] for m in (WALKED_UP.search(n) for n in job_files) if m}


def role_of(name, job_files, read, written, walks=None):
    """The role of one file (module docstring) from its name, the names of the job's files and
    the bytes the job read from and wrote to it; ``walks``: walk_starts of job_files (the
    start of a walk up a tree, and what lies under it, is the walk's: hwloc's ``cwd/block``
    and ``cwd/block/vda``, opened as it began)."""
    if is_stream(name):
        return "stream"
    walks = walk_starts(job_files) if walks is None else walks
    if name and (name in walks or any(name.startswith(w + "/") for w in walks)):
        return "other"
    if mpi_library_file(name, job_files):
        return "mpi"
    if MULTIPROCESSING_DIRECTORY.search(name or ""):
        return "other"
    written_only = written > 0 and read == 0
    # a file written under a temporary name is what its final name says
    final = TEMPORARY.sub("", name or "") if written_only else name
    if not is_data_file(final):
        return "other"
    if written_only:
        if written == TEMPFILE_PROBE_BYTES and TEMPFILE_PROBE.match(os.path.basename(final)):
            return "other"
        return "other" if extension(final) in REPORT_EXTENSIONS else "checkpoint"
    return "data"


def program_files(exe):
    """The files a command line names as its program: its first word, and for a Python
    interpreter the script it runs (its first word that is no option; none with -c or -m).
    Darshan in non-MPI mode starts with the process and sees the interpreter read its script
    (an entry point such as ``bin/dlio_benchmark``): code, not data."""
    words = (exe or "").split()
    if not words:
        return set()
    found = {words[0]}
    if os.path.basename(words[0]).startswith("python"):
        k = 1
        while k < len(words) and words[k].startswith("-"):
            if words[k] in ("-c", "-m"):
                return found
            k += 2 if words[k] in ("-W", "-X", "-Q") else 1
        if k < len(words):
            found.add(words[k])
    return found


def file_roles(names, records, programs=()):
    """Record id -> role for every record of ``records`` (module -> loader Table) and every
    named id (module docstring); the files of ``programs`` (program_files of the job's command
    lines) are code ("other")."""
    moved = moved_bytes(names, records)
    file_names = {dataset_file(n) for n in names.values()} | set(moved)
    ids = {int(i) for frame in records.values() if "id" in frame for i in frame["id"].tolist()}
    ids.update(int(i) for i in names)
    roles = {}
    by_name = {}
    walks = walk_starts(file_names)
    for i in ids:
        name = names.get(i, "")
        # an H5D record is named file:/dataset; its file's role is its own
        base = dataset_file(name)
        if base not in by_name:
            read, written = moved.get(base, (0, 0))
            by_name[base] = "other" if base in programs \
                else role_of(base, file_names, read, written, walks)
        roles[i] = by_name[base]
    _read_back(names, records, roles)
    return roles


def _first_times(names, records, op):
    """File name -> the earliest start of its reads ("READ") or writes ("WRITE") over the
    POSIX and STDIO records (0 timestamps left out)."""
    out = {}
    for module in ("POSIX", "STDIO"):
        frame = records.get(module)
        column = f"{module}_F_{op}_START_TIMESTAMP"
        if frame is None or frame.empty or column not in frame:
            continue
        for i, t in zip(frame["id"].tolist(), np.asarray(frame[column]).tolist()):
            name = names.get(int(i), "")
            if t > 0 and (name not in out or t < out[name]):
                out[name] = float(t)
    return out


def _read_back(names, records, roles):
    """A file read only, under the final name of a file the job wrote under a temporary one
    (``.part``, ``.tmp``, TensorFlow's ``.tempstate<n>``), is the job's own state read back
    (TensorFlow's checkpoint writer reads its index back to merge it): a checkpoint, no
    data. A file with no I/O at all in a folder where the job wrote checkpoint files (the
    final name of one renamed there: its bytes counted under its temporary one) is no data
    either."""
    writes = _first_times(names, records, "WRITE")
    finals = {RENAMED.sub("", name) for name in writes if RENAMED.search(name)}
    folders = {os.path.dirname(names.get(i, "")) for i, role in roles.items()
               if role == "checkpoint"}
    if not finals and not folders:
        return
    moved = moved_bytes(names, records)
    for i, role in roles.items():
        name = names.get(i, "")
        if role != "data" or name in writes:
            continue
        if name in finals:
            roles[i] = "checkpoint"
        elif os.path.dirname(name) in folders and not sum(moved.get(name, (0, 0))):
            roles[i] = "other"


def ids_with(roles, wanted=DATA_IO):
    """The record ids whose role is one of ``wanted``."""
    return {i for i, role in roles.items() if role in wanted}


def keep_roles(frame, roles, wanted=DATA_IO):
    """The rows of a records (or trace) table whose file has one of the roles ``wanted``; a
    row of an id without a role (unnamed) is kept, as data."""
    if frame is None or frame.empty or "id" not in frame:
        return frame
    left_out = np.array([i for i, role in roles.items() if role not in wanted], dtype=np.uint64)
    keep = ~np.isin(frame["id"], left_out)
    return frame if keep.all() else frame[keep]

"""The record of the checkpoints a workload's runs wrote: a small text file in the checkpoint
folder, appended by rank 0 before each checkpoint is written (the names its files will have),
that `clean` reads to remove those files (and the .part files of a checkpoint stopped halfway)
and nothing else. Its first lines
say whether a run made the folder (clean removes the folder only then, once it has emptied
it); the others name one file each, relative to the folder. No MPI here: clean reads it
without mpiexec."""
import os
import re

from dlio_mpi.files import safe_files

RECORD = "dlio_mpi_checkpoints.txt"
HEADER = "# checkpoint files written by dlio_mpi runs, one per line\n"
MADE = "folder made by dlio_mpi: "
# the names the checkpointer gives its files (checkpoint.Checkpointer.paths)
NAME = re.compile(r"^ckpt-\d{6}(-r\d{6}(-\d{2})?)?"
                  r"\.((model|optim)\.bin|bin|h5|data|meta|index|state)$")


class RecordError(ValueError):
    """A record that cannot be read or names a file that is not a checkpoint's (one line)."""


def append(directory, names, made):
    """Add names (the files of one checkpoint) to directory's record, creating it (with
    whether a run made the folder) if it is not there; the record is rewritten whole and
    flushed to storage before it returns."""
    path = os.path.join(directory, RECORD)
    try:
        # the record as it is, never through a link at its name
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        old = b""
    else:
        with os.fdopen(fd, "rb") as f:
            old = f.read()
    text = "".join(f"{n}\n" for n in names)
    if not old:
        text = HEADER + MADE + ("yes" if made else "no") + "\n" + text
    elif not old.endswith(b"\n"):
        old += b"\n"
    safe_files.write_whole(path, old + text.encode(), fsync=True)


def read(directory):
    """(whether a run made the folder, the recorded file names in order, each once), or None
    when directory has no record. RecordError for a line that is not a checkpoint file's
    name."""
    path = os.path.join(directory, RECORD)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise RecordError(f"cannot read the checkpoint record {path}: {e.strerror}") from None
    made, names = False, {}
    for k, line in enumerate(lines, 1):
        if not line or line.startswith("#"):
            continue
        if line.startswith(MADE):
            made = line[len(MADE):].strip() == "yes"
            continue
        if not NAME.match(line):
            raise RecordError(f"the checkpoint record {path} line {k} names {line!r}, not a "
                              "checkpoint file of this folder: refused")
        names[line] = None
    return made, list(names)

"""Files a job wrote under a temporary name and renamed to one it opened again: one file.

A writer that must not leave a half-written file behind writes it as ``NAME.part`` (or
``NAME.tmp``, :data:`dlio_mpi_analysis.characterization.file_roles.TEMPORARY`) and renames it
to ``NAME`` when it is complete. Neither Darshan nor the emulator's op log sees the rename: a
record keeps the name its file was opened by, so the write is counted under ``NAME.part`` and a
later read under ``NAME``, two files where the program made one (the emulator's checkpoint,
written, renamed and read back, would count 16 files for a real job's 12 that torch.save wrote
and torch.load read under their final names).

:func:`join_renamed` gives the temporary name's records and trace rows the final name's record
id when the same job opened the final name too (any record of that name), and drops the
temporary name, so that every count over files (files, roles, bytes per file) sees one file,
written and then read. A temporary name whose final name the job never opened stays as it is
(file_roles tells its role from its final name). An HDF5 dataset's record (``file:/dataset``)
follows its file.
"""

import dataclasses

import numpy as np

from dlio_mpi_analysis.characterization.file_roles import TEMPORARY
from dlio_mpi_analysis.characterization.layers import dataset_file


def final_name(name):
    """The name a file written under ``name`` has after its rename (None for a name that is
    not a temporary one); for an H5D record's ``file:/dataset`` the dataset in the final file."""
    file = dataset_file(name or "")
    final = TEMPORARY.sub("", file)
    if not file or final == file:
        return None
    return final + name[len(file):]


def renamed_ids(names, ids):
    """Temporary record id -> the final name's record id, for the temporary names of ``names``
    (record id -> name) whose final name is the name of one of ``ids`` (the job's records)."""
    id_of = {}
    for i in ids:
        name = names.get(i)
        if name is not None:
            id_of.setdefault(name, i)
    aliases = {}
    for i, name in names.items():
        final = final_name(name)
        if final is not None and final in id_of and id_of[final] != i:
            aliases[i] = id_of[final]
    return aliases


def renamed_datasets(names, aliases):
    """Record id -> final name of the HDF5 datasets (``file.part:/dataset``) whose file is
    renamed by ``aliases`` but whose final name no record of the job has: the dataset was
    written in the temporary file and read, if at all, under another dataset's record, and
    keeps its id under the final file's name (it follows its file)."""
    renamed_files = {names.get(i) for i in aliases}
    out = {}
    for i, name in names.items():
        if i in aliases:
            continue
        file = dataset_file(name or "")
        if file and file != name and file in renamed_files:
            out[i] = final_name(name)
    return out


def _with_ids(table, aliases):
    """The table with the ids of ``aliases`` replaced (the table itself when none is in it)."""
    if table is None or table.empty or "id" not in table:
        return table
    old = np.fromiter(aliases, dtype=np.uint64, count=len(aliases))
    ids = np.asarray(table["id"])
    hit = np.isin(ids, old)
    if not hit.any():
        return table
    new_ids = ids.copy()
    for k in np.flatnonzero(hit).tolist():
        new_ids[k] = aliases[int(ids[k])]
    # a job's tables are loader Tables, or pandas DataFrames after DarshanJob.frames()
    return table.assign(id=new_ids) if hasattr(table, "assign") else \
        table.with_column("id", new_ids)


def join_renamed(job):
    """``job`` (a DarshanJob) with each file renamed from a temporary name to one the job
    opened counted as that one file (module docstring)."""
    ids = {int(i) for table in job.records.values() if table is not None and "id" in table
           for i in np.asarray(table["id"]).tolist()}
    aliases = renamed_ids(job.names, ids)
    if not aliases:
        return job
    datasets = renamed_datasets(job.names, aliases)
    layers = dict(job.layers)
    for old, new in aliases.items():
        if old in layers:
            layers.setdefault(new, layers.pop(old))
    return dataclasses.replace(
        job,
        records={m: _with_ids(t, aliases) for m, t in job.records.items()},
        dxt_segments=None if job.dxt_segments is None else
        {m: _with_ids(t, aliases) for m, t in job.dxt_segments.items()},
        names={i: datasets.get(i, n) for i, n in job.names.items() if i not in aliases},
        layers=layers)

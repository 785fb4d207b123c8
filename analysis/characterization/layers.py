"""The layer a job's file I/O is counted at: POSIX (with STDIO), MPI-IO or HDF5 (H5D).

A Darshan log holds every layer a call went through: an H5Dread, the MPI-IO calls libhdf5
made for it and the POSIX calls beneath those. A job's totals count each file at the lowest
layer, POSIX and STDIO, where the bytes reach the file system. A source that does not observe
every layer declares, per file, the lowest layer it observed (``DarshanJob.layers``: record id
of the file -> "MPI-IO" or "HDF5"; absent: "POSIX"): a dlio_mpi op log sees the calls of a
collective MPI-IO read but not the aggregators' POSIX reads beneath them, and the H5Dread calls
through libhdf5's MPI-IO driver but not the metadata reads or the MPI-IO calls libhdf5 makes
(see :mod:`dlio_mpi_analysis.loading.oplog`). It holds no records below that layer.

``parts_at(records, names, layers, layer)`` gives, for every file, the records of one layer:
the highest layer, from the file's own lowest observed layer up to ``layer`` (or up to its own
lowest if that is higher), at which the job holds records of the file. At "POSIX" this is every
Darshan log's POSIX and STDIO records as they are, and an op log's files at the layer it
observed; at "HDF5", the H5D records of the files that have them and the lower layers of those
that do not (a checkpoint written through POSIX). Two jobs compared at the higher of their
layers are counted alike (:mod:`dlio_mpi_analysis.comparison.compare`).

H5D records name a dataset (``file:/dataset``); in the parts their ids are the file's record id
(found by name among the other modules' records), so that files count once. The H5F records of
the files counted at "HDF5" are given with the parts' time (file opens and closes are I/O time
at that layer as POSIX opens are at POSIX).
"""

import numpy as np

from dlio_mpi_analysis.characterization.counters import SPECS

LAYERS = ("POSIX", "MPI-IO", "HDF5")
MODULES_OF_LAYER = {"POSIX": ("POSIX", "STDIO"), "MPI-IO": ("MPI-IO",), "HDF5": ("H5D",)}
LAYER_OF_MODULE = {m: layer for layer, modules in MODULES_OF_LAYER.items() for m in modules}


def rank(layer):
    """The position of a layer name in LAYERS (POSIX lowest)."""
    return LAYERS.index(layer)


def job_layer(layers):
    """The highest lowest-observed layer of a job's files ("POSIX" when none is declared)."""
    return max(layers.values(), key=rank, default="POSIX")


def dataset_file(name):
    """The file name of an H5D record name ``file:/dataset`` (the name itself without one)."""
    cut = (name or "").rfind(":/")
    return name[:cut] if cut > 0 else name


def file_ids(module, frame, names, id_of_name):
    """The file record id of every row of ``frame``: its own id, or for H5D the id of the file
    its dataset is in (the dataset's id when no other module names the file)."""
    ids = frame["id"].astype(np.uint64)
    if module != "H5D":
        return ids
    return np.array([id_of_name.get(dataset_file(names.get(int(i), "")), i) for i in ids],
                    dtype=np.uint64)


def parts_at(records, names, layers, layer="POSIX"):
    """((spec, frame) parts for bytes, operations and files; (spec, frame) parts for time) of
    the records at ``layer`` (module docstring). Frames of H5D carry their file's id."""
    id_of_name = {}
    for module, frame in records.items():
        if module != "H5D":
            for i in frame["id"].tolist():
                id_of_name.setdefault(names.get(int(i), ""), np.uint64(i))
    ids = {m: file_ids(m, records[m], names, id_of_name)
           for modules in MODULES_OF_LAYER.values() for m in modules if m in records}
    top = rank(layer)
    chosen = {}
    for candidate in reversed(LAYERS):
        held = set()
        for m in MODULES_OF_LAYER[candidate]:
            if m in ids:
                held.update(ids[m].tolist())
        for f in held:
            floor = rank(layers.get(f, "POSIX"))
            if floor <= rank(candidate) <= max(top, floor) and f not in chosen:
                chosen[f] = candidate
    parts, time_parts = [], []
    for module in ("POSIX", "STDIO", "MPI-IO", "H5D"):
        if module not in ids:
            continue
        keep = np.array([chosen.get(f) == LAYER_OF_MODULE[module] for f in ids[module].tolist()],
                        dtype=bool)
        frame = records[module][keep]
        if module in ("MPI-IO", "H5D") and frame.empty:
            continue
        if module == "H5D":
            frame = frame.with_column("id", ids[module][keep])
        parts.append((SPECS[module], frame))
        time_parts.append((SPECS[module], frame))
    if "H5F" in records:
        h5f = records["H5F"]
        keep = np.array([chosen.get(f) == "HDF5" for f in h5f["id"].astype(np.uint64).tolist()],
                        dtype=bool)
        if keep.any():
            time_parts.append((SPECS["H5F"], h5f[keep]))
    return parts, time_parts

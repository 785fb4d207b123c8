"""Names of the files an op log's file ids stand for, as dlio_mpi names them: dataset files
(training, then evaluation), companion files (of HDF5 volumes; indexed_binary's index files),
checkpoint files per write or read session; and the record ids the analysis gives them
(dlio_mpi.run.oplog_format holds the ids)."""
import hashlib
import os

import numpy as np
from dlio_mpi import formats
from dlio_mpi.run.oplog_format import (CHECKPOINT_ID_BASE, COMPANION_ID_BASE, OP, checkpoint_of,
                                   companion_of, data_file_name)

from dlio_mpi_analysis.characterization.files import EMULATOR_EXTENSIONS
from dlio_mpi_analysis.loading.oplog_records import SYNC_OPS

OPEN, WRITE = OP["open"], OP["write"]


def _format_companions(fmt):
    """Extensions of the files dataset.format ``fmt`` writes beside each of its files."""
    try:
        return formats.traits(fmt).companions
    except ValueError:
        return ()


def record_id(name):
    """The record id of a file (or HDF5 dataset) name: 64-bit BLAKE2b of its UTF-8 bytes."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")


def file_name(config, file_id):
    """The path of op-log file id ``file_id``: training files first, evaluation files after
    them (dlio_mpi/data/dataset.py names them), companion files of HDF5 volumes (their key before
    the extension); ``<file N>`` for an id beyond all."""
    ds = config.get("dataset", {})
    if COMPANION_ID_BASE <= file_id < CHECKPOINT_ID_BASE:
        k, base = companion_of(file_id)
        companions = _format_companions(ds.get("format", "raw"))
        if companions and not ds.get("volumes"):
            # the format's own companions (indexed_binary's index files): the data file's
            # name with its extension replaced
            name = file_name(config, base)
            ext = EMULATOR_EXTENSIONS.get(ds.get("format", "raw"), ".bin")
            if not 1 <= k <= len(companions) or name.startswith("<") \
                    or not name.endswith(ext):
                return f"<file {file_id}>"
            return name[:len(name) - len(ext)] + companions[k - 1]
        keys = list(dict.fromkeys(v.get("file") for v in ds.get("volumes") or []
                                  if isinstance(v, dict) and v.get("file")))
        k, base = companion_of(file_id)
        name = file_name(config, base)
        if not 1 <= k <= len(keys) or name.startswith("<"):
            return f"<file {file_id}>"
        i = name.rfind(".h5")
        return f"{name[:i]}.{keys[k - 1]}{name[i:]}"
    n_train, n_eval = ds.get("num_files_train", 0), ds.get("num_files_eval", 0)
    ext = EMULATOR_EXTENSIONS.get(ds.get("format", "raw"), ".bin")
    if file_id < n_train:
        split, index, count, subs = "train", file_id, n_train, ds.get("num_subfolders_train", 0)
    elif file_id < n_train + n_eval:
        split, index, count = "valid", file_id - n_train, n_eval
        subs = ds.get("num_subfolders_eval", 0)
    else:
        return f"<file {file_id}>"
    return os.path.join(ds.get("data_folder", "."),
                        data_file_name(split, index, count, ds.get("file_prefix", "img"), ext,
                                       subs))


CHECKPOINT_FOUR_FILES = ("data", "meta", "index", "state")
CHECKPOINT_MODEL_OPTIMIZER_FILES = ("model", "optim")


def checkpoint_files(table, summary, ranks):
    """Checkpoint entries' file ids made one per file as the checkpointer names it (the op log
    gives the checkpoint and the file's number in it, not whose file it is): a write session
    (an open up to its close, holding a write or fsync) is to the writing rank's
    ``<name>.part`` (the checkpointer renames it when every rank is done, and Darshan keeps
    the name it was opened by); a read session is of the final name of the rank whose share it
    reads (``checkpoint.recovery_rank_shift``). Returns (file ids, {new id: path})."""
    fid = table["file"].astype(np.int64)
    where = np.flatnonzero(fid >= CHECKPOINT_ID_BASE)
    if not len(where):
        return fid, {}
    config = summary.get("config", {})
    ck = config.get("checkpoint", {})
    ck_format, folder = ck.get("format", "file_per_rank"), ck.get("checkpoint_folder", ".")
    shift = 0
    if ck.get("recovery_rank_shift") and ranks > 1:
        per_host = int((summary.get("facts") or {}).get("ranks_per_host_max") or ranks)
        shift = per_host if per_host < ranks else 1
    out, names = fid.copy(), {}
    order = where[np.lexsort((table["start"][where], fid[where], table["rank"][where]))]
    # sessions: a rank's calls on one file from an open up to the next open
    sessions, current, last = [], None, None
    for k in order.tolist():
        key = (int(table["rank"][k]), int(fid[k]))
        if current is None or key != last or int(table["op"][k]) == OPEN:
            current = []
            sessions.append(current)
        current.append(k)
        last = key
    for session in sessions:
        w = any(int(table["op"][j]) == WRITE or int(table["op"][j]) in SYNC_OPS
                for j in session)
        rank, f = int(table["rank"][session[0]]), int(fid[session[0]])
        index, number = checkpoint_of(f)
        base = os.path.join(folder, f"ckpt-{index:06d}")
        if ck_format in ("mpiio", "hdf5"):
            owner, path = 0, base + (".h5" if ck_format == "hdf5" else ".bin")
        else:
            owner = rank if w else (rank + shift) % max(ranks, 1)
            ext = f".{CHECKPOINT_FOUR_FILES[number]}" if ck_format == "four_files" else \
                f".{CHECKPOINT_MODEL_OPTIMIZER_FILES[number]}.bin" if ck_format == "model_optimizer" \
                else f"-{number:02d}.bin" if int(ck.get("files_per_rank", 1)) > 1 else ".bin"
            path = f"{base}-r{owner:06d}{ext}"
        if w:
            path += ".part"
        new = -(1 + ((f - CHECKPOINT_ID_BASE) << 22 | owner << 1 | int(w)))
        out[session] = new
        names[new] = path
    return out, names

"""Removing what a workload created, and nothing else: the dataset files named as its manifest
describes them (and their leftovers from interrupted generation; found by listing the
dataset's directories, so a partial dataset, whose manifest says in progress, goes too), the
manifest, the checkpoint files its runs recorded in the checkpoint folder's record and the
record, and the directories the emulator made that this leaves empty. Every path is checked
to resolve inside the data or checkpoint folder before anything is removed. A path that is
the root, a home directory or a system directory is refused (dlio_mpi.files.protected_folders; generate
and run refuse to write there too)."""
import os

from dlio_mpi.data import generation as datagen
from dlio_mpi.files import folder_lock
from dlio_mpi.files import protected_folders
from dlio_mpi.checkpoint import lock as checkpoint_lock
from dlio_mpi.checkpoint import record as checkpoint_record

class RefusedPath(RuntimeError):
    """A directory that clean will not touch."""


def check_path(path):
    why = protected_folders.refusal(path)
    if why:
        raise RefusedPath(f"refusing to clean {path} ({why})")
    return os.path.realpath(path)


def _left_lock(path, what):
    """[path] for a lock left by a process that died (clean removes it), [] for none; a live
    process's lock is refused: that process is writing there."""
    rec = folder_lock.read(path)
    if rec is None:
        return []
    if folder_lock.dead(path):
        return [path]
    raise RefusedPath(f"refusing to clean {what}: pid {rec.get('pid', '?')} on "
                      f"{rec.get('host', '?')} is writing there (its lock {path})")


def _inside(paths, folder, what):
    for p in paths:
        if not datagen.inside(p, folder):
            raise RefusedPath(f"refusing to remove {p}: it resolves to {os.path.realpath(p)}, "
                              f"outside the {what} {folder}")
    return paths


def dataset_files(cfg):
    """(files, directories the emulator made for the dataset, deepest first) as the manifest
    describes them; nothing if there is no manifest of this dataset."""
    root = cfg.dataset.data_folder
    try:
        have = datagen.load_manifest(root)
    except datagen.ManifestError as e:
        raise RefusedPath(str(e)) from None
    if have is None:
        return [], []
    if datagen.description(have) != datagen.manifest_for(cfg):
        raise RefusedPath(f"the manifest in {root} describes another dataset than this "
                          "workload's: give the workload's overrides that made it")
    out, dirs = [], []
    for d in datagen.splits(cfg):
        out.extend(sorted(p for p, _, _ in datagen.dataset_entries(d)))
        dirs.extend(d.directories() + ([os.path.join(root, d.split)] if d.subfolders else []))
    out.append(os.path.join(root, datagen.MANIFEST))
    out += _left_lock(os.path.join(root, datagen.GENERATING), root)
    if "made_dirs" in have:
        dirs = [os.path.normpath(os.path.join(root, m)) for m in have["made_dirs"]]
    # (a manifest of earlier versions records none: its split directories, not the folder)
    return _inside(out, root, "data folder"), sorted(set(dirs), key=len, reverse=True)


def checkpoint_files(cfg):
    """(files, directories made, a note or None): the files the folder's record names (those
    still there) and the record; nothing, and a note, for a folder without a record."""
    folder = cfg.checkpoint.checkpoint_folder
    if not os.path.isdir(folder):
        return [], [], None
    try:
        rec = checkpoint_record.read(folder)
    except checkpoint_record.RecordError as e:
        raise RefusedPath(str(e)) from None
    if rec is None:
        return [], [], (f"{folder} holds no record of checkpoints written by dlio_mpi "
                        f"({checkpoint_record.RECORD}): nothing removed there")
    made, names = rec
    files = [os.path.join(folder, n) for n in names]
    files = [f for p in files for f in (p, p + ".part")] + \
        [os.path.join(folder, checkpoint_record.RECORD)] + \
        _left_lock(os.path.join(folder, checkpoint_lock.LOCK), folder)
    return _inside(files, folder, "checkpoint folder"), [folder] if made else [], None


def clean(cfg, dry_run=False):
    """Remove the workload's dataset and checkpoints; returns (files removed, bytes, notes:
    one line each about what was left alone)."""
    check_path(cfg.dataset.data_folder)
    check_path(cfg.checkpoint.checkpoint_folder)
    data, data_dirs = dataset_files(cfg)
    ckpt, ckpt_dirs, note = checkpoint_files(cfg)
    files = [f for f in dict.fromkeys(data + ckpt) if os.path.isfile(f)]
    nbytes = 0
    emptied = set()
    for f in files:
        nbytes += os.path.getsize(f)
        emptied.add(os.path.realpath(os.path.dirname(f)))
        if not dry_run:
            os.unlink(f)
    if not dry_run:
        # directories the emulator made, deepest first, that are empty now: those clean
        # removed files from, and their parents it made that this empties in turn
        for d in data_dirs + ckpt_dirs:
            real = os.path.realpath(d)
            if real not in emptied or not os.path.isdir(d):
                continue
            try:
                os.rmdir(d)
            except OSError:
                continue
            emptied.add(os.path.dirname(real))
    return len(files), nbytes, [note] if note else []

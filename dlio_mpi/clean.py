"""Removing what a workload created, and nothing else: the dataset files its manifest names
(and their leftovers from interrupted generation), the manifest, checkpoint files named as the
checkpointer names them, and the directories those leave empty. A path that is the root, a
home directory or a system directory is refused."""
import glob
import os
import re

from dlio_mpi import datagen
from dlio_mpi.dataset import Dataset

PROTECTED = ("/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64", "/opt", "/proc",
             "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var", "/work")
CKPT = re.compile(r"^ckpt-\d{6}(-r\d{6})?\.(bin|h5|data|meta|index|state)(\.part.*)?$")


class RefusedPath(RuntimeError):
    """A directory that clean will not touch."""


def check_path(path):
    real = os.path.realpath(path)
    homes = {os.path.realpath(os.path.expanduser("~"))}
    if os.path.isdir("/home"):
        homes.update(os.path.realpath(os.path.join("/home", d)) for d in os.listdir("/home"))
    if real in PROTECTED or real in homes:
        raise RefusedPath(f"refusing to clean {path} ({real} is a system or home directory)")
    return real


def dataset_files(cfg):
    """The dataset's files as its manifest describes them (nothing if there is no manifest of
    this dataset): final names, then the temporary names generation uses."""
    root = cfg.dataset.data_folder
    have = datagen.read_manifest(root)
    if have is None:
        return []
    if have != datagen.manifest_for(cfg):
        raise RefusedPath(f"the manifest in {root} describes another dataset than this "
                          "workload's: give the workload's overrides that made it")
    out = []
    splits = [Dataset(cfg)] + ([Dataset(cfg, "valid")] if cfg.dataset.num_files_eval else [])
    for d in splits:
        for i in range(d.num_files):
            p = d.path(i)
            out.append(p)
            out.extend(glob.glob(glob.escape(p) + ".part*"))
    out.append(os.path.join(root, datagen.MANIFEST))
    return out


def checkpoint_files(cfg):
    folder = cfg.checkpoint.checkpoint_folder
    if not os.path.isdir(folder):
        return []
    return [os.path.join(folder, f) for f in sorted(os.listdir(folder)) if CKPT.match(f)]


def clean(cfg, dry_run=False):
    """Remove the workload's dataset and checkpoints; returns (files removed, bytes)."""
    check_path(cfg.dataset.data_folder)
    check_path(cfg.checkpoint.checkpoint_folder)
    files = [f for f in dataset_files(cfg) + checkpoint_files(cfg) if os.path.isfile(f)]
    nbytes = 0
    dirs = set()
    for f in files:
        nbytes += os.path.getsize(f)
        dirs.add(os.path.dirname(f))
        if not dry_run:
            os.unlink(f)
    if not dry_run:
        # directories left empty, deepest first, never above the data or checkpoint folder
        tops = {os.path.realpath(cfg.dataset.data_folder),
                os.path.realpath(cfg.checkpoint.checkpoint_folder)}
        for d in sorted(dirs, key=len, reverse=True):
            while d and os.path.realpath(d) not in tops:
                try:
                    os.rmdir(d)
                except OSError:
                    break
                d = os.path.dirname(d)
            for top in tops:
                try:
                    os.rmdir(top)
                except OSError:
                    pass
    return len(files), nbytes

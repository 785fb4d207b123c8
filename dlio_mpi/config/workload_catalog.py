"""The shipped workloads described for a reader choosing one: what each stands for (the first
phrase of its file's header comment), how large it is as shipped (the dataset's configured
bytes, the checkpoint's bytes), and the overrides that shrink it to a laptop's size (the
file's `# shrink:` line, which `workloads list` prints and the README's examples use)."""
import re
from dataclasses import dataclass

import numpy as np

from dlio_mpi.config import loader as config
from dlio_mpi.display import units

SHRINK_PREFIX = "# shrink:"


@dataclass(frozen=True)
class Entry:
    name: str
    what: str
    size: str
    shrink: tuple


def header(name):
    """The comment lines at the top of a shipped workload's file, without their '# '."""
    lines = []
    with open(config.workload_path(name)) as f:
        for line in f:
            if not line.startswith("#"):
                break
            lines.append(line)
    return lines


def shrink_overrides(name):
    """The overrides on the `# shrink:` line of a shipped workload's file (() when none)."""
    for line in header(name):
        if line.lower().startswith(SHRINK_PREFIX):
            return tuple(line[len(SHRINK_PREFIX):].split())
    return ()


def what(name):
    """What the workload stands for: its header's first phrase (to the first colon or full
    stop that ends a phrase)."""
    text = " ".join(line[1:].strip() for line in header(name)
                    if not line.lower().startswith(SHRINK_PREFIX))
    m = re.match(r"(.+?)(?::\s|\.\s|\.$|$)", text)
    return m.group(1).strip() if m else name


def _dataset_bytes(cfg):
    ds = cfg.dataset
    files = ds.num_files_train + ds.num_files_eval
    if ds.volume_shape:
        per_file = sum(int(np.prod(ds.volume_shape)) * np.dtype(v.get("dtype", "uint8")).itemsize
                       for v in (ds.volumes or [{}]))
        return files * per_file
    return files * ds.num_samples_per_file * ds.record_length


def _checkpoint_bytes(cfg):
    from dlio_mpi.checkpoint import size as checkpoint_size
    from dlio_mpi.checkpoint import schedule

    par = dict(cfg.model.parallelism)
    tp, pp = int(par.get("tensor", 1)), int(par.get("pipeline", 1))
    if cfg.checkpoint.preset != "none":
        _, own, _ = checkpoint_size.LLAMA3.get(cfg.checkpoint.preset, (None, None, None))
        if own is not None:
            tp, pp = own.tp, own.pp
    ckpt = schedule.size_of(cfg, tp * pp)
    return 0 if ckpt == 0 else ckpt.total_bytes


def size(cfg):
    """The workload's size as configured: its dataset (files, samples per file, bytes) and
    its checkpoint, each where the workload has one."""
    parts = []
    ds = cfg.dataset
    if cfg.workflow.train:
        parts.append(f"{ds.num_files_train} files x {ds.num_samples_per_file} samples, "
                     f"{units.size(_dataset_bytes(cfg))}")
    if cfg.workflow.checkpoint:
        try:
            parts.append(f"checkpoint {units.size(_checkpoint_bytes(cfg))}")
        except config.ConfigError:
            parts.append("checkpoint sized by the rank count")
    return "; ".join(parts) or "nothing read or written"


def describe(name):
    """The catalog entry of a shipped workload."""
    cfg = config.load([f"workload={name}"])
    return Entry(name, what(name), size(cfg), shrink_overrides(name))


def lines():
    """One line per shipped workload: name, what it is, its size, the overrides that shrink it."""
    entries = [describe(n) for n in config.list_workloads()]
    width = max(len(e.name) for e in entries)
    out = []
    for e in entries:
        shrink = " ".join(e.shrink) if e.shrink else "(small as shipped)"
        out.append(f"{e.name:<{width}}  {e.what} | {e.size} | shrink: {shrink}")
    return out

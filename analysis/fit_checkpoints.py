"""A job's checkpoints as analysis.fit recovers them, and the workload keys that make the
emulator write the same.

The checkpoint files are those analysis.file_roles labels "checkpoint" (data-like names the job
wrote and never read: torch.save's ``model_states-0.pt``, ``ckpt.bin.part``). The writes of
their POSIX records (per rank: bytes, calls, syncs, first write's start, last write's end)
give:

- the checkpoints: files whose writes no data read separates are one checkpoint (a
  checkpoint's model and optimizer files, or every rank's shard); without a trace of the data
  reads, a file's directory groups them (the DLIO benchmark's ``global_epochN_stepM/``);
- when: the share of the data bytes read before a checkpoint's first write, times the fitted
  epochs, is the epochs done. Within EPOCH_TOLERANCE of a whole epoch: after that epoch
  (checkpoint.checkpoint_after_epoch, epochs_between_checkpoints); else the training steps
  done (checkpoint.steps_between_checkpoints). Without a trace of the reads, a checkpoint per
  epoch is taken when there are as many checkpoints as epochs, else evenly spread (a note
  says so);
- which ranks: rank 0 alone (checkpoint.writers=rank0), or every rank its share (all);
- how big: model.model_size_bytes is the median checkpoint's bytes (over its writers; the
  emulator splits them evenly among checkpoint.writers);
- files: the emulator writes one file per writer (checkpoint.format=file_per_rank); more files
  per writer are written as one file of their total size (a note says so);
- the calls: checkpoint.transfer_size is the mean write size, so that a file takes as many
  write calls as the real one did; checkpoint.fsync when the job synced them.
"""

import os

import numpy as np

EPOCH_TOLERANCE = 0.1
SIZE_SPREAD = 0.05


def checkpoint_files(job, roles):
    """One row per checkpoint file (a dict): id, name, ranks (set), bytes, writes, syncs,
    start, end (seconds from the job's start); [] when the job wrote none."""
    posix = job.records.get("POSIX")
    if posix is None or posix.empty:
        return []
    ids = [i for i, role in roles.items() if role == "checkpoint"]
    rows = posix[posix["id"].isin(ids) & (posix["POSIX_BYTES_WRITTEN"] > 0)]
    files = []
    for fid, recs in rows.groupby("id", sort=False):
        starts = recs["POSIX_F_WRITE_START_TIMESTAMP"]
        files.append({
            "id": int(fid), "name": job.names.get(int(fid), ""),
            "ranks": {int(r) for r in recs["rank"]},
            "bytes": int(recs["POSIX_BYTES_WRITTEN"].sum()),
            "writes": int(recs["POSIX_WRITES"].clip(lower=0).sum()),
            "syncs": int(sum(recs[c].clip(lower=0).sum()
                             for c in ("POSIX_FSYNCS", "POSIX_FDSYNCS") if c in recs)),
            "start": float(starts[starts > 0].min()) if (starts > 0).any() else 0.0,
            "end": float(recs["POSIX_F_WRITE_END_TIMESTAMP"].max()),
        })
    return sorted(files, key=lambda f: (f["start"], f["name"]))


def group_checkpoints(files, read_starts):
    """The files of each checkpoint, in time order: a file starts a new checkpoint when a data
    read started between the previous files' last write and its first (read_starts: sorted
    start times of the data reads), or, without them, when its directory differs."""
    groups = []
    for f in files:
        if groups:
            last = groups[-1]
            if read_starts is not None:
                end = max(g["end"] for g in last)
                between = np.searchsorted(read_starts, f["start"]) \
                    - np.searchsorted(read_starts, end)
                together = between <= 0
            else:
                together = os.path.dirname(f["name"]) == os.path.dirname(last[0]["name"])
            if together:
                last.append(f)
                continue
        groups.append([f])
    return groups


def _cadence(dones, epochs, steps_per_epoch, notes, evidence):
    """The schedule keys from the epochs done at each checkpoint (None where unknown)."""
    if dones is None:
        n = evidence["checkpoints"]
        between = max(1, int(round(epochs / n)))
        first = epochs - between * (n - 1) if n <= epochs else 1
        notes.append(f"without a trace of the data reads, when the {n} checkpoints were "
                     f"written cannot be seen: one after epoch {max(first, 1)} and every "
                     f"{between} epochs after it")
        return {"checkpoint_after_epoch": max(first, 1), "epochs_between_checkpoints": between}
    whole = [int(round(d)) for d in dones]
    if all(abs(d - w) <= EPOCH_TOLERANCE and w >= 1 for d, w in zip(dones, whole)):
        gaps = np.diff(whole)
        between = int(round(float(np.median(gaps)))) if len(gaps) else 1
        if len(gaps) and (gaps != between).any():
            notes.append(f"checkpoints after epochs {whole}: not evenly spaced, written "
                         f"every {between} epochs from epoch {whole[0]}")
        return {"checkpoint_after_epoch": whole[0],
                "epochs_between_checkpoints": max(1, between)}
    steps = [d * steps_per_epoch for d in dones]
    gaps = np.diff([0.0] + steps)
    every = max(1, int(round(float(np.median(gaps)))))
    notes.append(f"checkpoints within epochs (after {', '.join(f'{s:.1f}' for s in steps)} "
                 f"steps of {steps_per_epoch} per epoch): every {every} steps")
    return {"steps_between_checkpoints": every}


def fit_checkpoints(job, roles, read_starts, data_bytes, epochs, steps_per_epoch,
                    output_folder, notes, evidence):
    """(model keys, checkpoint keys) for the job's checkpoints (module docstring), or None
    when it wrote none; what was measured goes to evidence["checkpoint_writes"]. read_starts:
    the data reads' start times and bytes, two arrays in start order, or None without a
    trace."""
    files = checkpoint_files(job, roles)
    if not files:
        return None
    starts = read_starts[0] if read_starts is not None else None
    groups = group_checkpoints(files, starts)
    sizes = [sum(f["bytes"] for f in g) for g in groups]
    writers = set().union(*(f["ranks"] for f in files))
    per_writer = [len(g) / max(1, len(set().union(*(f["ranks"] for f in g)))) for g in groups]
    evidence["checkpoints"] = len(groups)
    dones = None
    if read_starts is not None and data_bytes > 0:
        cum = np.cumsum(read_starts[1])
        dones = []
        for g in groups:
            before = np.searchsorted(read_starts[0], min(f["start"] for f in g))
            dones.append(float(cum[before - 1] if before else 0) / data_bytes * epochs)
    schedule = _cadence(dones, epochs, steps_per_epoch, notes, evidence)
    size = int(round(float(np.median(sizes))))
    writes = sum(f["writes"] for f in files)
    mean_write = -(-sum(f["bytes"] for f in files) // max(writes, 1))
    files_per_writer = int(round(float(np.median(per_writer))))
    evidence["checkpoint_writes"] = {
        "checkpoints": len(groups), "bytes": sizes, "files": [len(g) for g in groups],
        "writer_ranks": sorted(writers), "epochs_done": dones,
        "write_calls": writes, "mean_write_size": mean_write,
        "names": [os.path.basename(g[0]["name"]) for g in groups]}
    if max(sizes) > (1 + SIZE_SPREAD) * min(sizes):
        notes.append(f"checkpoints of {min(sizes)} to {max(sizes)} bytes: each written as the "
                     f"median, {size} bytes")
    all_ranks = len(writers) == job.nprocs and job.nprocs > 1
    who = "all" if all_ranks else "rank0"
    if not all_ranks and writers != {0}:
        notes.append(f"checkpoints written by rank(s) {sorted(writers)}: emulated by rank 0")
    if files_per_writer > 1:
        notes.append(f"{files_per_writer} checkpoint files per writing rank: written as one "
                     "file of their total size (checkpoint.format=file_per_rank)")
    notes.append(f"{len(groups)} checkpoint(s) of {size} bytes written by "
                 f"{'every rank' if all_ranks else 'one rank'} in {writes} write calls "
                 f"(checkpoint.transfer_size {mean_write}, the mean write)")
    # beside the run's output folder
    folder = os.path.join(os.path.dirname(output_folder.rstrip("/")) or ".", "checkpoints")
    checkpoint = {"checkpoint_folder": folder, "format": "file_per_rank", "writers": who,
                  "transfer_size": int(mean_write), **schedule}
    if any(f["syncs"] for f in files):
        checkpoint["fsync"] = True
    return {"model_size_bytes": size}, checkpoint

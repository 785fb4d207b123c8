"""A job's checkpoints as dlio_mpi_analysis.fitting.fit recovers them, and the workload keys that make the
emulator write the same.

The checkpoint files are those dlio_mpi_analysis.characterization.file_roles labels "checkpoint" (data-like names the job
wrote and never read: torch.save's ``model_states-0.pt``, ``ckpt.bin.part``). The writes of
their POSIX records (per rank: bytes, calls, syncs, first write's start, last write's end)
give:

- the checkpoints: files whose writes no data read separates are one checkpoint (a
  checkpoint's model and optimizer files, or every rank's shard); without a trace of the data
  reads, a file's directory groups them (the DLIO benchmark's ``global_epochN_stepM/``);
- when: the share of the data bytes read before a checkpoint's first write, times the fitted
  epochs, is the epochs done. Within EPOCH_TOLERANCE of a whole epoch: after that epoch
  (checkpoint.checkpoint_after_epoch, epochs_between_checkpoints); else the training steps
  done (checkpoint.steps_between_checkpoints), counted from 1 in every epoch (the DLIO
  benchmark's count) or over the run (checkpoint.step_count=run), whichever places the
  checkpoints where the job wrote them. Without a trace of the reads, a checkpoint per
  epoch is taken when there are as many checkpoints as epochs, else evenly spread (a note
  says so);
- which ranks: rank 0 alone (checkpoint.writers=rank0), every rank its share (all), or every
  s-th rank from 0 (strided, checkpoint.writer_stride s: one rank a node, a group's first);
- how big: model.model_size_bytes is the median checkpoint's bytes (over its writers; the
  emulator splits them evenly among checkpoint.writers);
- files: the emulator writes a writer's share in files of equal parts (checkpoint.format=
  file_per_rank, checkpoint.files_per_rank the median files a writer, at most 8), except two files
  a rank, each of its own (a model file and an optimizer file: _model_optimizer), whose
  writers are rank 0 or every rank: checkpoint.format=model_optimizer with model.model_size_bytes
  the model part, checkpoint.optimizer_multiplier the optimizer part over it, and each part's
  writers (checkpoint.writers, checkpoint.optimizer_writers);
- the calls: checkpoint.transfer_size is the mean write size, so that a file takes as many
  write calls as the real one did; checkpoint.fsync when the job synced them.

A checkpoint file the job wrote through MPI-IO (its MPI-IO records wrote bytes: an MPI
application's state, a sharded save by MPI_File_write_at_all) or through HDF5 (H5D records of
datasets in it: h5py with driver='mpio', a dataset per tensor) is measured at that layer, the
one the emulator's op log sees and compare counts it at: its bytes are the calls' (the
tensors', not libhdf5's metadata), its calls MPI_File_write*'s or H5Dwrite's, collective as
MPIIO_COLL_WRITES or H5D_USE_MPIIO_COLLECTIVE say, its writers the ranks of its records (a
record Darshan reduced over the ranks, rank -1, is every rank's). Such a checkpoint is one
shared file (checkpoint.format mpiio or hdf5, one 1-D dataset of the checkpoint's bytes) that
every writer fills with its contiguous share in calls of
checkpoint.collective_transfer_size, the checkpoint's bytes over its calls (so that it takes
as many calls as the real one), collective or independent (checkpoint.collective) as most of
the bytes were written, MPI_File_sync'ed when the job synced it. Several datasets are noted
where the emulator's differ.
"""

import os
import re

import numpy as np

from dlio_mpi.run.oplog_format import CHECKPOINT_FILES

from dlio_mpi_analysis.characterization.layers import dataset_file
from dlio_mpi_analysis.fitting.fit_checkpoint_reads import zip_read, zip_read_back

EPOCH_TOLERANCE = 0.1
# a pause in a checkpoint file's writes after which a last write may be another file's
STALE_GAP_S = 0.05
SIZE_SPREAD = 0.05


def _written(frame, ids, bytes_column):
    """The rows of a records frame of the ids given that wrote bytes."""
    if frame is None or frame.empty or bytes_column not in frame:
        return frame.iloc[0:0] if frame is not None else None
    return frame[frame["id"].isin(list(ids)) & (frame[bytes_column] > 0)]


def _count(rows, columns):
    return int(sum(rows[c].clip(lower=0).sum() for c in columns if c in rows))


def _ranks(rows, nprocs):
    """The ranks of a file's records; a record Darshan reduced over the ranks (-1) is every
    rank's."""
    ranks = {int(r) for r in rows["rank"]}
    return (ranks - {-1}) | set(range(nprocs)) if -1 in ranks else ranks


def _interface_of(job, fid, name):
    """(interface, bytes, calls, collective, its records there, datasets) of one checkpoint
    file at the highest layer that wrote it (module docstring); None when only POSIX did."""
    h5d = job.records.get("H5D")
    if h5d is not None and not h5d.empty:
        mine = h5d[[dataset_file(job.names.get(int(i), "")) == name for i in h5d["id"]]]
        mine = mine[mine["H5D_BYTES_WRITTEN"] > 0]
        if not mine.empty:
            return ("hdf5", _count(mine, ["H5D_BYTES_WRITTEN"]), _count(mine, ["H5D_WRITES"]),
                    bool((mine["H5D_USE_MPIIO_COLLECTIVE"] > 0).any()), mine,
                    int(mine["id"].nunique()))
    mpiio = _written(job.records.get("MPI-IO"), {fid}, "MPIIO_BYTES_WRITTEN")
    if mpiio is not None and not mpiio.empty:
        coll = _count(mpiio, ["MPIIO_COLL_WRITES", "MPIIO_SPLIT_WRITES"])
        calls = coll + _count(mpiio, ["MPIIO_INDEP_WRITES", "MPIIO_NB_WRITES"])
        return ("mpiio", _count(mpiio, ["MPIIO_BYTES_WRITTEN"]), calls, coll * 2 > calls,
                mpiio, 1)
    return None


def checkpoint_files(job, roles):
    """One row per checkpoint file (a dict): id, name, ranks (set), bytes, writes, syncs,
    start, end (seconds from the job's start), interface ("posix", "mpiio", "hdf5"),
    collective, datasets; bytes, writes and ranks at the layer that wrote it (module
    docstring); [] when the job wrote none."""
    posix = job.records.get("POSIX")
    ids = {i for i, role in roles.items() if role == "checkpoint"}
    rows = _written(posix, ids, "POSIX_BYTES_WRITTEN")
    mpiio = _written(job.records.get("MPI-IO"), ids, "MPIIO_BYTES_WRITTEN")
    stdio = _written(job.records.get("STDIO"), ids, "STDIO_BYTES_WRITTEN")
    found = set() if rows is None else {int(i) for i in rows["id"]}
    found |= set() if mpiio is None else {int(i) for i in mpiio["id"]}
    found |= set() if stdio is None else {int(i) for i in stdio["id"]}
    files = []
    for fid in found:
        name = job.names.get(fid, "")
        recs = rows[rows["id"] == fid] if rows is not None else None
        if (recs is None or recs.empty) and mpiio is not None \
                and (mpiio["id"] == fid).any():     # no POSIX record of it: its MPI-IO ones
            recs = mpiio[mpiio["id"] == fid].rename(columns=lambda c: c.replace("MPIIO_",
                                                                                "POSIX_"))
        elif recs is None or recs.empty:
            # written through C stdio alone (TensorFlow's checkpoint writer, fwrite): its
            # STDIO records, their bytes counted below as the stream's
            recs = stdio[stdio["id"] == fid].rename(columns=lambda c: c.replace("STDIO_",
                                                                                "POSIX_"))
            recs = recs.assign(POSIX_BYTES_WRITTEN=0, POSIX_WRITES=0)
        starts = recs["POSIX_F_WRITE_START_TIMESTAMP"]
        # a stream's file synced through its descriptor (fflush, then fsync(fileno)): the
        # fsync in a POSIX record that wrote no bytes
        synced_fd = posix[posix["id"] == fid] if posix is not None and not posix.empty \
            else None
        row = {"id": fid, "name": name, "ranks": _ranks(recs, job.nprocs),
               "bytes": _count(recs, ["POSIX_BYTES_WRITTEN"]),
               "writes": _count(recs, ["POSIX_WRITES"]),
               "syncs": _count(synced_fd if synced_fd is not None and not synced_fd.empty
                               else recs, ["POSIX_FSYNCS", "POSIX_FDSYNCS"]),
               "start": float(starts[starts > 0].min()) if (starts > 0).any() else 0.0,
               "end": float(recs["POSIX_F_WRITE_END_TIMESTAMP"].max()),
               "interface": "posix", "collective": False, "datasets": 0}
        streams = _written(job.records.get("STDIO"), {fid}, "STDIO_BYTES_WRITTEN")
        if streams is not None and not streams.empty:
            # numpy.save: the header through Python's file object (POSIX), the array by
            # ndarray.tofile through a C stream on the same descriptor (STDIO)
            row.update(bytes=row["bytes"] + _count(streams, ["STDIO_BYTES_WRITTEN"]),
                       writes=row["writes"] + _count(streams, ["STDIO_WRITES"]),
                       stream_bytes=_count(streams, ["STDIO_BYTES_WRITTEN"]),
                       stream_writes=_count(streams, ["STDIO_WRITES"]))
        layer = _interface_of(job, fid, name)
        if layer is not None:
            kind, nbytes, calls, collective, above, datasets = layer
            synced = _written(job.records.get("MPI-IO"), {fid}, "MPIIO_BYTES_WRITTEN")
            row.update(interface=kind, bytes=nbytes, writes=calls, collective=collective,
                       datasets=datasets, ranks=_ranks(above, job.nprocs),
                       syncs=max(row["syncs"], _count(synced, ["MPIIO_SYNCS"])
                                 if synced is not None else 0))
        files.append(row)
    _stale_writes(job, files)
    return sorted(files, key=lambda f: (f["start"], f["name"]))


def _stale_writes(job, files):
    """Move to their file the writes Darshan counted under another checkpoint file through a
    reused descriptor number: torch.save writes a file through its stream's descriptor, and
    C stdio's fclose of that stream is no close Darshan's POSIX module sees, so the number
    stays mapped to the file and the next save's last write, made with the same number, is
    counted under the previous file, at its end. Such a write is a file's last one, made after
    a pause in its writes (of STALE_GAP_S or more) while another checkpoint file of the same
    writer (POSIX) was being written: it is that file's, and this file's writes end before it.
    Needs the DXT trace; files of several writers or layers above POSIX are left as they
    are."""
    trace = (job.dxt_segments or {}).get("DXT_POSIX")
    if trace is None or len(files) < 2:
        return
    mine = [f for f in files if f["interface"] == "posix" and len(f["ranks"]) == 1]
    writes = {}
    for f in mine:
        w = trace[(trace["id"] == f["id"]) & (trace["op"] == "write")]
        if len(w) >= 2:
            writes[f["id"]] = w.sort_values("start", kind="stable")
    for f in mine:
        w = writes.get(f["id"])
        if w is None:
            continue
        start, end = w["start"].to_numpy(), w["end"].to_numpy()
        if start[-1] - end[:-1].max() < STALE_GAP_S:
            continue
        for g in mine:
            if g is f or g["id"] not in writes or g["ranks"] != f["ranks"]:
                continue
            gw = writes[g["id"]]
            if gw["start"].min() <= start[-1] <= gw["end"].max() + STALE_GAP_S:
                n = int(w["length"].to_numpy()[-1])
                f["bytes"], f["writes"], f["end"] = f["bytes"] - n, f["writes"] - 1, \
                    float(end[:-1].max())
                g["bytes"], g["writes"], g["end"] = g["bytes"] + n, g["writes"] + 1, \
                    max(g["end"], float(end[-1]))
                break


def _kind(name):
    """A checkpoint file's name with its numbers masked: the files a rank writes for one
    checkpoint are of different kinds (a model file and an optimizer file); a second file of
    a kind the rank already wrote is the next checkpoint's."""
    return re.sub(r"\d+", "#", os.path.basename(name))


def group_checkpoints(files, read_starts, reads=None):
    """The files of each checkpoint, in time order: a file starts a new checkpoint when a data
    read started between the previous files' last write and its first (read_starts: sorted
    start times of the data reads), unless (reads: the data reads' starts, bytes and ranks)
    its writers had read as far into their own data as the checkpoint's first writers had
    (ranks that reach the end of an epoch at different times save the same checkpoint apart,
    the others' reads between), or, without them, when its directory differs (the DLIO
    benchmark's folder a checkpoint) or, all files in one folder, when one of its writers
    already wrote a file of its kind (_kind) in the checkpoint (a checkpoint-only job's
    checkpoints written one after the other into one folder)."""
    groups = []
    one_folder = len({os.path.dirname(f["name"]) for f in files}) == 1
    progress = _progress(files, reads) if reads is not None else None
    for k, f in enumerate(files):
        if groups:
            last = groups[-1]
            if read_starts is not None:
                end = max(g["end"] for g in last)
                between = np.searchsorted(read_starts, f["start"]) \
                    - np.searchsorted(read_starts, end)
                together = between <= 0
                if not together and progress is not None:
                    first = files.index(last[0])
                    near = max(progress[k][1], progress[first][1])
                    kind = _kind(f["name"])
                    together = abs(progress[k][0] - progress[first][0]) <= near \
                        and not any(_kind(g["name"]) == kind and g["ranks"] & f["ranks"]
                                    for g in last)
            else:
                kind = _kind(f["name"])
                together = os.path.dirname(f["name"]) == os.path.dirname(last[0]["name"]) \
                    and not (one_folder and any(_kind(g["name"]) == kind
                                                and g["ranks"] & f["ranks"] for g in last))
            if together:
                last.append(f)
                continue
        groups.append([f])
    return groups


def _progress(files, reads):
    """Per file, (the share of its writers' own data bytes they had read when it began, half
    a read's share: how near two such shares are the same point), or None when a writer read
    nothing (a checkpoint-only job's writers)."""
    starts, lengths, ranks = (np.asarray(a) for a in reads)
    out = []
    for f in files:
        shares, halves = [], []
        for rank in f["ranks"]:
            mine = ranks == rank
            total = float(lengths[mine].sum())
            if total <= 0:
                return None
            shares.append(float(lengths[mine & (starts < f["start"])].sum()) / total)
            halves.append(0.5 * float(np.median(lengths[mine])) / total)
        out.append((float(np.mean(shares)), max(halves)))
    return out


def _writers_done(groups, reads, epochs):
    """Per checkpoint, the epochs its writers had read when they began it: each writer's share
    of its own data bytes read before its first write of the checkpoint, times the epochs, the
    mean over the writers (a rank that does not write runs on into its next steps while the
    writer saves: the whole job's reads would place the checkpoint late); None when a writer
    read nothing."""
    starts, lengths, ranks = (np.asarray(a) for a in reads)
    out = []
    for g in groups:
        shares = []
        for rank in set().union(*(f["ranks"] for f in g)):
            mine = ranks == rank
            total = float(lengths[mine].sum())
            if total <= 0:
                return None
            first = min(f["start"] for f in g if rank in f["ranks"])
            shares.append(float(lengths[mine & (starts < first)].sum()) / total * epochs)
        out.append(float(np.mean(shares)))
    return out


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
    spe = max(steps_per_epoch, 1)
    at = [max(1, int(round(x))) for x in steps]
    # two ways of counting steps: from 1 in every epoch (the DLIO benchmark's), whose first
    # checkpoint of an epoch is the step count; or over the run (a framework's global step),
    # whose count is the median gap. The one whose checkpoints fall where the job's did.
    within = [(a - 1) % spe + 1 for a in at]
    by_epoch = max(1, min(within))
    by_run = max(1, int(round(float(np.median(np.diff([0] + at))))))
    made = {"epoch": [e * spe + k for e in range(epochs)
                      for k in range(by_epoch, spe + 1, by_epoch)],
            "run": list(range(by_run, epochs * spe + 1, by_run))}
    misses = {way: len(set(made[way]) ^ set(at)) for way in made}
    way = "epoch" if misses["epoch"] <= misses["run"] else "run"
    every = by_epoch if way == "epoch" else by_run
    evidence["checkpoint_steps"] = {"steps": at, "of_epoch": within, "misses": misses}
    notes.append(f"checkpoints within epochs (after {', '.join(f'{s:.1f}' for s in steps)} "
                 f"steps of {steps_per_epoch} per epoch): every {every} steps of "
                 + ("an epoch, the count starting again with each (checkpoint.step_count "
                    "epoch, the DLIO benchmark's)" if way == "epoch" else
                    "the run (checkpoint.step_count run)")
                 + (f"; {len(made[way])} checkpoints where the job wrote {len(at)}"
                    if len(made[way]) != len(at) else ""))
    out = {"steps_between_checkpoints": every}
    if way == "run":
        out["step_count"] = "run"
    return out


def read_back(job, roles, read_ids):
    """The files the job read that are checkpoints it wrote earlier (a checkpoint-only job:
    write checkpoints, then read some back), else an empty set: every file read was written
    by the job before its first read, and each is the size of a checkpoint file the job wrote
    and never read. A job that writes its data and reads it all back (IOR) leaves no file
    written and never read."""
    posix = job.records.get("POSIX")
    never_read = {i for i, role in roles.items() if role == "checkpoint"}
    if posix is None or posix.empty or not read_ids:
        return set()
    if not never_read:
        # every checkpoint read back: files the job wrote before reading them, each read as
        # torch.load reads the zip torch.save makes (its end record first: no data reader
        # looks for a zip's end)
        return set(read_ids) if _written_then_read(posix, read_ids) \
            and all(zip_read(job, i) for i in read_ids) else set()
    mine = posix[posix["id"].isin(list(read_ids | never_read))]
    by_id = mine.groupby("id")
    written = by_id["POSIX_BYTES_WRITTEN"].sum()
    first_write = by_id["POSIX_F_WRITE_START_TIMESTAMP"].agg(
        lambda t: t[t > 0].min() if (t > 0).any() else np.inf)
    first_read = by_id["POSIX_F_READ_START_TIMESTAMP"].agg(
        lambda t: t[t > 0].min() if (t > 0).any() else np.inf)
    sizes = np.array([written.get(i, 0) for i in never_read if written.get(i, 0) > 0],
                     dtype=float)
    if not len(sizes):
        return set()
    for i in read_ids:
        if written.get(i, 0) <= 0 or not first_write.get(i, np.inf) < first_read.get(i, 0):
            return set()
        if not (np.abs(sizes - written[i]) <= SIZE_SPREAD * written[i]).any():
            return set()
    return set(read_ids)


def _written_then_read(posix, ids):
    """Whether each of the files ``ids`` was written by the job, its first write before its
    first read."""
    mine = posix[posix["id"].isin(list(ids))]
    for _, rows in mine.groupby("id"):
        w, r = rows["POSIX_F_WRITE_START_TIMESTAMP"], rows["POSIX_F_READ_START_TIMESTAMP"]
        if rows["POSIX_BYTES_WRITTEN"].clip(lower=0).sum() <= 0 or not (w > 0).any() \
                or not (r > 0).any() or w[w > 0].min() >= r[r > 0].min():
            return False
    return mine["id"].nunique() == len(ids)


def checkpoint_only(job, roles, back, output_folder, notes, evidence):
    """(model keys, checkpoint keys) of a job that wrote checkpoints and read some back, with
    no data (back: the files read back, see read_back): checkpoint.num_checkpoints_write the
    checkpoints, num_checkpoints_read those with a file read back, time_between_checkpoints
    the median pause between one checkpoint's last write and the next one's first."""
    roles = {**roles, **{i: "checkpoint" for i in back}}
    keys = fit_checkpoints(job, roles, None, 0, 1, 1, output_folder, notes, evidence,
                           only=True)
    files = checkpoint_files(job, roles)
    groups = group_checkpoints(files, None)
    reads = sum(1 for g in groups if any(f["id"] in back for f in g))
    ends = [max(f["end"] for f in g) for g in groups]
    starts = [min(f["start"] for f in g) for g in groups]
    pauses = [b - a for a, b in zip(ends[:-1], starts[1:])]
    pause = round(float(np.median(pauses)), 3) if pauses else 0.0
    keys[1].update({"num_checkpoints_write": len(groups), "num_checkpoints_read": reads,
                    "time_between_checkpoints": pause})
    keys[1].update(zip_read_back(job, back, keys[1].get("format"), notes, evidence))
    evidence["checkpoint_only"] = {"written": len(groups), "read": reads, "pauses": pauses}
    notes.append(f"no data read: {len(groups)} checkpoints written, {reads} read back "
                 f"(workflow.train false: checkpoint-only), {pause:g} s between them")
    return keys


def fit_checkpoints(job, roles, read_starts, data_bytes, epochs, steps_per_epoch,
                    output_folder, notes, evidence, only=False):
    """(model keys, checkpoint keys) for the job's checkpoints (module docstring), or None
    when it wrote none; what was measured goes to evidence["checkpoint_writes"]. read_starts:
    the data reads' start times and bytes, two arrays in start order (and, third, each read's
    rank), or None without a trace. only: a checkpoint-only job (checkpoint_only gives
    when)."""
    files = checkpoint_files(job, roles)
    if not files:
        return None
    starts = read_starts[0] if read_starts is not None else None
    groups = group_checkpoints(files, starts,
                               read_starts if read_starts is not None and len(read_starts) > 2
                               else None)
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
        if len(read_starts) > 2:
            dones = _writers_done(groups, read_starts, epochs) or dones
    schedule = {} if only else _cadence(dones, epochs, steps_per_epoch, notes, evidence)
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
    stride, first = _stride(writers, job.nprocs)
    if stride:
        who = "strided"
        notes.append(f"checkpoints written by rank(s) {sorted(writers)}, one in every "
                     f"{stride} from rank {first}: checkpoint.writers strided, "
                     f"checkpoint.writer_stride {stride}, checkpoint.writer_first {first}")
    elif not all_ranks and writers != {0}:
        notes.append(f"checkpoints written by rank(s) {sorted(writers)}: emulated by rank 0")
    # beside the run's output folder
    folder = os.path.join(os.path.dirname(output_folder.rstrip("/")) or ".", "checkpoints")
    checkpoint = {"checkpoint_folder": folder, "writers": who}
    if stride:
        checkpoint["writer_stride"] = stride
        if first:
            checkpoint["writer_first"] = first
    shared = _shared_format(files, groups, size, writes, notes, evidence)
    two = None if shared is not None else _model_optimizer(groups, job.nprocs)
    if shared is not None:
        checkpoint.update(shared)
    elif two is not None:
        (model, model_who), (optim, optim_who) = two
        evidence["checkpoint_writes"].update(model_bytes=model, optimizer_bytes=optim)
        notes.append(f"{len(groups)} checkpoint(s) of two files a writing rank: "
                     f"{model} bytes of weights by {_WHO[model_who]} and {optim} bytes of "
                     f"optimizer state by {_WHO[optim_who]} (checkpoint.format="
                     f"model_optimizer), in {writes} write calls (checkpoint.transfer_size "
                     f"{mean_write}, the mean write)")
        checkpoint.update({"format": "model_optimizer", "writers": model_who,
                           "optimizer_writers": "same" if optim_who == model_who
                           else optim_who,
                           "optimizer_multiplier": optim / model,
                           "transfer_size": int(mean_write)})
        size = model
    else:
        if all_ranks and any(len(f["ranks"]) > 1 for f in files):
            # the emulator's POSIX checkpoints are a file per writer: a file every rank
            # wrote is one file of rank 0's, as many files as the job's
            all_ranks, checkpoint["writers"] = False, "rank0"
            notes.append("checkpoint files written by several ranks each through POSIX: "
                         "emulated by rank 0 writing each whole (checkpoint.format="
                         "file_per_rank has a file per writer)")
        if files_per_writer > 1:
            kept = min(files_per_writer, CHECKPOINT_FILES)
            checkpoint["files_per_rank"] = kept
            notes.append(f"{files_per_writer} checkpoint files per writing rank (the median): "
                         f"checkpoint.files_per_rank {kept}, equal parts of its share"
                         + (f" ({files_per_writer} is more than the emulator's "
                            f"{CHECKPOINT_FILES})" if kept < files_per_writer else ""))
        by = "every rank" if all_ranks else f"{len(writers)} ranks" if stride else "one rank"
        pattern = _write_pattern(files, notes)
        if pattern:
            checkpoint["write_pattern"] = pattern
            streamed = sum(f.get("stream_writes", 0) for f in files)
            mean_write = -(-sum(f.get("stream_bytes", 0) for f in files) // max(streamed, 1))
        notes.append(f"{len(groups)} checkpoint(s) of {size} bytes written by "
                     f"{by} in {writes} write calls "
                     f"(checkpoint.transfer_size {mean_write}, the mean write)")
        checkpoint.update({"format": "file_per_rank", "transfer_size": int(mean_write)})
    checkpoint.update(schedule)
    if any(f["syncs"] for f in files):
        checkpoint["fsync"] = True
    return {"model_size_bytes": size}, checkpoint


def _stride(writers, nprocs):
    """(s, f) when the writing ranks are f, f + s, f + 2s, ... up to the job's last (one rank a
    node, the first rank of each group of s; a lone writer other than rank 0: s the job's
    size), other than rank 0 alone or every rank; else (0, 0)."""
    w = sorted(writers)
    if not w or w == [0] or w == list(range(nprocs)):
        return 0, 0
    s = w[1] - w[0] if len(w) > 1 else nprocs
    return (s, w[0]) if s >= 1 and w == list(range(w[0], nprocs, s)) else (0, 0)


def _write_pattern(files, notes):
    """"stream" when most checkpoint files were written through a C stream alone (STDIO:
    TensorFlow's checkpoint writer); "numpy" when most were written as numpy.save writes
    them: a small header through POSIX (at most NUMPY_HEADER bytes, in one write), the rest
    through a C stream; else None."""
    streamed = [f for f in files if f.get("stream_bytes") and f["bytes"] == f["stream_bytes"]]
    if 2 * len(streamed) > len(files):
        notes.append(f"{len(streamed)} of {len(files)} checkpoint files written through a C "
                     "stream alone (checkpoint.write_pattern stream)")
        return "stream"
    saved = [f for f in files if f.get("stream_bytes")
             and f["bytes"] - f["stream_bytes"] <= NUMPY_HEADER]
    if 2 * len(saved) <= len(files):
        return None
    notes.append(f"{len(saved)} of {len(files)} checkpoint files written as numpy.save "
                 "writes them: the header through POSIX, the array through a C stream "
                 "(checkpoint.write_pattern numpy)")
    return "numpy"


# numpy.save's header: 128 bytes for format 1.0 (a multiple of 64 in the versions after)
NUMPY_HEADER = 4096

_WHO = {"rank0": "rank 0", "all": "every rank"}


def _model_optimizer(groups, nprocs):
    """((model bytes, writers), (optimizer bytes, writers)) of checkpoints in which a rank
    writes two files of its own (a model file and an optimizer file, as the DLIO benchmark
    and DeepSpeed save a transformer: ZeRO stage 1 has rank 0 save the weights and every
    rank its shard of the optimizer state), else None. In each checkpoint the two files of a
    rank that wrote two are the parts (the smaller the model: Adam's state is larger than
    the weights), a rank's single file the part of the nearest size; writers are rank 0 or
    every rank, the bytes the median checkpoint's."""
    parts = []
    for g in groups:
        if any(len(f["ranks"]) != 1 for f in g):
            return None
        by_rank = {}
        for f in g:
            by_rank.setdefault(next(iter(f["ranks"])), []).append(f["bytes"])
        most = max(by_rank.values(), key=len)
        if len(most) != 2 or any(len(v) > 2 for v in by_rank.values()):
            return None
        template = sorted(most)
        totals, who = [0, 0], [set(), set()]
        for rank, sizes in by_rank.items():
            if len(sizes) == 2:
                placed = enumerate(sorted(sizes))
            else:
                b = max(sizes[0], 1)
                near = [abs(np.log(b / max(t, 1))) for t in template]
                placed = [(int(near[1] < near[0]), sizes[0])]
            for k, b in placed:
                totals[k] += b
                who[k].add(rank)
        policies = []
        for ranks in who:
            if ranks == {0}:
                policies.append("rank0")
            elif ranks == set(range(nprocs)):
                policies.append("all")
            else:
                return None
        parts.append((totals, policies))
    if not parts or len({tuple(p) for _, p in parts}) != 1:
        return None
    model = int(round(float(np.median([t[0] for t, _ in parts]))))
    optim = int(round(float(np.median([t[1] for t, _ in parts]))))
    if model <= 0:
        return None
    return (model, parts[0][1][0]), (optim, parts[0][1][1])


def _shared_format(files, groups, size, writes, notes, evidence):
    """The checkpoint keys of checkpoints written through MPI-IO or HDF5 (module docstring):
    the interface that wrote the most checkpoint bytes, when it is one of those; else None."""
    by_interface = {}
    for f in files:
        by_interface[f["interface"]] = by_interface.get(f["interface"], 0) + f["bytes"]
    kind = max(by_interface, key=by_interface.get)
    if kind == "posix":
        return None
    mine = [f for f in files if f["interface"] == kind]
    calls = sum(f["writes"] for f in mine)
    per_call = max(1, -(-sum(f["bytes"] for f in mine) // max(calls, 1)))
    collective = sum(f["bytes"] for f in mine if f["collective"]) * 2 \
        > sum(f["bytes"] for f in mine)
    label = {"mpiio": "MPI-IO", "hdf5": "HDF5 through MPI-IO"}[kind]
    evidence["checkpoint_writes"].update(
        interface=kind, collective=collective, datasets=[f["datasets"] for f in mine])
    if len(by_interface) > 1:
        notes.append(f"checkpoint files written through {', '.join(sorted(by_interface))}: "
                     f"all written through {label}, which wrote the most bytes")
    shared = max(len(g) for g in groups)
    if shared > 1:
        notes.append(f"{shared} shared checkpoint files per checkpoint: written as one file "
                     "of their total size")
    datasets = max(f["datasets"] for f in mine)
    if kind == "hdf5" and datasets > 1:
        notes.append(f"{datasets} datasets per checkpoint file: written as one dataset of "
                     "their total size, as many H5Dwrite calls")
    notes.append(f"{len(groups)} checkpoint(s) of {size} bytes in one shared file each, "
                 f"written through {label} by {'collective' if collective else 'independent'} "
                 f"calls ({calls} calls to {len(mine)} files: "
                 f"checkpoint.collective_transfer_size {per_call}, a rank's bytes per call)")
    return {"format": kind, "collective_transfer_size": int(per_call),
            **({} if collective else {"collective": False})}

"""Diagnosis rules about the run around the reads: shared files, balance among ranks, overlap
with compute, checkpoints and compression (see dlio_mpi_analysis.diagnosis.diagnose)."""

from dlio_mpi_analysis.diagnosis.findings import (CHECKPOINT_SHARE, IMBALANCE, IO_WAIT_SHARE, MiB, Finding,
                                         rows_format)

def _shared_independent(job):
    iface = job.get("io", "interface", "posix")
    if job.get("io", "layout") != "shared" or job.ranks < 2 or \
            iface not in ("mpiio", "hdf5", "hdf5_sec2"):
        return None
    hints = {"romio_cb_read": "enable", "cb_buffer_size": 16 * MiB}
    coll = "mpiio_coll" if iface == "mpiio" else "hdf5_coll"
    changes = {f"collective I/O ({coll}, collective buffering)": {
        "io": {"interface": coll, "mpiio_hints": hints}}}
    return Finding(
        "shared_independent", "shared file read independently",
        f"one file shared by {job.ranks} ranks, read with independent calls ({iface})",
        "ranks_sharing", float(job.ranks), 2.0, job.io_share / 2, changes)


def _rank_imbalance(job):
    written = job.char.totals.bytes_written or 0
    if written > 0.1 * (job.char.totals.bytes_read or 0):
        return None             # the balance counts writes too: checkpoints of one writer
    balance = [m.rank_balance for m in job.char.modules.values()
               if m.rank_balance is not None and m.rank_balance.mean_bytes]
    if not balance:
        return None
    b = max(balance, key=lambda x: x.max_bytes / x.mean_bytes)
    ratio = b.max_bytes / b.mean_bytes
    if ratio < IMBALANCE:
        return None
    return Finding(
        "rank_imbalance", "rank imbalance",
        f"the busiest rank moves {ratio:.2f}x the mean bytes per rank (threshold "
        f"{IMBALANCE}); its share of the dataset decides the step time",
        "max_over_mean_bytes", ratio, IMBALANCE, job.io_share * (1 - 1 / ratio), {})


def _no_overlap(job):
    if job.compute_share is None or job.compute_share <= 0 or not job.epoch_wall:
        return None
    if job.get("train", "computation_time", 0) in (0, 0.0, None):
        return None             # the loop's own time, not compute to overlap with
    if job.get("io", "read_type") == "memory" or job.io_share < IO_WAIT_SHARE:
        return None
    threads = int(job.summary.get("read_threads", job.get("reader", "read_threads", 1)) or 0)
    depth = int(job.get("reader", "prefetch_size", 2) or 0)
    iface = job.get("io", "interface", "posix")
    if iface in ("mpiio_coll", "hdf5_coll"):
        return None
    if job.read_ahead is not None and iface not in job.read_ahead:
        return None             # no read-ahead on this interface: the threads do nothing
    changes = {}
    for t, d in ((1, 2), (2, 2), (4, 4)):
        if t > threads or (t == threads and d > depth):
            changes[f"{t} read thread{'s' if t > 1 else ''}, prefetch {d} batches"] = {
                "reader": {"read_threads": t, "prefetch_size": d}}
    if not changes:
        return None
    au = [e.get("au") for e in job.summary.get("epochs") or [] if e.get("au") is not None]
    au_text = f", AU {100 * sum(au) / len(au):.0f} %" if au else ""
    return Finding(
        "no_overlap", "I/O not overlapped with compute",
        f"steps wait for their batch {100 * job.io_share:.0f} % of the epoch (threshold "
        f"{100 * IO_WAIT_SHARE:.0f} %) beside {100 * job.compute_share:.0f} % compute, "
        f"{threads} read threads, prefetch {depth}{au_text}",
        "io_wait_share", job.io_share, IO_WAIT_SHARE,
        min(job.io_share, job.compute_share), changes)


def _checkpoint_stalls(job):
    cps = [c for c in job.summary.get("checkpoints") or [] if c.get("op") == "write"]
    run = job.summary.get("duration_s") or 0
    if not cps or not run:
        return None
    spent = sum(c["duration_s"] for c in cps)
    share = spent / run
    if share < CHECKPOINT_SHARE:
        return None
    changes = {}
    ck_format = job.get("checkpoint", "format", "file_per_rank")
    if ck_format in ("mpiio", "hdf5"):
        changes["a checkpoint file per rank"] = {"checkpoint": {"format": "file_per_rank"}}
    if job.get("checkpoint", "writers", "rank0") == "rank0" and job.ranks > 1 and \
            ck_format == "file_per_rank":
        changes["every rank writes its share"] = {"checkpoint": {"writers": "all"}}
    if job.size("checkpoint", "transfer_size", MiB) < 16 * MiB:
        changes["checkpoint writes of 16 MiB"] = {"checkpoint": {"transfer_size": "16m"}}
    return Finding(
        "checkpoint_stalls", "checkpoint stalls",
        f"{len(cps)} checkpoint writes took {spent:.2f} s, {100 * share:.0f} % of the run "
        f"(threshold {100 * CHECKPOINT_SHARE:.0f} %)", "checkpoint_share", share,
        CHECKPOINT_SHARE, share, changes)


def _compression(job):
    ds = job.w.get("dataset") or {}
    volumes = ds.get("volumes") or []
    compressed = ds.get("compression", "none") not in (None, "none") or any(
        v.get("compression", "none") != "none" for v in volumes)
    if not compressed or job.io_share < IO_WAIT_SHARE:
        return None
    changes = {}
    if volumes:
        changes["volumes uncompressed"] = {"dataset": {"volumes": [
            dict(v, compression="none") for v in volumes]}}
        if any(v.get("compression") == "gzip" for v in volumes):
            changes["volumes compressed with lzf"] = {"dataset": {"volumes": [
                dict(v, compression="lzf") if v.get("compression") == "gzip" else v
                for v in volumes]}}
    else:
        changes["no compression"] = {"dataset": {"compression": "none"}}
        if rows_format(ds.get("format")) and ds.get("compression") == "gzip":
            changes["lzf compression"] = {"dataset": {"compression": "lzf"}}
    what = ds.get("compression") if not volumes else ", ".join(
        sorted({v.get("compression", "none") for v in volumes}))
    return Finding(
        "compression", "compressed input",
        f"input compressed ({what}) and I/O {100 * job.io_share:.0f} % of the training time "
        f"(threshold {100 * IO_WAIT_SHARE:.0f} %): decompression is part of every read",
        "io_share", job.io_share, IO_WAIT_SHARE, job.io_share / 2, changes)

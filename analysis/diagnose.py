"""Diagnosis of a job's I/O: what slows its training down, with the evidence, and the workload
changes that could remove each cause (to be measured, never predicted: dlio_mpi.advise).

``diagnose(char, workload, summary=None)`` takes a :class:`~analysis.characterize.
Characterization` (of a Darshan log or of a dlio_mpi run's op log), the workload the job runs
as (section -> key -> value, as dlio_mpi.config and analysis.fit write it) and, for an emulator
run, its summary.json (epochs' I/O wait and compute, checkpoints, facts). It returns
:class:`Finding` objects, most severe first. Each finding names its evidence (the counter or
share, its value and the threshold it crossed) and its candidate changes, each a partial
workload (section -> key -> value) that keeps the samples the job reads per epoch.

Severity is the share of the training time a finding puts at stake, a rough upper bound of
what removing its cause could save, used only to order the findings and to choose what to
measure first when the budget is short:

- small_reads: the I/O share of training time, scaled by how far the median read is below
  SMALL_READ_BYTES (log scale, capped at 1);
- misaligned_direct: the I/O share, times the bytes widened over the bytes asked;
- random_access: the I/O share, times the share of reads that are not sequential, halved;
- many_small_files, metadata_heavy: the I/O share, times opens per read (at most 1), reads
  being the application's (H5Dread calls where libhdf5 is used, else POSIX and STDIO reads);
- shared_independent: the I/O share, halved;
- rank_imbalance: the I/O share, times 1 - mean/max bytes per rank;
- no_overlap: the smaller of the I/O-wait share and the compute share of an epoch (what
  overlapping the two could hide at most);
- checkpoint_stalls: checkpoints' share of the run time;
- compression: the I/O share of a job reading compressed data, halved.
"""

import math
from dataclasses import dataclass, field

SMALL_READ_BYTES = 64 * 1024     # a median read below this is small for a parallel file system
MIN_READS = 100                  # fewer reads than this tell nothing about their sizes
RANDOM_SEQ_PCT = 60.0            # a job with fewer sequential reads than this reads randomly
SMALL_FILE_BYTES = 4 << 20       # files smaller than this, many of them: many small files
MANY_FILES = 64
OPENS_PER_READ = 0.5             # an open for every other read or more: metadata heavy
IMBALANCE = 1.25                 # max over mean bytes per rank
IO_WAIT_SHARE = 0.05             # steps waiting for their batch this share of an epoch or more
CHECKPOINT_SHARE = 0.10          # checkpoints taking this share of the run or more
KiB, MiB = 1024, 1024 * 1024


@dataclass
class Finding:
    """One cause of slow I/O: ``key`` (small_reads, no_overlap, ...), a one-line ``title``,
    ``evidence`` (what was measured, against which threshold), ``metric``/``value``/
    ``threshold`` (the same as numbers), ``severity`` (the module docstring) and ``changes``
    (label -> partial workload)."""

    key: str
    title: str
    evidence: str
    metric: str
    value: float
    threshold: float
    severity: float
    changes: dict = field(default_factory=dict)

    def to_dict(self):
        return {"key": self.key, "title": self.title, "evidence": self.evidence,
                "metric": self.metric, "value": self.value, "threshold": self.threshold,
                "severity": round(self.severity, 4), "changes": self.changes}


def _size(n):
    n = int(n)
    for unit, scale in (("GiB", 1 << 30), ("MiB", MiB), ("KiB", KiB)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _size_key(n):
    """A size as a workload value: 4k, 1m, or bytes."""
    for suffix, scale in (("g", 1 << 30), ("m", MiB), ("k", KiB)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{suffix}"
    return int(n)


class _Job:
    """The figures diagnosis needs, from the characterization and the summary."""

    def __init__(self, char, workload, summary):
        self.char, self.w, self.summary = char, workload, summary or {}
        basis = char.totals.basis
        self.reads = sum(char.modules[m].ops.get("reads") or 0 for m in basis)
        self.opens = sum(char.modules[m].ops.get("opens") or 0 for m in basis)
        # the application's own reads: H5Dread calls where libhdf5 was used, else the reads
        h5d = char.modules.get("H5D")
        self.app_reads = (h5d.ops.get("reads") or 0) if h5d is not None else self.reads
        trace = next((char.dxt[m] for m in ("DXT_POSIX", "DXT_STDIO")
                      if m in char.dxt and char.dxt[m].read_sizes is not None), None)
        self.median_read = trace.read_sizes.median if trace else None
        self.mean_read = (char.totals.bytes_read / self.reads) if self.reads else None
        posix = char.modules.get("POSIX")
        self.seq_pct = posix.sequential_read_pct if posix else None
        self.files = sum(v["files"] for v in char.data_formats.values()) \
            if char.data_formats else char.totals.files.total
        epochs = self.summary.get("epochs") or []
        wall = sum(e["duration_s"] for e in epochs)
        self.epoch_wall = wall
        if epochs and wall > 0:
            self.io_share = min(1.0, sum(e.get("io_wait_s_mean", 0.0) for e in epochs) / wall)
            self.compute_share = min(1.0, sum(e.get("compute_s_mean", 0.0)
                                              for e in epochs) / wall)
        else:
            share = char.totals.io_time.slowest_rank_share
            self.io_share = min(1.0, share) if share is not None else 0.0
            self.compute_share = None
        self.ranks = char.nprocs

    def get(self, section, key, default=None):
        return (self.w.get(section) or {}).get(key, default)


def diagnose(char, workload, summary=None):
    """The findings of a job, most severe first (see the module docstring)."""
    job = _Job(char, workload, summary)
    found = [f for f in (rule(job) for rule in RULES) if f is not None]
    return sorted(found, key=lambda f: -f.severity)


def _small_reads(job):
    med = job.median_read if job.median_read is not None else job.mean_read
    if med is None or job.reads < MIN_READS or med >= SMALL_READ_BYTES:
        return None
    record = int(job.get("dataset", "record_length", 0) or 0)
    changes = _larger_reads(job, record)
    if not changes:
        return None
    scale = min(1.0, math.log2(SMALL_READ_BYTES / max(med, 1)) / 4)
    return Finding(
        "small_reads", "small reads",
        f"median read {_size(med)} over {job.reads:,} reads (threshold {_size(SMALL_READ_BYTES)})"
        f"; I/O {100 * job.io_share:.0f} % of the training time",
        "median_read_bytes", float(med), float(SMALL_READ_BYTES),
        job.io_share * max(scale, 0.25), changes)


def _larger_reads(job, record):
    """Changes that make each read larger, by what sets the read size."""
    iface = job.get("io", "interface", "posix")
    access = job.get("reader", "access", "sample")
    xfer = int(job.get("reader", "transfer_size", 262144) or 0)
    changes = {}
    if job.get("dataset", "format") == "hdf5":
        volumes = job.get("dataset", "volumes") or []
        if volumes:
            grown = [dict(v, chunks=[min(2 * c, s) for c, s in
                                     zip(v.get("chunks") or [], job.get("dataset",
                                                                        "volume_shape"))])
                     for v in volumes]
            if any(g.get("chunks") != v.get("chunks") for g, v in zip(grown, volumes)):
                changes["HDF5 chunks twice as large in every dimension"] = {
                    "dataset": {"volumes": grown}}
        elif job.get("dataset", "enable_chunking") and record:
            chunk = int(job.get("dataset", "chunk_size", 0) or 0)
            if chunk and chunk < record:
                changes[f"HDF5 chunk of a whole sample ({_size(record)})"] = {
                    "dataset": {"chunk_size": _size_key(record)}}
                changes["HDF5 contiguous (no chunking)"] = {
                    "dataset": {"enable_chunking": False, "chunk_size": 0}}
        return changes
    if access == "numpy":
        for size in (1 * MiB, 4 * MiB):
            if size > int(job.get("reader", "buffer_size", 0) or 0):
                changes[f"read buffer {_size(size)}"] = {"reader": {"buffer_size":
                                                                    _size_key(size)}}
        return changes
    if iface == "stdio" and int(job.get("io", "stdio_buffer", 0) or 0) < MiB:
        changes["STDIO buffer 1 MiB"] = {"io": {"stdio_buffer": "1m"}}
    if xfer:
        limit = record if access == "sample" and record else None
        for size in (1 * MiB, 4 * MiB):
            if size > xfer and (limit is None or size < limit):
                changes[f"transfer size {_size(size)}"] = {
                    "reader": {"transfer_size": _size_key(size)}}
        if access == "sample" and record and xfer < record:
            changes["transfer size: a whole sample"] = {"reader": {"transfer_size": 0}}
    return changes


def _misaligned_direct(job):
    widening = (job.summary.get("facts") or {}).get("odirect_widening")
    if not widening:
        return None
    asked, read = widening["file0_sample_bytes"], widening["file0_read_bytes"]
    align = widening["alignment"]
    record = int(job.get("dataset", "record_length", 0) or 0)
    changes = {"buffered reads (no O_DIRECT)": {"io": {"interface": "posix"},
                                                "reader": {"odirect": False}}}
    if record and record % align:
        padded = -(-record // align) * align
        changes[f"samples padded to the O_DIRECT alignment ({_size(padded)})"] = {
            "dataset": {"record_length": padded}}
    return Finding(
        "misaligned_direct", "misaligned O_DIRECT reads",
        f"O_DIRECT alignment {align} B widens the sample reads: file 0 read {read:,} B for "
        f"{asked:,} B of samples (threshold: no widening)",
        "read_over_asked", read / max(asked, 1), 1.0,
        job.io_share * min(1.0, (read - asked) / max(asked, 1)), changes)


def _random_access(job):
    if job.seq_pct is None or job.reads < MIN_READS or job.seq_pct >= RANDOM_SEQ_PCT:
        return None
    changes = {}
    if job.get("reader", "sample_shuffle", "off") != "off" and \
            job.get("reader", "access", "sample") == "sample":
        changes["shuffle files, not samples"] = {"reader": {"sample_shuffle": "off",
                                                            "file_shuffle": "seed"}}
    if job.get("io", "interface", "posix") == "posix" and job.get("io", "fadvise") != "random":
        changes["fadvise random (no kernel read-ahead)"] = {"io": {"fadvise": "random"}}
    _fits_in_memory(job, changes)
    return Finding(
        "random_access", "random access",
        f"{job.seq_pct:.0f} % of {job.reads:,} POSIX reads sequential (threshold "
        f"{RANDOM_SEQ_PCT:.0f} %)", "sequential_read_pct", job.seq_pct, RANDOM_SEQ_PCT,
        job.io_share * (1 - job.seq_pct / 100) / 2, changes)


def _fits_in_memory(job, changes):
    """Reading the whole input at start, where a rank's share fits easily in memory."""
    facts = job.summary.get("facts") or {}
    data, memory = facts.get("dataset_bytes"), facts.get("host_memory_bytes")
    per_host = max(1, facts.get("ranks_per_host_max", 1))
    if data and memory and job.get("io", "read_type") == "on_demand" and \
            data / max(1, facts.get("hosts", 1)) < memory / 8 and per_host:
        changes["read the input into memory at start"] = {"io": {"read_type": "memory"}}


def _consolidate(job):
    """Fewer, larger files holding the same samples: the largest factor k dividing the file
    count that keeps at least as many files as ranks and files under 1 GiB."""
    files = int(job.get("dataset", "num_files_train", 0) or 0)
    spf = int(job.get("dataset", "num_samples_per_file", 1) or 1)
    record = int(job.get("dataset", "record_length", 0) or 0)
    if job.get("io", "layout", "multi") != "multi" or files < 2 or not record:
        return {}
    best = 1
    for k in range(2, files + 1):
        if files % k == 0 and files // k >= job.ranks and k * spf * record <= (1 << 30):
            best = k if k <= 16 else best
    if best == 1:
        return {}
    return {f"{files // best} files of {best * spf} samples (files merged by {best})": {
        "dataset": {"num_files_train": files // best, "num_samples_per_file": best * spf}}}


def _many_small_files(job):
    files = int(job.get("dataset", "num_files_train", 0) or 0)
    if job.files < MANY_FILES or not files:
        return None
    size = job.char.totals.bytes_read / max(job.files, 1)
    if size >= SMALL_FILE_BYTES:
        return None
    changes = _consolidate(job)
    if not changes:
        return None
    share = min(1.0, job.opens / max(job.reads, 1))
    return Finding(
        "many_small_files", "many small files",
        f"{job.files:,} files of {_size(size)} read on average (thresholds {MANY_FILES} "
        f"files, {_size(SMALL_FILE_BYTES)})", "bytes_read_per_file", float(size),
        float(SMALL_FILE_BYTES), job.io_share * share, changes)


def _metadata_heavy(job):
    per_read = job.opens / max(job.app_reads, 1)
    if job.reads < MIN_READS or per_read < OPENS_PER_READ:
        return None
    changes = {}
    if job.get("reader", "reopen"):
        changes["open each file once (no open per sample)"] = {"reader": {"reopen": False}}
    if not changes:
        return None
    return Finding(
        "metadata_heavy", "metadata-heavy opens",
        f"{job.opens:,} opens for {job.app_reads:,} "
        f"{'H5Dread calls' if job.app_reads != job.reads else 'reads'} ({per_read:.2f} per "
        "read, threshold "
        f"{OPENS_PER_READ})", "opens_per_read", per_read, OPENS_PER_READ,
        job.io_share * min(1.0, per_read), changes)


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
    if job.get("io", "read_type") == "memory" or job.io_share < IO_WAIT_SHARE:
        return None
    threads = int(job.get("reader", "read_threads", 1) or 0)
    depth = int(job.get("reader", "prefetch_size", 2) or 0)
    iface = job.get("io", "interface", "posix")
    if iface in ("mpiio_coll", "hdf5_coll"):
        return None
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
    fmt = job.get("checkpoint", "format", "file_per_rank")
    if fmt in ("mpiio", "hdf5"):
        changes["a checkpoint file per rank"] = {"checkpoint": {"format": "file_per_rank"}}
    if job.get("checkpoint", "writers", "rank0") == "rank0" and job.ranks > 1 and \
            fmt == "file_per_rank":
        changes["every rank writes its share"] = {"checkpoint": {"writers": "all"}}
    if int(job.get("checkpoint", "transfer_size", MiB) or MiB) < 16 * MiB:
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
        if ds.get("format") == "hdf5" and ds.get("compression") == "gzip":
            changes["lzf compression"] = {"dataset": {"compression": "lzf"}}
    what = ds.get("compression") if not volumes else ", ".join(
        sorted({v.get("compression", "none") for v in volumes}))
    return Finding(
        "compression", "compressed input",
        f"input compressed ({what}) and I/O {100 * job.io_share:.0f} % of the training time "
        f"(threshold {100 * IO_WAIT_SHARE:.0f} %): decompression is part of every read",
        "io_share", job.io_share, IO_WAIT_SHARE, job.io_share / 2, changes)


RULES = (_small_reads, _misaligned_direct, _random_access, _many_small_files, _metadata_heavy,
         _shared_independent, _rank_imbalance, _no_overlap, _checkpoint_stalls, _compression)

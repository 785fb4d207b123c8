"""Diagnosis rules about how the data is read: read sizes, alignment, the page cache, access
order, files and opens (see dlio_mpi_analysis.diagnosis.diagnose for what each finding's severity means)."""

import math

from dlio_mpi.display import units

from dlio_mpi_analysis.diagnosis.findings import (MANY_FILES, MIN_READS, MISALIGNED_PCT, OPENS_PER_READ,
                                         RANDOM_SEQ_PCT, SMALL_FILE_BYTES, SMALL_READ_BYTES, MiB,
                                         Finding, _size_key, rows_format)


def _small_chunks(job):
    """HDF5 rows cut into chunks smaller than SMALL_READ_BYTES: libhdf5 reads a sample a
    chunk at a time, whatever the read sizes the op log shows above the MPI-IO driver."""
    record = job.size("dataset", "record_length", 0)
    chunk = job.size("dataset", "chunk_size", 0)
    if not rows_format(job.get("dataset", "format")) or not job.get("dataset", "enable_chunking") \
            or not chunk or chunk >= min(record, SMALL_READ_BYTES):
        return None
    changes = _larger_reads(job, record)
    scale = min(1.0, math.log2(SMALL_READ_BYTES / chunk) / 4)
    return Finding(
        "small_reads", "small reads",
        f"HDF5 chunks of {units.size(chunk)} (dataset.chunk_size; threshold "
        f"{units.size(SMALL_READ_BYTES)}) for samples of {units.size(record)}: libhdf5 reads a sample "
        f"{-(-record // chunk)} chunks at a time; I/O {100 * job.io_share:.0f} % of the "
        "training time", "chunk_bytes", float(chunk), float(SMALL_READ_BYTES),
        job.io_share * max(scale, 0.25), changes)


def _small_reads(job):
    med = job.median_read if job.median_read is not None else job.mean_read
    if med is None or job.reads < MIN_READS or med >= SMALL_READ_BYTES:
        return _small_chunks(job)
    record = job.size("dataset", "record_length", 0)
    changes = _larger_reads(job, record)
    if not changes:
        return None
    scale = min(1.0, math.log2(SMALL_READ_BYTES / max(med, 1)) / 4)
    return Finding(
        "small_reads", "small reads",
        f"median read {units.size(med)} over {job.reads:,} reads (threshold {units.size(SMALL_READ_BYTES)})"
        f"; I/O {100 * job.io_share:.0f} % of the training time",
        "median_read_bytes", float(med), float(SMALL_READ_BYTES),
        job.io_share * max(scale, 0.25), changes)


def _larger_reads(job, record):
    """Changes that make each read larger, by what sets the read size."""
    iface = job.get("io", "interface", "posix")
    access = job.get("reader", "access", "sample")
    xfer = job.size("reader", "transfer_size", 262144)
    changes = {}
    if rows_format(job.get("dataset", "format")):
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
            chunk = job.size("dataset", "chunk_size", 0)
            if chunk and chunk < record:
                changes[f"HDF5 chunk of a whole sample ({units.size(record)})"] = {
                    "dataset": {"chunk_size": _size_key(record)}}
                changes["HDF5 contiguous (no chunking)"] = {
                    "dataset": {"enable_chunking": False, "chunk_size": 0}}
        return changes
    if access == "numpy":
        for size in (1 * MiB, 4 * MiB):
            if size > job.size("reader", "buffer_size", 0):
                changes[f"read buffer {units.size(size)}"] = {"reader": {"buffer_size":
                                                                    _size_key(size)}}
        return changes
    if iface == "stdio" and job.size("io", "stdio_buffer", 0) < MiB:
        changes["STDIO buffer 1 MiB"] = {"io": {"stdio_buffer": "1m"}}
    if xfer:
        limit = record if access == "sample" and record else None
        for size in (1 * MiB, 4 * MiB):
            if size > xfer and (limit is None or size < limit):
                changes[f"transfer size {units.size(size)}"] = {
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
    record = job.size("dataset", "record_length", 0)
    changes = {"buffered reads (no O_DIRECT)": {"io": {"interface": "posix"},
                                                "reader": {"odirect": False}}}
    if record and record % align:
        padded = -(-record // align) * align
        changes[f"samples padded to the O_DIRECT alignment ({units.size(padded)})"] = {
            "dataset": {"record_length": padded}}
    return Finding(
        "misaligned_direct", "misaligned O_DIRECT reads",
        f"O_DIRECT alignment {align} B widens the sample reads: file 0 read {read:,} B for "
        f"{asked:,} B of samples (threshold: no widening)",
        "read_over_asked", read / max(asked, 1), 1.0,
        job.io_share * min(1.0, (read - asked) / max(asked, 1)), changes)


def _misaligned(job):
    """Accesses off the file system's alignment, as a Darshan log counts them."""
    posix = job.char.modules.get("POSIX")
    al = getattr(posix, "alignment", None) if posix is not None else None
    if not al or al["file_not_aligned_pct"] is None or job.reads < MIN_READS:
        return None
    pct, align = al["file_not_aligned_pct"], al["file_alignment"]
    mem = al["mem_not_aligned_pct"] or 0.0
    if pct < MISALIGNED_PCT and mem < MISALIGNED_PCT:
        return None
    changes = {}
    xfer = job.size("reader", "transfer_size", 0)
    record = job.size("dataset", "record_length", 0)
    if xfer and xfer % align:
        up = -(-xfer // align) * align
        changes[f"transfer size {units.size(up)} (a multiple of {units.size(align)})"] = {
            "reader": {"transfer_size": up}}
    if record and record % align:
        padded = -(-record // align) * align
        changes[f"samples padded to the file alignment ({units.size(padded)})"] = {
            "dataset": {"record_length": padded}}
    memory = (f"; {mem:.0f} % of their buffers off the {al['mem_alignment']} B memory "
              "alignment (POSIX_MEM_NOT_ALIGNED)" if mem >= MISALIGNED_PCT else "")
    return Finding(
        "misaligned", "misaligned accesses",
        f"{pct:.0f} % of the POSIX reads and writes start off the {units.size(align)} file "
        f"alignment (POSIX_FILE_NOT_ALIGNED; threshold {MISALIGNED_PCT:.0f} %){memory}",
        "file_not_aligned_pct", pct, MISALIGNED_PCT,
        job.io_share * max(pct, mem) / 100 / 2, changes)


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


def _beyond_page_cache(job):
    """A dataset larger than a host's memory read through the page cache: every epoch reads
    it from the storage again, and the cache's copy is overhead (and evicts everything else)."""
    facts = job.summary.get("facts") or {}
    data, memory = facts.get("dataset_bytes"), facts.get("host_memory_bytes")
    iface = job.get("io", "interface", "posix")
    if not data or not memory or iface != "posix" or data <= memory:
        return None
    if job.median_read is not None and job.median_read < SMALL_READ_BYTES:
        return None             # small reads: O_DIRECT would make them slower still
    changes = {"O_DIRECT reads": {"io": {"interface": "posix_direct"}}}
    xfer = job.size("reader", "transfer_size", 0)
    if xfer % 4096:
        changes["O_DIRECT reads"]["reader"] = {"transfer_size": -(-xfer // 4096) * 4096}
    return Finding(
        "beyond_page_cache", "dataset larger than the page cache",
        f"dataset {units.size(data)} against {units.size(memory)} of memory per host (threshold: the "
        "memory): each epoch reads it from the storage through the page cache",
        "dataset_over_memory", data / memory, 1.0, job.io_share / 4, changes)


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
    record = job.size("dataset", "record_length", 0)
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
        f"{job.files:,} files of {units.size(size)} read on average (thresholds {MANY_FILES} "
        f"files, {units.size(SMALL_FILE_BYTES)})", "bytes_read_per_file", float(size),
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

"""The parts of a diagnosis (dlio_mpi_analysis.diagnosis.diagnose): thresholds, a finding, and the figures of a
job the rules read (from its characterization, workload and summary)."""

import re
from dataclasses import dataclass, field

from dlio_mpi.run import summary_layout

SMALL_READ_BYTES = 64 * 1024     # a median read below this is small for a parallel file system
MIN_READS = 100                  # fewer reads than this tell nothing about their sizes
RANDOM_SEQ_PCT = 60.0            # a job with fewer sequential reads than this reads randomly
SMALL_FILE_BYTES = 4 << 20       # files smaller than this, many of them: many small files
MANY_FILES = 64
OPENS_PER_READ = 0.5             # an open for every other read or more: metadata heavy
MISALIGNED_PCT = 10.0            # accesses off the file alignment, share of all
IMBALANCE = 1.25                 # max over mean bytes per rank
IO_WAIT_SHARE = 0.05             # steps waiting for their batch this share of an epoch or more
CHECKPOINT_SHARE = 0.10          # checkpoints taking this share of the run or more
KiB, MiB = 1024, 1024 * 1024


@dataclass
class Finding:
    """One cause of slow I/O: ``key`` (its id in dlio_mpi_analysis.diagnosis.finding_kinds.KINDS), a one-line
    ``title``, ``evidence`` (what was measured, against which threshold), ``metric``/``value``/
    ``threshold`` (the same as numbers), ``severity`` (the module docstring), ``changes``
    (label -> partial workload, where the workload is known) and the ``files`` and ``ranks``
    that trigger it."""

    key: str
    title: str
    evidence: str
    metric: str
    value: float
    threshold: float
    severity: float
    changes: dict = field(default_factory=dict)
    files: list = field(default_factory=list)     # the files that trigger it, worst first
    ranks: list = field(default_factory=list)     # the ranks that trigger it

    def to_dict(self):
        from dlio_mpi_analysis.diagnosis.finding_kinds import KINDS
        kind = KINDS.get(self.key)
        return {"id": self.key, "key": self.key, "title": self.title,
                "evidence": self.evidence, "metric": self.metric, "value": self.value,
                "threshold": self.threshold, "severity": round(self.severity, 4),
                "files": list(self.files), "ranks": list(self.ranks),
                "drishti": list(kind.drishti) if kind else [],
                "advise": kind.change if kind else "", "changes": self.changes}


def _size_key(n):
    """A size as a workload value: 4k, 1m, or bytes."""
    for suffix, scale in (("g", 1 << 30), ("m", MiB), ("k", KiB)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{suffix}"
    return int(n)


class _Job:
    """The figures diagnosis needs, from the characterization and the summary (its own
    figures: summary_layout.own)."""

    def __init__(self, char, workload, summary):
        self.char, self.w, self.summary = char, workload, summary_layout.own(summary or {})
        basis = char.totals.basis
        self.reads = sum(char.modules[m].ops.get("reads") or 0 for m in basis)
        self.opens = sum(char.modules[m].ops.get("opens") or 0 for m in basis)
        # the application's own reads: H5Dread calls where libhdf5 was used, else the reads
        h5d = char.modules.get("H5D")
        self.app_reads = (h5d.ops.get("reads") or 0) if h5d is not None else self.reads
        trace = next((char.dxt[m] for m in ("DXT_POSIX", "DXT_STDIO", "DXT_MPIIO")
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

    def size(self, section, key, default=0):
        """A size key in bytes, also when written as 4k, 1m, ..."""
        value = self.get(section, key, default)
        if isinstance(value, str):
            m = re.fullmatch(r"\s*(\d+)\s*([kmgt]?)i?b?\s*", value.lower())
            if not m:
                return default
            return int(m.group(1)) << (10 * " kmgt".index(m.group(2) or " "))
        return int(value or 0)


def rows_format(fmt):
    """Whether dataset.format fmt stores a sample as a row of an HDF5 dataset (its traits say,
    not its name)."""
    from dlio_mpi import formats
    t = formats.TRAITS.get(fmt)
    return bool(t and t.rows)

"""Two or more characterizations side by side, with one similarity score per job.

``compare([a, b, ...])`` takes Characterizations (or anything ``characterize`` accepts: logs,
directories of logs, dlio_mpi run directories) and returns a :class:`Comparison`: a tidy table
(metric, job, value, relative difference to the first job, similarity to the first job, weight)
and, for every job, a similarity score in [0, 1] to the first job.

The score is a weighted mean over a fixed metric set (``METRICS``) of per-metric similarities:

    score(j) = sum_k w_k s_k(j) / sum_k w_k     over the metrics k known for both jobs

with, for the first job's value a and job j's value b:

- "ratio" metrics (counts, bytes, sizes, shares of time): s = 1 - min(1, |log10(b / a)|), so
  equal values give 1, a factor of 2 gives 0.70, a factor of 10 or more gives 0; s = 1 when both
  are 0 and 0 when only one is.
- "fraction" metrics (values in [0, 1]): s = 1 - |a - b|.
- "distribution" (the read-size histogram, normalized to shares of the operations):
  s = 1 - (1/2) sum_bucket |p_a - p_b| (one minus the total-variation distance).
- "set" (the interfaces used): s = |A & B| / |A | B| (Jaccard; 1 when both are empty).

A metric whose value is unknown (None) for either job is left out of that job's score (the
table says so with similarity None). Identical inputs give 1.0 exactly. Weights favour what
shapes the I/O (bytes, transfer sizes, interfaces) over what depends on the machine and its
noise (I/O time share, rank imbalance).

Reads through mmap are invisible to Darshan; an emulator run's op log leaves them out of its
counters as Darshan does (so an mmap run compares with its Darshan log like for like), and the
comparison's ``notes`` say how many bytes each job left out that way.

Structure against volume: the weighted mean is multiplied by a structure gate, the smallest
similarity of the job's shape (``STRUCTURE``: the number of files, the share of files opened
by several ranks, the interfaces). A job of the right volume but the wrong shape cannot score
high: files shared by every rank where the real job's were each read by one (shared share 1
against 0) give 0; twice the files cap the score at 0.70; one interface of two at 0.5. The
table's row ``structure_gate`` holds the gate.
"""

import math
import os
from dataclasses import dataclass

import pandas as pd

from .characterize import Characterization, characterize
from .counters import SIZE_BUCKETS
from .oplog import MMAP_MARK

# (metric, kind, weight, description)
METRICS = (
    ("ranks", "ratio", 0.5, "processes"),
    ("bytes_read", "ratio", 2.0, "bytes read (POSIX + STDIO)"),
    ("bytes_written", "ratio", 1.0, "bytes written (POSIX + STDIO)"),
    ("read_ops", "ratio", 1.0, "read calls (POSIX + STDIO)"),
    ("write_ops", "ratio", 0.5, "write calls (POSIX + STDIO)"),
    ("files", "ratio", 1.0, "data files that moved bytes (POSIX + STDIO; not code, "
     "libraries, configuration or the tools' own files)"),
    ("shared_file_fraction", "fraction", 1.0, "share of the data files opened by several ranks"),
    ("mean_read_size", "ratio", 2.0, "bytes read / read calls"),
    ("read_size_histogram", "distribution", 2.0, "POSIX read sizes, Darshan buckets"),
    ("sequential_read_fraction", "fraction", 1.0, "POSIX sequential reads / reads"),
    ("consecutive_read_fraction", "fraction", 1.0, "POSIX consecutive reads / reads"),
    ("early_read_fraction", "fraction", 1.0,
     "read bytes in the first 10% of run time (DXT: POSIX, else STDIO, else MPI-IO)"),
    ("io_time_share", "ratio", 0.5, "slowest rank's I/O time / run time"),
    ("rank_imbalance", "ratio", 0.5, "max / mean bytes per rank (POSIX, else STDIO; unknown "
     "when most bytes are in records Darshan reduced over the ranks, files every rank opened)"),
    ("interfaces", "set", 2.0, "interfaces used"),
)
DXT_PREFERENCE = ("DXT_POSIX", "DXT_STDIO", "DXT_MPIIO")
STRUCTURE = ("files", "shared_file_fraction", "interfaces")


@dataclass
class Comparison:
    """The result of :func:`compare`. ``table``: one row per (metric, job) with columns metric,
    job, value, relative_difference ((b - a) / a for numbers, None when a = 0 or not a
    number), similarity (to the first job; None when left out) and weight. ``scores``: job
    label -> similarity score to the first job (1.0 for the first)."""

    labels: list
    table: pd.DataFrame
    scores: dict
    notes: list = None      # "label: note" for what a job's counters leave out (mmap reads)

    @property
    def score(self):
        """The score of the second job (the one number of a two-job comparison)."""
        return self.scores[self.labels[1]] if len(self.labels) > 1 else 1.0

    def row(self, metric):
        """The values of one metric, a tuple in the jobs' order."""
        t = self.table[self.table["metric"] == metric]
        if t.empty:
            raise KeyError(f"no metric {metric!r}")
        return tuple(t["value"].tolist())

    def to_dict(self):
        rows = self.table.astype(object).where(self.table.notna(), None)
        return {"labels": list(self.labels), "scores": dict(self.scores),
                "notes": list(self.notes or []),
                "metrics": [{"metric": m, "kind": k, "weight": w, "description": d}
                            for m, k, w, d in METRICS],
                "table": rows.to_dict(orient="records")}


def profile(c):
    """The values of METRICS for one Characterization (None where unknown)."""
    basis = [c.modules[name] for name in c.totals.basis]
    reads = sum(m.ops.get("reads") or 0 for m in basis)
    writes = sum(m.ops.get("writes") or 0 for m in basis)
    posix = c.modules.get("POSIX")
    files = c.totals.files
    histogram = None
    if posix is not None and posix.read_sizes is not None and posix.read_sizes.operations:
        total = posix.read_sizes.operations
        histogram = {b: posix.read_sizes.histogram[b] / total for b in SIZE_BUCKETS}
    balanced = next((m.rank_balance for m in basis if m.rank_balance is not None), None)
    early = next((c.dxt[name].early_read_fraction for name in DXT_PREFERENCE
                  if name in c.dxt and c.dxt[name].early_read_fraction is not None), None)
    return {
        "ranks": c.nprocs,
        "bytes_read": c.totals.bytes_read,
        "bytes_written": c.totals.bytes_written,
        "read_ops": reads,
        "write_ops": writes,
        "files": sum(v["files"] for v in c.data_formats.values()) if c.data_formats
        else files.total,
        "shared_file_fraction": _shared_fraction(c),
        "mean_read_size": c.totals.bytes_read / reads if reads else None,
        "read_size_histogram": histogram,
        "sequential_read_fraction": _share(posix.sequential_read_pct) if posix else None,
        "consecutive_read_fraction": _share(posix.consecutive_read_pct) if posix else None,
        "early_read_fraction": early,
        "io_time_share": c.totals.io_time.slowest_rank_share,
        "rank_imbalance": balanced.max_bytes / balanced.mean_bytes
        if balanced is not None and balanced.mean_bytes > 0
        and balanced.shared_bytes <= balanced.mean_bytes * balanced.ranks else None,
        "interfaces": sorted(c.interfaces),
    }


def _shared_fraction(c):
    """Shared data files over data files (files that moved bytes, not the tools' own), else
    over all files."""
    data = c.data_formats
    n = sum(v["files"] for v in data.values()) if data else 0
    if n:
        return sum(v.get("shared_files", 0) for v in data.values()) / n
    files = c.totals.files
    return files.shared / files.total if files.total else None


def similarity(kind, a, b):
    """The similarity in [0, 1] of two values of a metric of ``kind`` (see the module
    docstring); None when either is None."""
    if a is None or b is None:
        return None
    if kind == "ratio":
        if a == b:
            return 1.0
        if a <= 0 or b <= 0:
            return 0.0
        return 1.0 - min(1.0, abs(math.log10(b / a)))
    if kind == "fraction":
        return 1.0 - min(1.0, abs(a - b))
    if kind == "distribution":
        return 1.0 - 0.5 * sum(abs(a[k] - b[k]) for k in SIZE_BUCKETS)
    if kind == "set":
        union = set(a) | set(b)
        return len(set(a) & set(b)) / len(union) if union else 1.0
    raise ValueError(f"unknown metric kind {kind!r}")


def compare(sources, labels=None, *, dxt=True):
    """Compare two or more jobs: Characterizations, or sources for ``characterize`` (read with
    ``dxt``). ``labels`` name the jobs (default: the file or directory names)."""
    sources = list(sources)
    if len(sources) < 2:
        raise ValueError("compare needs at least two jobs")
    chars = [s if isinstance(s, Characterization) else characterize(s, dxt=dxt)
             for s in sources]
    labels = list(labels) if labels is not None else default_labels(sources, chars)
    profiles = [profile(c) for c in chars]
    rows, scores = [], {}
    for j, (label, values) in enumerate(zip(labels, profiles)):
        weighted = total = 0.0
        gate = 1.0
        for metric, kind, weight, _ in METRICS:
            a, b = profiles[0][metric], values[metric]
            s = similarity(kind, a, b)
            if s is not None:
                weighted += weight * s
                total += weight
                if metric in STRUCTURE:
                    gate = min(gate, s)
            rows.append({"metric": metric, "job": label, "value": b,
                         "relative_difference": _relative(kind, a, b),
                         "similarity": s, "weight": weight})
        rows.append({"metric": "structure_gate", "job": label, "value": gate,
                     "relative_difference": None, "similarity": gate, "weight": None})
        scores[label] = gate * weighted / total if total else None
    notes = [f"{label}: {w}" for label, c in zip(labels, chars) for w in c.warnings
             if MMAP_MARK in w]
    return Comparison(labels=labels, table=pd.DataFrame(rows), scores=scores, notes=notes)


def default_labels(sources, chars):
    """The base names of the sources (the first log of a set), made unique with #n."""
    names = []
    for source, c in zip(sources, chars):
        if isinstance(source, (str, os.PathLike)):
            names.append(os.path.basename(os.path.normpath(os.fspath(source))))
        else:
            names.append(os.path.basename(c.logs[0]) if c.logs else "job")
    seen = {}
    unique = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        unique.append(name if names.count(name) == 1 else f"{name}#{seen[name]}")
    return unique


def render_comparison(comparison):
    """A plain-text table: one row per metric, one column per job (with the relative difference
    to the first job for numbers), then the scores."""
    labels = comparison.labels
    table = comparison.table
    header = ["metric", *labels]
    lines = []
    for metric, _, weight, _ in METRICS:
        cells = [f"{metric} (w {weight:g})"]
        for label in labels:
            row = table[(table["metric"] == metric) & (table["job"] == label)].iloc[0]
            text = _value_text(row["value"])
            rel = row["relative_difference"]
            if label != labels[0] and rel is not None and not pd.isna(rel):
                text += f" ({rel:+.1%})"
            cells.append(text)
        lines.append(cells)
    widths = [max(len(r[i]) for r in [header, *lines]) for i in range(len(header))]
    out = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                     for i, (c, w) in enumerate(zip(r, widths))).rstrip()
           for r in [header, *lines]]
    out.append("")
    for label in labels[1:]:
        out.append(f"similarity of {label} to {labels[0]}: {comparison.scores[label]:.3f}")
    for note in comparison.notes or []:
        out.append(f"note: {note}")
    return "\n".join(out) + "\n"


def _share(pct):
    return None if pct is None else pct / 100.0


def _relative(kind, a, b):
    if kind not in ("ratio", "fraction") or a is None or b is None or a == 0:
        return None
    return (b - a) / a


def _value_text(value):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, dict):
        top = max(value, key=value.get)
        return f"mode {top} ({value[top]:.0%})"
    if isinstance(value, list):
        return ", ".join(value) or "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return f"{value:,}" if isinstance(value, int) else str(value)

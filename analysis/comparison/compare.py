"""Two or more characterizations side by side, with one similarity score per job.

``compare([a, b, ...])`` takes Characterizations (or anything ``characterize`` accepts: logs,
directories of logs, dlio_mpi run directories) and returns a :class:`Comparison`: a tidy table
(metric, job, value, relative difference to the first job, similarity to the first job, weight)
and, for every job, a similarity score in [0, 1] to the first job.

The score is a weighted mean over a fixed metric set (``METRICS``) of per-metric similarities:

    score(j) = sum_k w_k s_k(j) / sum_k w_k     over the metrics k known for both jobs

with, for the first job's value a and job j's value b:

- "ratio" metrics (counts, bytes, sizes): s = 1 - min(1, |log10(b / a)|), so equal values
  give 1, a factor of 2 gives 0.70, a factor of 10 or more gives 0; s = 1 when both are 0 and
  0 when only one is.
- "share" (the I/O time's share of run time): the ratio similarity of a + 0.01 and b + 0.01,
  so that I/O below about 1 % of the run time counts as none: with opens and closes alone
  (an mmap run, whose reads no tool sees), the times are a few microseconds per call, and a
  call timed around Darshan's wrapper (the op log of a run under Darshan) takes its record
  keeping too, several times the system call's own time. Shares of 0.05 and 0.10 give 0.74,
  of 0.2 and 0.4 0.71.
- "fraction" metrics (values in [0, 1]): s = 1 - |a - b|.
- "order" (the read and write orders, shares in [0, 1]): s = 1 - max(0, |a - b| - noise)
  / ORDER_SPAN: two draws of the same random order differ by a few points, which is no
  difference; a random order moves about half of the reads forward and an order none goes
  back all of them, so the difference is counted over that span (in order against random:
  about 0.1). The noise is ORDER_NOISE, or, for a job of few calls n, twice the spread of the
  difference of two random draws: the share of a random permutation's steps that go up has
  variance about a (1 - a) / 3n (1 / 12n at a half), so noise = 2 sqrt(2 a (1 - a) / 3n)
  (0.12 for 48 reads at a half, under ORDER_NOISE from about 270 reads; none for an order
  that never goes back). n counts the independent draws: the distinct steps between a
  process's consecutive calls of a file (DXT), where fewer than the calls: an order that
  repeats one shuffled list in every window (IOR's -z over segments) is as few draws as
  the list's steps.
- "file_share" (the share of the data files several ranks opened): s = 1 - max(0, |a - b| -
  2 sqrt(a (1 - a) / n)), n the first job's data files: where ranks take files at random
  (a shuffle over epochs), which files end up shared is a draw, whose share varies by that
  binomial spread; none or all shared (a = 0 or 1) has no spread.
- "distribution" (the read-size histogram, normalized to shares of the operations):
  s = 1 - (1/2) sum_bucket |p_a - p_b| (one minus the total-variation distance).
- "set" (the interfaces used): s = |A & B| / |A | B| (Jaccard; 1 when both are empty).

A metric whose value is unknown (None) for either job is left out of that job's score (the
table says so with similarity None), but for the shape of the reads (size, histogram,
sequential and consecutive shares) of a job without a read against one that reads: those are
nothing alike (similarity 0). Identical inputs give 1.0 exactly. Weights favour what
shapes the I/O (bytes, transfer sizes, interfaces) over what depends on the machine and its
noise (I/O time share, rank imbalance).

Layers: Darshan records a call at every layer it went through (H5D, MPI-IO, POSIX); a dlio_mpi
op log observes some files from a higher layer down only (the calls of a collective MPI-IO
read, not the aggregators' POSIX reads beneath; the H5Dread calls through libhdf5's MPI-IO
driver, not libhdf5's metadata reads nor how it splits a selection into MPI-IO calls; see
:mod:`dlio_mpi_analysis.loading.oplog`). Jobs are compared at the highest of the layers their sources observed
(``Comparison.layer``; :mod:`dlio_mpi_analysis.characterization.layers`): each file counts at that layer where the job has
records of it there (else at its highest layer below, such as a checkpoint written through
POSIX), for bytes, calls, files, the size histogram (MPI-IO's and H5D's aggregate size
counters above POSIX), the I/O time (with H5F's at HDF5) and the rank balance. Sequential and
consecutive reads are Darshan counters of POSIX only: above POSIX they cover the files counted
at POSIX (none for a job whose reads are all above it: unknown, left out). ``read_order``,
part of the structure gate, is the share of the data reads that do not go back in their file:
at POSIX from the DXT traces of every job (a read that starts before the previous one's end,
not at the file's start, goes back; left out when a job has no trace: the counters cannot
tell a jump back from a new pass over a file): in order 1, a random sample order about 0.5,
a library's own jumps back alike in a job and its replay; above POSIX the order of the read
calls (:mod:`dlio_mpi_analysis.characterization.read_order`: from the calls' own offsets, or for
collective calls, whose DXT_MPIIO offsets are unknown, from the aggregators' POSIX reads
inside them). In order against shuffled gives about 0.5. ``write_order`` is the order of the writes to the data and checkpoint files, also in the
gate: at POSIX Darshan's sequential writes over writes (writes at random offsets, IOR's -z,
make about half sequential; in order nearly all), above POSIX the same continuity of the
write calls (a collective write's pieces from the aggregators' POSIX writes); unknown for a
job without writes. ``syncs`` counts the fsync and fdatasync calls on the data and checkpoint
files (MPI_File_sync at MPI-IO; none are counted at HDF5), left out when no job synced: a sync
after every write (IOR's -Y) against one a file differs by the writes a file.
``evaluation_phases``, in the gate too, counts the phases in which a second set of data
files (an evaluation set, in a folder of its own) was read apart from the training files (:mod:`dlio_mpi_analysis.characterization.evaluation_phases`, from the DXT_POSIX
traces; 0 for a job without; left out when a job has no trace): a replay that reads a job's
evaluation files as training files falls to the gate. The read start comes
from DXT_MPIIO at MPI-IO and is unknown at HDF5 (Darshan traces no HDF5 calls). Interfaces are
those seen from the layer up: at MPI-IO, the MPI-IO kinds and HDF5; at HDF5, "HDF5" and its
driver by the H5F and H5D counters ("HDF5 through MPI-IO" from H5F_USE_MPIIO, "HDF5 collective"
from H5D_USE_MPIIO_COLLECTIVE), so that a job through another driver or another interface
still falls to the structure gate. A Darshan log against a Darshan log, or any job whose files
were all observed at POSIX, is compared at POSIX.

Data I/O: every metric counts the job's data and checkpoint files only (``Characterization.roles``,
:mod:`dlio_mpi_analysis.characterization.file_roles`): a program's printing to its standard streams, the files the MPI
library makes for itself (Open MPI's session-directory segments and lock tests, ROMIO's shared
file pointer), and a framework's configuration, log and output files are neither data nor an
interface, so that IOR's report on stdout or a training script's YAML and JSON writes do not
part a job from its replay. The characterization reports them apart (``file_roles``).

Reads through mmap are invisible to Darshan; an emulator run's op log leaves them out of its
counters as Darshan does (so an mmap run compares with its Darshan log like for like), and the
comparison's ``notes`` say how many bytes each job left out that way. They also repeat the
loader's note on I/O that Darshan counted under a file through a reused descriptor number,
which the jobs' counters leave out (:mod:`dlio_mpi_analysis.loading.reused_descriptors`).

Structure against volume: the weighted mean is multiplied by a structure gate, the smallest
similarity of the job's shape (``STRUCTURE``: the number of files, the share of files opened
by several ranks, the interfaces, the number of checkpoint files, the read order, the write
order). A job of the right volume but the wrong shape cannot score high:
files shared by every rank where the real job's were each read by one (shared share 1 against
0) give 0; twice the files cap the score at 0.70; one interface of two at 0.5; no checkpoint
where the real job wrote some gives 0; reads or writes in order against random ones about
0.5. The
table's row ``structure_gate`` holds the gate.
"""

import math
import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dlio_mpi.display import tables, units

from dlio_mpi_analysis.characterization.characterize import Characterization, characterize, data_formats
from dlio_mpi_analysis.characterization.counters import SIZE_BUCKETS, counter_sum, counter_totals, \
    opened_alone
from dlio_mpi_analysis.characterization.data_io import data_parts
from dlio_mpi_analysis.characterization.layers import dataset_file, job_layer, parts_at
from dlio_mpi_analysis.characterization.layers import rank as layer_rank
from dlio_mpi_analysis.characterization.module_metrics import file_counts, io_time, rank_balance
from dlio_mpi_analysis.loading.oplog import MMAP_MARK
from dlio_mpi_analysis.characterization.evaluation_phases import evaluation_phases
from dlio_mpi_analysis.characterization.read_order import read_order, reads_per_h5dread, \
    write_order
from dlio_mpi_analysis.loading.reused_descriptors import NOTE_MARK as REUSED_NOTE, stray_posix
from dlio_mpi_analysis.loading.trace_ops import READ_OP, WRITE_OP

# (metric, kind, weight, description)
METRICS = (
    ("ranks", "ratio", 0.5, "processes"),
    ("bytes_read", "ratio", 2.0, "bytes read from the data files (POSIX + STDIO, at the layer "
     "compared)"),
    ("bytes_written", "ratio", 1.0, "bytes written to the data and checkpoint files (POSIX + "
     "STDIO, at the layer compared)"),
    ("read_ops", "ratio", 1.0, "read calls to the data files (POSIX + STDIO, at the layer "
     "compared)"),
    ("write_ops", "ratio", 0.5, "write calls to the data and checkpoint files (POSIX + STDIO, "
     "at the layer compared)"),
    ("files", "ratio", 1.0, "data and checkpoint files that moved bytes (at the layer "
     "compared; not code, configuration, logs, standard streams, the MPI library's or the "
     "tools' own files)"),
    ("shared_file_fraction", "file_share", 1.0, "share of the data files opened by several "
     "ranks"),
    ("mean_read_size", "ratio", 2.0, "bytes read / read calls"),
    ("read_size_histogram", "distribution", 2.0, "read sizes at the layer compared, Darshan "
     "buckets"),
    ("sequential_read_fraction", "fraction", 1.0, "POSIX sequential reads / reads (of the "
     "files counted at POSIX)"),
    ("consecutive_read_fraction", "fraction", 1.0, "POSIX consecutive reads / reads (of "
     "the files counted at POSIX)"),
    ("early_read_fraction", "fraction", 1.0,
     "data bytes read in the first 10% of run time (DXT: POSIX, else STDIO, else MPI-IO)"),
    ("io_time_share", "share", 0.5, "slowest rank's I/O time / run time"),
    ("rank_imbalance", "ratio", 0.5, "max / mean bytes per rank (POSIX, else STDIO; unknown "
     "when most bytes are in records Darshan reduced over the ranks, files every rank opened)"),
    ("interfaces", "set", 2.0, "interfaces used for the data and checkpoint files"),
    ("checkpoint_files", "ratio", 0.5, "checkpoint files written (dlio_mpi_analysis.characterization.file_roles: "
     "data-like names written and never read)"),
    ("read_order", "order", 1.0, "share of the data reads that do not go back: at POSIX "
     "from the jobs' DXT traces (left out without); above POSIX the read "
     "calls that move their lane of the file forward (dlio_mpi_analysis.characterization.read_order)"),
    ("write_order", "order", 1.0, "share of the writes to the data and checkpoint files "
     "that move forward: POSIX sequential writes / writes at POSIX, above it the write calls' "
     "continuity (dlio_mpi_analysis.characterization.read_order.write_order)"),
    ("syncs", "ratio", 0.5, "fsync/fdatasync (MPI_File_sync above POSIX) calls on the data and "
     "checkpoint files, at the layer compared; left out when neither job synced"),
    ("evaluation_phases", "ratio", 0.5, "phases in which a second set of data files (an "
     "evaluation set) was read apart from the training files, from the DXT_POSIX traces "
     "(dlio_mpi_analysis.characterization.evaluation_phases; left out without)"),
)
# what each metric's value counts, for the text table (sizes shown in binary units)
METRIC_UNITS = {
    "ranks": "processes", "bytes_read": "bytes", "bytes_written": "bytes", "read_ops": "calls",
    "write_ops": "calls", "files": "files", "shared_file_fraction": "share of files",
    "mean_read_size": "bytes", "read_size_histogram": "commonest bucket (share of calls)",
    "sequential_read_fraction": "share of reads", "consecutive_read_fraction": "share of reads",
    "early_read_fraction": "share of bytes read", "io_time_share": "share of run time",
    "rank_imbalance": "max / mean", "interfaces": "names", "checkpoint_files": "files",
    "read_order": "share of read calls", "write_order": "share of writes",
    "syncs": "calls", "evaluation_phases": "phases",
}
SIZE_METRICS = ("bytes_read", "bytes_written", "mean_read_size")
COSTS_LISTED = 3    # the metrics that cost a job the most score, named under the table
# the traces early_read_fraction is taken from, by the layer compared (none of HDF5)
DXT_PREFERENCE = {"POSIX": ("DXT_POSIX", "DXT_STDIO", "DXT_MPIIO"), "MPI-IO": ("DXT_MPIIO",),
                  "HDF5": ()}
STRUCTURE = ("files", "shared_file_fraction", "interfaces", "checkpoint_files",
             "read_order", "write_order", "evaluation_phases")
# the shape of a job's reads: unknown for a job without a read, and then nothing like the
# other job's when that one reads (similarity 0, not left out)
READ_SHAPE = ("mean_read_size", "read_size_histogram", "sequential_read_fraction",
              "consecutive_read_fraction")
# the difference of two orders' shares taken as none: a random order's share over a few hundred
# calls varies by a few points (a binomial's standard deviation, 0.031 for 256 calls)
ORDER_NOISE = 0.05
# the calls each order metric is a share of
ORDER_CALLS = {"read_order": "read_draws", "write_order": "write_draws"}
ORDER_SPAN = 0.5        # between a random order's share (about a half) and in order (1)
# added to both shares of run time before their ratio (module docstring)
SHARE_FLOOR = 0.01


@dataclass
class Comparison:
    """The result of :func:`compare`. ``table``: one row per (metric, job) with columns metric,
    job, value, relative_difference ((b - a) / a for numbers, None when a = 0 or not a
    number), similarity (to the first job; None when left out) and weight. ``scores``: job
    label -> similarity score to the first job (1.0 for the first)."""

    labels: list
    table: pd.DataFrame
    scores: dict
    notes: list = None      # "label: note" for what a job's counters leave out (mmap reads,
    # a reused descriptor's I/O)
    layer: str = "POSIX"    # the layer the jobs' files are counted at (module docstring)

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
        return {"labels": list(self.labels), "scores": dict(self.scores), "layer": self.layer,
                "notes": list(self.notes or []),
                "metrics": [{"metric": m, "kind": k, "weight": w, "description": d}
                            for m, k, w, d in METRICS],
                "table": rows.to_dict(orient="records")}


def comparison_layer(chars):
    """The layer jobs are compared at: the highest of the layers their sources observed their
    files from (module docstring, :mod:`dlio_mpi_analysis.characterization.layers`)."""
    return max((job_layer(c.layers) for c in chars), key=layer_rank, default="POSIX")


def profile(c, layer="POSIX"):
    """The values of METRICS for one Characterization (None where unknown), its files counted
    at ``layer`` (see :func:`dlio_mpi_analysis.characterization.layers.parts_at`)."""
    parts, time_parts = parts_at(c.records, c.names, c.layers, layer)
    # the job's data I/O alone: not its standard streams, the MPI library's own files, nor
    # its configuration, log and output files (dlio_mpi_analysis.characterization.file_roles)
    parts, time_parts = data_parts(parts, c.roles), data_parts(time_parts, c.roles)
    if any(w.startswith(REUSED_NOTE) for w in c.warnings):
        parts, time_parts = _without_stray(parts), _without_stray(time_parts)
    reads = sum(counter_sum(f, spec.ops["reads"]) for spec, f in parts if "reads" in spec.ops)
    writes = sum(counter_sum(f, spec.ops["writes"]) for spec, f in parts if "writes" in spec.ops)
    syncs = sum(counter_sum(f, spec.ops["syncs"]) for spec, f in parts if "syncs" in spec.ops)
    bytes_read = sum(counter_sum(f, [spec.bytes_read]) for spec, f in parts)
    formats = data_formats(c.roles, c.names, c.records, parts)
    files = file_counts(parts)
    sized = [counter_totals(f, spec.size_counters("read")) for spec, f in parts
             if spec.size_counters("read")]
    histogram = None
    if sized and sum(map(sum, sized)):
        counts = [sum(column) for column in zip(*sized)]
        histogram = {b: n / sum(counts) for b, n in zip(SIZE_BUCKETS, counts)}
    posix = [(spec, f) for spec, f in parts if spec.name == "POSIX"]
    posix_reads = sum(counter_sum(f, spec.ops["reads"]) for spec, f in posix)
    balanced = next((b for spec, f in parts
                     if (b := rank_balance(spec, f, c.nprocs)) is not None), None)
    traces = c.data.dxt if c.data is not None else c.dxt
    early = next((traces[name].early_read_fraction for name in DXT_PREFERENCE[layer]
                  if name in traces and traces[name].early_read_fraction is not None), None)
    return {
        "ranks": c.nprocs,
        "bytes_read": bytes_read,
        "bytes_written": sum(counter_sum(f, [spec.bytes_written]) for spec, f in parts),
        "read_ops": reads,
        "write_ops": writes,
        "files": sum(v["files"] for v in formats.values()) if formats else files.total,
        "shared_file_fraction": _shared_fraction(formats, files),
        "mean_read_size": bytes_read / reads if reads else None,
        "read_size_histogram": histogram,
        "sequential_read_fraction": _fraction(posix, "seq_reads", posix_reads),
        "consecutive_read_fraction": _fraction(posix, "consec_reads", posix_reads),
        "early_read_fraction": early,
        "io_time_share": io_time(time_parts, c.nprocs, c.run_time).slowest_rank_share,
        "rank_imbalance": balanced.max_bytes / balanced.mean_bytes
        if balanced is not None and balanced.mean_bytes > 0
        and balanced.shared_bytes <= balanced.mean_bytes * balanced.ranks else None,
        "interfaces": sorted(_moved_data(interfaces_at(c, layer), parts)),
        "checkpoint_files": _checkpoint_files(parts, c.roles),
        "read_order": _posix_read_order(posix, c.dxt_segments) if layer == "POSIX" else read_order(
            c.dxt_segments, layer, {int(i) for _, f in parts for i in f["id"]}, c.names,
            reads_per_h5dread(c.dxt_segments, c.records, c.names,
                              {int(i) for _, f in parts for i in f["id"]})
            if layer == "HDF5" else None),
        "write_order": _posix_write_order(posix) if layer == "POSIX" else write_order(
            c.dxt_segments, layer, {int(i) for _, f in parts for i in f["id"]}, c.names),
        "syncs": syncs,
        "evaluation_phases": _evaluation_phases(c, parts),
        # the calls an order's share is of, as independent draws (the order metrics' noise)
        "read_draws": _draws(posix, c.dxt_segments, READ_OP, reads),
        "write_draws": _draws(posix, c.dxt_segments, WRITE_OP, writes),
    }


def _without_stray(parts):
    """The parts without the POSIX records of files C stdio read whose POSIX I/O is another
    descriptor's (reused_descriptors.stray_posix: counted under them through a reused
    number, a worker's pipe; the loader's note says so), not the files'."""
    def moved(name):
        """File id -> (bytes, calls) of module ``name``'s parts."""
        out = {}
        for spec, frame in parts:
            if spec.name != name or frame.empty:
                continue
            ids, at = np.unique(np.asarray(frame["id"]).astype(np.uint64), return_inverse=True)
            totals = []
            for columns in ([spec.bytes_read, spec.bytes_written],
                            [c for key in ("reads", "writes") for c in spec.ops.get(key, ())]):
                sums = np.zeros(len(ids), np.int64)
                for c in columns:
                    if c in frame:
                        np.add.at(sums, at, np.maximum(np.asarray(frame[c], np.int64), 0))
                totals.append(sums)
            for i, b, n in zip(ids.tolist(), totals[0].tolist(), totals[1].tolist()):
                old = out.get(i, (0, 0))
                out[i] = (old[0] + b, old[1] + n)
        return out
    stdio, posix = moved("STDIO"), moved("POSIX")
    stray = {i for i, (b, n) in posix.items() if stray_posix(b, n, *stdio.get(i, (0, 0)))}
    if not stray:
        return parts
    ids = np.array(sorted(stray), dtype=np.uint64)
    return [(spec, frame[~np.isin(np.asarray(frame["id"]).astype(np.uint64), ids)])
            if spec.name == "POSIX" and not frame.empty else (spec, frame)
            for spec, frame in parts]


def _moved_data(interfaces, parts):
    """The interfaces without POSIX or STDIO when that module moved no byte of the data and
    checkpoint files (numpy.fromfile opens a file and seeks through POSIX, and reads it
    through C stdio: an interface the job read nothing through is none of its data's)."""
    moved = {spec.name for spec, f in parts
             if counter_sum(f, [spec.bytes_read]) + counter_sum(f, [spec.bytes_written]) > 0}
    return [i for i in interfaces if i not in ("POSIX", "STDIO") or i in moved]


def _posix_read_order(posix, segments=None):
    """The share of the POSIX reads of the data files that do not go back in their file, from
    the DXT_POSIX trace (each process's and file's reads in time order): a read goes back when
    it starts before the previous one's end, except at the file's start or where the
    process's reads of the file began (a new pass: an epoch, another load of the file, a
    Parquet file's footer read again). In order 1; a random order about half; a library's own
    jumps back (a zip's directory before its member) the same in a job and its replay; how the
    passes are spread over processes (a data loader's workers, new every epoch) does not
    count. None without a trace of the data reads (Darshan's counters cannot tell a jump
    back from a new pass over a file that another process, or another open, makes)."""
    ids = {int(i) for _, f in posix for i in f["id"]}
    trace = (segments or {}).get("DXT_POSIX")
    if trace is None:
        return None
    trace = trace[(trace["op"] == READ_OP)
                  & np.isin(trace["id"], np.array(sorted(ids), dtype=np.uint64))]
    if trace.empty:
        return None
    keys = ["process", "rank", "id"] if "process" in trace else ["rank", "id"]
    trace = trace.sorted_by(*keys, "start")
    off = trace["offset"]
    end = off + trace["length"]
    same = np.ones(len(trace), bool)
    for k in keys:
        col = trace[k]
        same[1:] &= col[1:] == col[:-1]
    same[0] = False
    # a new pass starts at the file's start, or where the process's reads of the file began
    # (a Parquet file's footer, read first at each open)
    group = np.cumsum(~same) - 1
    began = off[np.flatnonzero(~same)][group]
    back = same[1:] & (off[1:] < end[:-1]) & (off[1:] != 0) & (off[1:] != began[1:])
    return 1.0 - int(back.sum()) / len(trace)


def _draws(posix, segments, op, calls):
    """How many of ``calls`` (the job's reads or writes) are independent draws of their order:
    the distinct steps (offset differences) between a process's consecutive calls of a file
    in the DXT_POSIX trace, when fewer than the calls. A step repeated is no new draw: an
    order that repeats one shuffled list window by window (IOR's -z over segments) has as
    many draws as the list's steps, and two draws of it differ as much as two draws of that
    few calls. ``calls`` without a trace."""
    ids = {int(i) for _, f in posix for i in f["id"]}
    trace = (segments or {}).get("DXT_POSIX")
    if trace is None or not calls:
        return calls
    trace = trace[(trace["op"] == op)
                  & np.isin(trace["id"], np.array(sorted(ids), dtype=np.uint64))]
    if len(trace) < 2:
        return calls
    keys = ["process", "rank", "id"] if "process" in trace else ["rank", "id"]
    trace = trace.sorted_by(*keys, "start")
    same = np.ones(len(trace), bool)
    for k in keys:
        col = trace[k]
        same[1:] &= col[1:] == col[:-1]
    same[0] = False
    off = trace["offset"]
    steps = np.stack([np.asarray(trace[k], np.int64)[1:] for k in keys]
                     + [off[1:] - off[:-1]], axis=1)[same[1:]]
    distinct = len(np.unique(steps, axis=0)) if len(steps) else 0
    return max(1, min(calls, distinct + int((~same).sum())))


def _evaluation_phases(c, parts):
    """The evaluation phases of a job (dlio_mpi_analysis.characterization.evaluation_phases)
    from its DXT_POSIX reads of the data files it did not write: 0 without any, None without
    a trace."""
    trace = (c.dxt_segments or {}).get("DXT_POSIX")
    if trace is None:
        return None
    # the data files the job read without writing them: a checkpoint read back, or a file
    # it wrote and read back, is no evaluation set
    ids = {int(i) for _, f in parts for i in f["id"] if c.roles.get(int(i), "data") == "data"}
    ids -= {int(i) for spec, f in parts if spec.bytes_written in f
            for i, w in zip(f["id"], f[spec.bytes_written]) if w > 0}
    reads = trace[(trace["op"] == READ_OP)
                  & np.isin(trace["id"], np.array(sorted(ids), dtype=np.uint64))]
    if reads.empty:
        return None
    found = evaluation_phases(reads, c.names)
    return found["phases"] if found else 0


def _posix_write_order(posix):
    """Darshan's sequential writes over the writes of the POSIX parts (None without
    writes)."""
    writes = sum(counter_sum(f, spec.ops["writes"]) for spec, f in posix)
    return _fraction(posix, "seq_writes", writes)


def _checkpoint_files(parts, roles):
    """The checkpoint files (dlio_mpi_analysis.characterization.file_roles) the parts wrote bytes to."""
    ids = set()
    for spec, frame in parts:
        if frame.empty:
            continue
        wrote = frame[frame[spec.bytes_written] > 0]["id"].tolist()
        ids.update(int(i) for i in wrote if roles.get(int(i)) == "checkpoint")
    return len(ids)


def interfaces_at(c, layer):
    """The interfaces of a job seen from ``layer`` up: all at POSIX; MPI-IO's and HDF5 at
    MPI-IO; at HDF5, "HDF5" with its driver as the H5F and H5D records say it ("HDF5 through
    MPI-IO" by H5F_USE_MPIIO, "HDF5 collective" by H5D_USE_MPIIO_COLLECTIVE on a file more
    than one process opened)."""
    if layer == "POSIX":
        return list(c.interfaces)
    if layer == "MPI-IO":
        return [i for i in c.interfaces if i.startswith("MPI-IO") or i == "HDF5"]
    used = ["HDF5"] if "HDF5" in c.interfaces else []
    # a collective transfer on a file its process opened alone (MPI_COMM_SELF: IOR's -F -c)
    # is independent I/O, as at MPI-IO (counters.alone_collectives)
    alone = {c.names.get(i, "") for i in opened_alone(c.records.get("MPI-IO"))}
    for module, counter, label in (("H5F", "H5F_USE_MPIIO", "HDF5 through MPI-IO"),
                                   ("H5D", "H5D_USE_MPIIO_COLLECTIVE", "HDF5 collective")):
        frame = c.records.get(module)
        if frame is None or frame.empty:
            continue
        if module == "H5D" and alone:
            frame = frame[[dataset_file(c.names.get(int(i), "")) not in alone
                           for i in frame["id"]]]
        if not frame.empty and int(frame[counter].max()) > 0:
            used.append(label)
    return used


def _fraction(parts, counter, total):
    """A POSIX counter summed over parts, over ``total`` (None without operations)."""
    if not total:
        return None
    return sum(counter_sum(f, [getattr(spec, counter)]) for spec, f in parts) / total


def _shared_fraction(formats, files):
    """Shared data files over data files (files that moved bytes, not the tools' own), else
    over all files."""
    n = sum(v["files"] for v in formats.values()) if formats else 0
    if n:
        return sum(v.get("shared_files", 0) for v in formats.values()) / n
    return files.shared / files.total if files.total else None


def similarity(kind, a, b, files=None, calls=None):
    """The similarity in [0, 1] of two values of a metric of ``kind`` (see the module
    docstring); None when either is None. ``files``: the first job's data files (the
    "file_share" kind's spread); ``calls``: the first job's calls the share is of (the
    "order" kind's spread)."""
    if a is None or b is None:
        return None
    if kind == "ratio":
        if a == b:
            return 1.0
        if a <= 0 or b <= 0:
            return 0.0
        return 1.0 - min(1.0, abs(math.log10(b / a)))
    if kind == "share":
        return similarity("ratio", a + SHARE_FLOOR, b + SHARE_FLOOR)
    if kind == "fraction":
        return 1.0 - min(1.0, abs(a - b))
    if kind == "order":
        noise = ORDER_NOISE
        if calls:
            noise = max(noise, 2 * math.sqrt(2 * a * (1 - a) / (3 * calls)))
        return 1.0 - min(1.0, max(0.0, abs(a - b) - noise) / ORDER_SPAN)
    if kind == "file_share":
        noise = 2 * math.sqrt(a * (1 - a) / files) if files else 0.0
        return 1.0 - min(1.0, max(0.0, abs(a - b) - noise))
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
    layer = comparison_layer(chars)
    profiles = [profile(c, layer) for c in chars]
    if layer == "POSIX" and any(p["read_order"] is None for p in profiles):
        for p in profiles:      # like for like: from every job's trace, or left out
            p["read_order"] = None
    if not any(p["syncs"] for p in profiles):
        for p in profiles:      # no job synced: nothing of the kind to compare
            p["syncs"] = None
    rows, scores = [], {}
    for j, (label, values) in enumerate(zip(labels, profiles)):
        weighted = total = 0.0
        gate = 1.0
        for metric, kind, weight, _ in METRICS:
            a, b = profiles[0][metric], values[metric]
            calls = profiles[0][ORDER_CALLS[metric]] if metric in ORDER_CALLS else None
            s = similarity(kind, a, b, profiles[0]["files"], calls)
            if s is None and metric in READ_SHAPE and _reads_one_side(profiles[0], values):
                s = 0.0
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
             if MMAP_MARK in w or w.startswith(REUSED_NOTE)]
    return Comparison(labels=labels, table=pd.DataFrame(rows), scores=scores, notes=notes,
                      layer=layer)


def _reads_one_side(a, b):
    """True when one of two profiles read and the other did not (READ_SHAPE)."""
    ops = (a["read_ops"], b["read_ops"])
    return None not in ops and (ops[0] > 0) != (ops[1] > 0)


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


def score_costs(comparison, label):
    """What kept job ``label``'s score below 1: (metric, cost) for every metric whose
    similarity is below 1, costliest first, a cost being the points of the weighted mean it
    took, w_k (1 - s_k) / sum w; and (metric, gate) of the structure metric that set the gate,
    or None when the gate is 1."""
    rows = comparison.table[comparison.table["job"] == label].set_index("metric")
    known = [(m, w) for m, _, w, _ in METRICS if not pd.isna(rows.loc[m, "similarity"])]
    total = sum(w for _, w in known)
    costs = [(m, w * (1.0 - float(rows.loc[m, "similarity"])) / total) for m, w in known]
    costs = sorted([c for c in costs if c[1] > 0], key=lambda c: -c[1])
    gate = rows.loc["structure_gate", "similarity"]
    setter = None
    if not pd.isna(gate) and gate < 1:
        setter = min(((m, float(rows.loc[m, "similarity"])) for m in STRUCTURE
                      if not pd.isna(rows.loc[m, "similarity"])), key=lambda g: g[1])
    return costs, setter


def render_comparison(comparison):
    """A plain-text table: one row per metric with its unit, one column per job (with the
    relative difference to the first job for numbers), then the scores, each with the metrics
    that cost it the most and the structure metric that gated it."""
    labels = comparison.labels
    table = comparison.table
    header = ["metric", "unit", *labels]
    lines = []
    for metric, _, weight, _ in METRICS:
        cells = [f"{metric} (w {weight:g})", METRIC_UNITS[metric]]
        for label in labels:
            row = table[(table["metric"] == metric) & (table["job"] == label)].iloc[0]
            text = _value_text(row["value"], metric)
            rel = row["relative_difference"]
            if label != labels[0] and rel is not None and not pd.isna(rel):
                text += f" ({rel:+.1%})"
            cells.append(text)
        lines.append(cells)
    out = tables.table(lines, header, align="llr")
    out.append("")
    for label in labels[1:]:
        out.append(f"similarity of {label} to {labels[0]}: {comparison.scores[label]:.3f}")
        costs, gate = score_costs(comparison, label)
        if costs:
            out.append("  cost most: " + ", ".join(f"{m} -{c:.3f}"
                                                   for m, c in costs[:COSTS_LISTED]))
        if gate is not None:
            out.append(f"  structure gate: {gate[1]:.3f}, set by {gate[0]} (the score is the "
                       "weighted mean times the gate)")
    if comparison.layer != "POSIX":
        out.append(f"counted at: {comparison.layer} (the layer every job observed)")
    for note in comparison.notes or []:
        out.append(f"note: {note}")
    return "\n".join(out) + "\n"


def _share(pct):
    return None if pct is None else pct / 100.0


def _relative(kind, a, b):
    if kind not in ("ratio", "share", "fraction") or a is None or b is None or a == 0:
        return None
    return (b - a) / a


def _value_text(value, metric=None):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if metric in SIZE_METRICS:
        return units.size(round(value))
    if isinstance(value, dict):
        top = max(value, key=value.get)
        return f"mode {top} ({value[top]:.0%})"
    if isinstance(value, list):
        return ", ".join(value) or "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return f"{value:,}" if isinstance(value, int) else str(value)

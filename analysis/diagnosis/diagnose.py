"""Diagnosis of a job's I/O: what slows its training down, with the evidence, and the workload
changes that could remove each cause (to be measured, never predicted: dlio_mpi.advise).

``diagnose(char, workload, summary=None)`` takes a :class:`~dlio_mpi_analysis.characterization.characterize.
Characterization` (of a Darshan log or of a dlio_mpi run's op log), the workload the job runs
as (section -> key -> value, as dlio_mpi.config.loader and dlio_mpi_analysis.fitting.fit write it) and, for an emulator
run, its summary.json (epochs' I/O wait and compute, checkpoints, facts). It returns
:class:`Finding` objects, most severe first. Each finding names its evidence (the counter or
share, its value and the threshold it crossed) and its candidate changes, each a partial
workload (section -> key -> value) that keeps the samples the job reads per epoch.

Severity is the share of the training time a finding puts at stake, a rough upper bound of
what removing its cause could save, used only to order the findings and to choose what to
measure first when the budget is short:

- small_reads: the I/O share of training time, scaled by how far the median read (or, where
  the op log sees only H5Dread calls above the MPI-IO driver, the HDF5 chunk) is below
  SMALL_READ_BYTES (log scale, at least a quarter, at most 1);
- misaligned_direct: the I/O share, times the bytes widened over the bytes asked;
- misaligned (a Darshan log's POSIX_FILE_NOT_ALIGNED): the I/O share, times the share of
  accesses off the file alignment, halved;
- beyond_page_cache: the I/O share, a quarter of it;
- random_access: the I/O share, times the share of reads that are not sequential, halved;
- many_small_files, metadata_heavy: the I/O share, times opens per read (at most 1), reads
  being the application's (H5Dread calls where libhdf5 is used, else POSIX and STDIO reads);
- shared_independent: the I/O share, halved;
- rank_imbalance: the I/O share, times 1 - mean/max bytes per rank (only for jobs writing
  less than a tenth of what they read: the balance counts writes too);
- no_overlap: the smaller of the I/O-wait share and the compute share of an epoch (what
  overlapping the two could hide at most);
- checkpoint_stalls: checkpoints' share of the run time;
- compression: the I/O share of a job reading compressed data, halved.
"""

from dlio_mpi_analysis.diagnosis.diagnose_log import log_findings
from dlio_mpi_analysis.diagnosis.diagnose_reads import (_beyond_page_cache, _larger_reads, _many_small_files, _metadata_heavy,
                             _misaligned, _misaligned_direct, _random_access, _small_reads)
from dlio_mpi_analysis.diagnosis.diagnose_run import (_checkpoint_stalls, _compression, _no_overlap, _rank_imbalance,
                           _shared_independent)
from dlio_mpi_analysis.diagnosis.finding_kinds import KINDS, Thresholds
from dlio_mpi_analysis.diagnosis.findings import (CHECKPOINT_SHARE, IMBALANCE, IO_WAIT_SHARE, MANY_FILES,
                       MIN_READS, MISALIGNED_PCT, OPENS_PER_READ, RANDOM_SEQ_PCT,
                       SMALL_FILE_BYTES, SMALL_READ_BYTES, Finding, _Job)

__all__ = ["diagnose", "Finding", "RULES", "KINDS", "Thresholds", "CHECKPOINT_SHARE",
           "IMBALANCE", "IO_WAIT_SHARE", "MANY_FILES", "MIN_READS", "MISALIGNED_PCT",
           "OPENS_PER_READ", "RANDOM_SEQ_PCT", "SMALL_FILE_BYTES", "SMALL_READ_BYTES"]


def diagnose(char, workload=None, summary=None, read_ahead=None, thresholds=None, log=None):
    """The findings of a job, most severe first (see the module docstring): the log's counter
    rules (dlio_mpi_analysis.diagnosis.diagnose_log, with ``thresholds``, default :class:`Thresholds`, and
    ``log``, the DarshanJob the characterization was made of, if at hand) and the workload's
    rules, one finding per kind. Where
    both find a kind, the workload rule's finding is kept (its changes are what advise
    measures) with the files and ranks the counters name. ``workload`` should hold every key
    (a key it lacks counts as unset; None: nothing known of it); ``read_ahead``: the
    interfaces whose reads read threads can run ahead (None: all)."""
    job = _Job(char, workload or {}, summary)
    job.read_ahead = read_ahead
    by_kind = {f.key: f for f in log_findings(char, thresholds or Thresholds(), log)}
    for f in (rule(job) for rule in RULES):
        if f is None:
            continue
        seen = by_kind.get(f.key)
        if seen is not None:
            f.files = f.files or seen.files
            f.ranks = f.ranks or seen.ranks
            f.severity = max(f.severity, seen.severity)
        by_kind[f.key] = f
    if workload:
        for f in by_kind.values():
            if not f.changes:
                f.changes = _changes_for(f.key, job)
    return sorted(by_kind.values(), key=lambda f: (-f.severity, f.key))


RULES = (_small_reads, _misaligned_direct, _misaligned, _beyond_page_cache, _random_access,
         _many_small_files, _metadata_heavy, _shared_independent, _rank_imbalance, _no_overlap,
         _checkpoint_stalls, _compression)


def _changes_for(key, job):
    """The changes of a kind only the log's rules found, from the workload (see
    dlio_mpi_analysis.diagnosis.finding_kinds for what each kind's change is)."""
    changes = {}
    if key in ("small_reads", "small_reads_shared"):
        changes = _larger_reads(job, job.size("dataset", "record_length", 0))
    elif key == "samples_in_pieces" and job.size("reader", "transfer_size", 262144):
        changes["a sample per read (transfer size 0)"] = {"reader": {"transfer_size": 0}}
    elif key == "shuffle_defeats_readahead" and \
            job.get("reader", "sample_shuffle", "off") != "off":
        changes["shuffle files, not samples"] = {"reader": {"sample_shuffle": "off",
                                                            "file_shuffle": "seed"}}
    elif key == "stdio_heavy" and job.get("io", "interface", "posix") == "stdio":
        changes["POSIX reads"] = {"io": {"interface": "posix"}}
    return changes

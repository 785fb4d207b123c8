"""A dlio_mpi workload fitted to a real job's I/O: ``fit(source)`` returns a :class:`Fit` whose
``to_yaml()`` loads with ``python -m dlio_mpi run --config FILE``.

``source`` is a Darshan log (best with DXT), a directory of one job's logs, or a dlio_mpi run
directory. Each value is derived as follows (the thresholds are the constants below and in
:mod:`dlio_mpi_analysis.fitting.fit_measures`, which takes the measurements):

- Data files: files read (POSIX, else STDIO, else MPI-IO records) whose role is data
  (:mod:`dlio_mpi_analysis.characterization.file_roles`, the classification characterize and compare use: not code,
  configuration, logs, standard streams nor the MPI library's own files), of the format that
  reads the most bytes.
- ``dataset.format``: that format, from the file names (.h5/.hdf5 or H5F records: hdf5;
  .tfrecord, .npz, .npy, .csv; else raw).
- Index files: data files each of whose opens read it whole in one read, together under
  INDEX_SHARE of the bytes read, beside larger files read piece by piece (the DLIO benchmark's
  indexed_binary .off.idx and .sz.idx, read once by each rank), are left out of the data (a
  note names them). When they are that pair beside each raw data file, ``dataset.format`` is
  indexed_binary: the emulator writes the pair beside each file and reads it as DLIO does.
- Checkpoint-only jobs: when every file read was written by the job before and is the size of
  a checkpoint file it wrote and never read (dlio_mpi_analysis.fitting.fit_checkpoints.read_back),
  there are no data: workflow.train false, the checkpoints written and read back
  (dlio_mpi_analysis.fitting.fit_checkpoints.checkpoint_only). A job that read no data file
  and wrote files of data-like names (a checkpoint-only run that reads none back, an IOR write
  phase) is one too, with no checkpoint read back.
- File size: the highest byte read + 1, over the file's records.
- ``io.layout``: "multi" unless files read by several ranks receive more than SHARED_SHARE of the
  data bytes and there are fewer data files than ranks (many files each read by several ranks
  are a multi-file dataset read in shuffled order); then "replicated" when the input is read at
  start and every rank read at least REPLICATED_COVERAGE of the file, else "shared". The
  emulator's shared layouts hold one file: several shared files are fitted as one file of
  their total size (a note says so).
- ``dataset.num_files_train``: the number of data files (1 for a shared layout).
- ``reader.transfer_size``: the read size that moves the most bytes (from DXT reads of the data
  files, else Darshan's ACCESS1..4 common-size counters, else the mean read size); 0 (whole
  samples) when that size moves less than DOMINANT_SHARE of the bytes.
- ``dataset.record_length`` (a sample): the median length of runs of consecutive reads in the
  DXT trace (a sample read in transfer-size pieces is one run; a pause of STEP_GAP ends a run),
  less the format's framing (TFRecord 16 B, NPZ member header 128 B), at least the transfer size
  and at most the file size; without DXT, or with the input read at start, the transfer size.
  Samples read in file order cannot be told apart by their I/O: when ONE_SIZE of the reads
  are of one size and a file's consecutive reads run on across the steps' pauses (a file's
  samples read in order, a batch at a time), a read is a sample, as loaders read records;
  otherwise a step's consecutive samples are fitted as one sample per step. When no read size moves DOMINANT_SHARE of the bytes
  and those runs differ in size by more than SIZE_SPREAD (relative standard deviation), the
  samples are of varied sizes (documents read by index): ``dataset.record_length`` is the runs'
  mean and ``dataset.record_length_stdev`` their standard deviation.
  ``dataset.num_samples_per_file``: file size / record size, at least 1.
- ``io.read_type``: "memory" when the DXT trace says the input is read at start (at least 80% of
  the bytes in the first 10% of the run, or one busy burst of reads and then none; see
  dxt_metrics), or without DXT when that share of the bytes is in records whose reads ended in
  the first 10% of the run, and the reads go forward (``reader.sample_shuffle`` off: a load at
  start reads each file front to back; a burst of reads at random offsets, IOR's -z, is
  samples read on demand in a shuffled order); else "on_demand".
- ``reader.sample_shuffle``: "off" when the forward share of jumps is at least FORWARD_SHARE,
  else "seed" (for HDF5 with a trace, over the reads of the dominant size only: libhdf5's
  metadata reads are no sample order). With Darshan's counters over the data records (N reads, S sequential,
  C consecutive, R records that read): jumps are the N - C - R reads that are neither
  consecutive nor a record's first; backward ones are N - S - R; forward share = 1 - backward /
  jumps (1 without jumps). Sequential reading scores 1, random sample order about 0.5.
- ``reader.shuffle_scope``: "rank" when the samples are shuffled (read on demand, by
  samples) and each rank read a share of its own: every data file read by one rank, or, in one
  shared file with a DXT trace, each rank's samples one contiguous block no other rank read
  (IOR's -z, a loader shuffling its own shard); else the default (global).
- ``io.interface``: MPI-IO collective reads: mpiio_coll (hdf5_coll with HDF5); MPI-IO
  independent: mpiio (hdf5); HDF5 without MPI-IO, or an hdf5 format: hdf5_sec2; STDIO moving
  most of the data bytes: stdio; else posix. Collective I/O needs a shared layout: with "multi"
  it is fitted as independent.
- From the DXT timeline of each rank's data reads (when there is one and the input is read on
  demand): busy periods are the union of the reads' intervals; gaps of at least STEP_GAP seconds
  between them are steps. ``train.computation_time``: the median step gap (0 with fewer than 2
  step gaps per rank); ``reader.batch_size``: the records a rank read between two step gaps,
  median over its steps, then over ranks, rounded; ``reader.read_threads``: the 95th
  percentile of the number of a rank's reads in flight when one starts (median over ranks),
  when at least 2 (else 0: the rank reads in its training loop). When the pauses fall in two
  groups (a loader's pauses between the files of a step,
  and the step's compute, STEP_GAP_RATIO apart or more), only the long ones are steps.
- ``train.epochs``: data bytes read / (dataset bytes), rounded, at least 1 (1 when read at
  start). A job that read under PARTIAL_SHARE of the files' bytes by samples on demand read a
  part of them once (a strided selection of each dataset, a run stopped early): one epoch of
  ``train.total_training_steps`` steps, the samples read per rank over the batch size.
- ``io.write_first``: when the job wrote at least WRITTEN_SHARE of its raw or HDF5 data files'
  bytes, each file's first write before its first read (a write-then-read benchmark such as
  IOR, its POSIX, MPI-IO or HDF5 backend); ``io.write_fsync`` when it synced them,
  ``io.write_fsync_per_write`` (raw files) when the syncs were PER_WRITE_SYNCS of the writes
  or more (IOR's -Y);
  ``io.write_order: shuffled`` (raw files) when the writes after a file's first were under
  SHUFFLED_SEQ sequential (IOR's -z), from the DXT trace of the writes, else the POSIX counters.
- Worker processes (a data loader's, forked or spawned, each with a non-MPI log;
  dlio_mpi_analysis.loading.process_roles gives them their main process's rank): ``reader.read_threads`` is
  the most workers of a rank alive at once; ``reader.worker_files`` (samples read by
  sample, files of a rank's own) when each worker opened each data file it read once
  and read it several times: "epoch" when a rank had more workers than read threads (new
  ones every epoch), else "run".
- ``reader.reopen`` (raw files read by byte ranges, no library pattern): at least
  OPEN_PER_READ opens per read, every read its own open; the read is then the sample
  (``dataset.record_length`` the read size), which tells consecutive samples apart.
- ``reader.hdf5_reads: sample`` (HDF5, batches of several samples or a load at start, no open
  per sample): every H5Dread moved one sample (the sample size is the bytes per H5Dread), so
  the job read a batch's samples one by one (collective calls too: a call a sample on every
  rank); and ``reader.batch_order`` when, samples in order, every step read them in one order
  of its own (fit_patterns.batch_order).
- ``reader.hdf5_dataset_open: read`` (HDF5 read independently, files kept open): the data
  datasets opened once or more for each H5Dread (H5D_OPENS over H5D_READS), as h5py's
  ``f["x"][i]`` does: libhdf5's chunk cache is then empty at each read.
- A row the sample where every H5Dread of a dataset of two dimensions or more selected one
  block of several whole rows (fit_patterns.h5d_row_blocks): the H5Dread a batch's rows read
  as one slice, the batch at least that many rows, ``reader.shuffle_block`` the rows of a
  slice when the slices' starts were shuffled.
- ``io.write_collective``: a shared data file written in collective calls (MPIIO_COLL_WRITES)
  and read in independent ones; the interface is the reads' (a job's reads and writes may
  differ: h5py's fast read path drops ``dset.collective``). An HDF5 file written first in
  H5Dwrite calls of several rows: ``reader.transfer_size`` that size in whole rows.
- Everything above counts without the I/O that the loader found Darshan had counted under a
  data file through a reused descriptor (dlio_mpi_analysis.loading.reused_descriptors); its note is the fit's
  first note.
The process count is not part of a workload: ``Fit.ranks`` (and the YAML's first comment) gives
it. ``reader.reading_ranks`` K where ranks 0 to K - 1 alone read the data and the job's others
none of it (fit_measures._reading_ranks): the data's measures above are then those of a job
of K ranks.
- Checkpoints (files the job wrote and never read, dlio_mpi_analysis.characterization.file_roles): how many, when
  (after which epoch or step of the data reads), by which ranks, their size, files and write
  calls, as the model and checkpoint keys of dlio_mpi_analysis.fitting.fit_checkpoints.
"""

import os
import dataclasses
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import yaml

from dlio_mpi.display import units
from dlio_mpi.files.safe_files import write_whole

from dlio_mpi_analysis.fitting import fit_patterns
from dlio_mpi_analysis.characterization.characterize import characterize, load_job
from dlio_mpi_analysis.characterization.dxt_metrics import AT_START_THRESHOLD, load_burst
from dlio_mpi_analysis.characterization.unseen_io import (header_reads_line, header_reads_only,
                                                          opened_without_io, unseen_io_line)
from dlio_mpi_analysis.errors import FitError
from dlio_mpi_analysis.characterization.evaluation_phases import evaluation_phases
from dlio_mpi_analysis.characterization.read_order import collective_lanes
from dlio_mpi_analysis.fitting.fit_checkpoints import (checkpoint_files, checkpoint_only,
                                                       fit_checkpoints, read_back)
from dlio_mpi_analysis.fitting.fit_evaluation import schedule
from dlio_mpi_analysis.fitting.fit_measures import (_collective_order, _counted_reads,
                           FORWARD_SHARE, _data_interfaces, _data_trace, _direct, _early_share, _file_table,
                           _interface, _min_rank_coverage,
                           _idle_opens, _own_shares, _read_shift, _reading_ranks, _record_length, _sample_spread, _shuffle, _stem, _timeline,
                           _transfer_size, _worker_files, _write_first, collective_writes)
from dlio_mpi_analysis.fitting import fit_core_driver, fit_parquet_columns
from dlio_mpi_analysis.fitting.fit_patterns import (framing, parquet_footer_reads, traits,
                                                    whole_fields)
from dlio_mpi_analysis.loading.reused_descriptors import NOTE_MARK as REUSED_NOTE, stray_posix

SHARED_SHARE = 0.5
REPLICATED_COVERAGE = 0.9
DOMINANT_SHARE = 0.5
MAX_EPOCHS = 1000
INDEX_SHARE = 0.01
OPEN_PER_READ = 0.9
# a job that read less than this share of its data files' bytes read a part of them, once
PARTIAL_SHARE = 0.75
# the evidence of loads, each a sample: a run of reads of one file (fit_access)
LOAD_KINDS = ("numpy_loads", "torch_loads", "npy_loads", "whole_file_loads", "image_reads",
              "python_whole_reads", "pickle_loads")
# libhdf5's default chunk cache (rdcc_nbytes): a chunk larger is read a selection at a time
CHUNK_CACHE_BYTES = 1 << 20
SAMPLE_SLACK = 0.02   # how far from a whole number of samples a collective call may move



@dataclass
class Fit:
    """A fitted workload: ``workload`` (section -> key -> value, valid for dlio_mpi.config.loader),
    ``ranks`` (the job's process count), ``evidence`` (the measured quantities each value came
    from) and ``notes`` (where the fit had to approximate)."""

    workload: dict
    ranks: int
    evidence: dict
    notes: list = field(default_factory=list)
    sources: list = field(default_factory=list)

    def to_yaml(self):
        header = [f"# dlio_mpi workload fitted by dlio_mpi_analysis.fitting.fit from {', '.join(self.sources)}",
                  f"# the job ran on {self.ranks} processes: mpiexec -n {self.ranks} python -m "
                  f"dlio_mpi run --config THIS_FILE"]
        header += [f"# note: {note}" for note in self.notes]
        return "\n".join(header) + "\n" + yaml.safe_dump(self.workload, sort_keys=False)

    def write(self, path):
        write_whole(path, self.to_yaml(), fsync=True)

    def to_dict(self):
        return {"workload": self.workload, "ranks": self.ranks, "evidence": self.evidence,
                "notes": list(self.notes), "sources": list(self.sources)}


def _stray_posix(job, data, notes):
    """True when the POSIX reads of the data files are another descriptor's I/O (the
    loader found descriptors reused under them: a worker's pipe taking the number C stdio
    closed) and C stdio read the data (reused_descriptors.stray_posix over the data files'
    reads). Says so in a note."""
    stdio, posix = job.records.get("STDIO"), job.records.get("POSIX")
    if stdio is None or stdio.empty or posix is None or posix.empty \
            or not any(n.startswith(REUSED_NOTE) for n in notes):
        return False
    ids = list(data.index)
    mine_posix, mine_stdio = posix[posix["id"].isin(ids)], stdio[stdio["id"].isin(ids)]
    on_posix = int(mine_posix["POSIX_BYTES_READ"].clip(lower=0).sum())
    on_stdio = int(mine_stdio["STDIO_BYTES_READ"].clip(lower=0).sum())
    calls_posix = int(mine_posix["POSIX_READS"].clip(lower=0).sum())
    calls_stdio = int(mine_stdio["STDIO_READS"].clip(lower=0).sum())
    if not stray_posix(on_posix, calls_posix, on_stdio, calls_stdio):
        return False
    notes.append(f"the POSIX records of the data files hold {on_posix} bytes read under "
                 f"reused descriptors, C stdio {on_stdio}: the data's reads are the STDIO "
                 "counters (their DXT trace, another descriptor's, left out)")
    return True


def _index_files(job, data, basis):
    """The ids of data files that are an index beside the data (the DLIO benchmark's
    indexed_binary .off.idx and .sz.idx, read by every rank when its reader starts): each
    open reads the file whole in one read, and together they hold under INDEX_SHARE of the
    bytes read, beside larger files read piece by piece, and their names end otherwise than
    those files' (a small image among images, its buffer's fill holding it, is a sample);
    or, Python's f.read() (the file in one read, then one at its end), a file opened once a
    process at most (a zarr array's .zarray and .zattrs, read by each loader worker once);
    where every file was read whole, the data are the files of the median size or more.
    Else an empty set."""
    if basis != "POSIX" or len(data) < 2:
        return set()
    posix = job.records["POSIX"]
    rows = posix[posix["id"].isin(list(data.index))].groupby("id")
    opens, reads = rows["POSIX_OPENS"].sum(), rows["POSIX_READS"].sum()
    processes = job.nprocs + sum(len(w) for w in (job.workers or {}).values())
    whole = [i for i in data.index
             if opens.get(i, 0) > 0 and data.loc[i, "bytes_read"]
             == opens.get(i, 0) * data.loc[i, "size"]
             and (reads.get(i, 0) == opens.get(i, 0)
                  or (reads.get(i, 0) == 2 * opens.get(i, 0)
                      and opens.get(i, 0) <= processes))]
    ending = (lambda i: os.path.splitext(str(data.loc[i, "name"]))[1])
    rest = [i for i in data.index if i not in set(whole)]
    if not rest:
        large = data["size"] >= float(data["size"].median())
        rest = [i for i in data.index if large[i]]
        whole = [i for i in whole if not large[i] and opens.get(i, 0) <= processes]
    others = {ending(i) for i in rest}
    whole = [i for i in whole if ending(i) not in others]
    if not whole or len(whole) == len(data):
        return set()
    if data.loc[whole, "bytes_read"].sum() >= INDEX_SHARE * data["bytes_read"].sum():
        return set()
    return set(whole)


def _companion_format(index_names, data_names):
    """The format whose companion files (FormatTraits.companions: an index beside each of its
    files, named as the file with a suffix added) are exactly the index files found beside
    the data files, or None. A mapped format's companions are mapped, not read: the
    index files' reads name the format that reads them."""
    from dlio_mpi import formats
    have = {os.path.basename(n) for n in index_names}
    for name, t in formats.TRAITS.items():
        if not t.companions or t.mapped:
            continue
        # what a companion adds to its file's name (the DLIO benchmark's files keep their own
        # extension, .indexed_binary, beside which the index files are named alike)
        added = [c[len(t.extension):] if c.startswith(t.extension) else c
                 for c in t.companions]
        want = {os.path.basename(n) + a for n in data_names for a in added}
        if want and want == have:
            return name
    return None


def _worker_threads(workers):
    """The most worker processes of a rank alive at once (their logs' spans), median over
    the ranks that had workers."""
    most = []
    for spans in workers.values():
        starts = np.sort([a for a, _ in spans])
        ends = np.sort([b for _, b in spans])
        alive = np.searchsorted(starts, starts, side="right") \
            - np.searchsorted(ends, starts, side="right")
        most.append(int(alive.max()))
    return max(1, int(round(float(np.median(most)))))


def _reading_processes(trace):
    """The most processes of a rank reading at once, each from its first read in ``trace`` to
    its last (median over the ranks); 0 without reads."""
    most = []
    for _, reads in trace.groupby("rank", sort=False):
        spans = reads.groupby("process").agg(a=("start", "min"), b=("end", "max"))
        starts, ends = np.sort(spans["a"].to_numpy()), np.sort(spans["b"].to_numpy())
        alive = np.searchsorted(starts, starts, side="right") \
            - np.searchsorted(ends, starts, side="right")
        most.append(int(alive.max()) if len(alive) else 0)
    return int(round(float(np.median(most)))) if most else 0


def _ids(ids):
    """Record ids as the file table's index holds them."""
    return np.array(sorted(ids), dtype=np.uint64)


def _phases_joined(trace, phases):
    """The evaluation reads with each rank's phases moved up to the one before: the phases-1
    longest pauses of a rank's reads (the training epochs between its evaluations) made as long
    as its longest other pause, so that the timeline of its steps sees an evaluation's steps
    only (a phase of two steps would otherwise be one step, its compute the training's)."""
    if phases < 2 or trace.empty:
        return trace
    start = trace["start"].to_numpy().astype(float).copy()
    end = trace["end"].to_numpy().astype(float).copy()
    for rank in np.unique(trace["rank"].to_numpy()):
        mine = np.flatnonzero(trace["rank"].to_numpy() == rank)
        mine = mine[np.argsort(start[mine], kind="stable")]
        if len(mine) < phases:
            continue
        gaps = start[mine][1:] - np.maximum.accumulate(end[mine])[:-1]
        cuts = np.sort(np.argsort(gaps)[-(phases - 1):])
        rest = np.delete(gaps, cuts)
        keep = float(rest.max()) if len(rest) else 0.0
        shift = np.zeros(len(mine))
        for c in cuts:
            shift[c + 1:] += max(0.0, gaps[c] - keep)
        start[mine] -= shift
        end[mine] -= shift
    return trace.assign(start=start, end=end)


def _evaluation(evaluation, eval_files, epochs, record, file_size, starts, notes, evidence):
    """The workload's evaluation keys from the evaluation set (fit_evaluation): its files,
    its batch and compute per step from its own reads' timeline, its schedule; {} when the
    phases fall on no schedule the emulator can run (said in a note)."""
    first, between, exact = schedule(evaluation["before_share"], epochs)
    names = evaluation["set_names"]
    evidence["evaluation"] = {"sets": names, "phases": evaluation["phases"],
                              "before_share": evaluation["before_share"],
                              "files": len(eval_files)}
    if not exact:
        notes.append(f"the files of {names['evaluation']}/ were read in "
                     f"{evaluation['phases']} phases of their own, at "
                     + ", ".join(f"{b * epochs:.2f}" for b in evaluation["before_share"])
                     + " epochs of the training set: no evaluation schedule (after an epoch, "
                     "then every N epochs) places them so; fitted without evaluation")
        return {}
    compute, batch, _, _ = _timeline(_phases_joined(evaluation["trace"],
                                                    evaluation["phases"]), record, starts)
    if compute <= 0 and evaluation["phases"] >= 1:
        # no pause inside a phase: each phase one step, its samples a rank's batch (the
        # compute after its last read cannot be told from the training's start)
        trace = evaluation["trace"]
        weights = starts(trace) if starts is not None \
            else trace["length"].to_numpy() / max(record, 1)
        ranks, index = np.unique(trace["rank"].to_numpy(), return_inverse=True)
        per_rank = float(np.median(np.bincount(index.reshape(-1), minlength=len(ranks),
                                               weights=np.asarray(weights, np.float64))))
        batch = max(1, int(round(per_rank / evaluation["phases"])))
    sizes = eval_files["size"].to_numpy()
    if abs(float(np.median(sizes)) - file_size) > 0.05 * max(file_size, 1):
        notes.append(f"the evaluation files' median size "
                     f"({units.size(float(np.median(sizes)))}) differs from the training "
                     f"files' ({units.size(file_size)}): the emulator makes them alike")
    notes.append(f"the files of {names['evaluation']}/ ({len(eval_files)}) were read apart "
                 f"from those of {names['train'] or 'the data folder'}/ in "
                 f"{evaluation['phases']} phases: evaluations after epoch {first}, then "
                 f"every {between} epochs, batch {batch}, {compute:.6g} s of compute a step")
    return {"files": len(eval_files), "batch": batch,
            "subfolders": _subfolders(eval_files["name"].tolist()),
            "evaluation": {"eval_time": round(compute, 6), "eval_after_epoch": first,
                           "epochs_between_evals": between}}


def _steps_of_a_partial_read(data, dataset_bytes, record, ranks, batch, read_type,
                             reader_extra, epochs_fixed, read=None):
    """The steps a rank made when the job read a part of its data files only, once (h5bench's
    strided or partial reads of its datasets, a run stopped within its first epoch): under
    PARTIAL_SHARE of the files' bytes, read by samples on demand. None otherwise (an epoch
    or more: the epochs count). ``read``: the bytes the samples' reads stand for, where they
    are not the counters' (a Parquet table read in part: its row groups whole)."""
    read = int(data["bytes_read"].sum()) if read is None else read
    if read_type != "on_demand" or epochs_fixed is not None or "access" in reader_extra \
            or read >= PARTIAL_SHARE * dataset_bytes:
        return None
    return max(1, int(round(read / max(record, 1) / max(ranks, 1) / max(batch, 1))))


def _subfolders(names):
    """The number of folders the data files lie in when there are several and they are the
    folders of one folder (the DLIO benchmark's train/0 .. train/k-1), else 0."""
    folders = {os.path.dirname(n) for n in names}
    parents = {os.path.dirname(f) for f in folders}
    return len(folders) if len(folders) > 1 and len(parents) == 1 else 0


def _collective_calls(job, data):
    """The data files' collective read calls in the DXT_MPIIO trace (each rank's own, timed;
    Darshan records no offset for them: -1), or None without them."""
    frame = (job.dxt_segments or {}).get("DXT_MPIIO")
    if frame is None:
        return None
    calls = frame[(frame["op"] == "read") & frame["id"].isin(list(data.index))
                  & (frame["offset"] < 0)]
    return None if calls.empty else calls


def _collective_piece(job, data, interface, transfer):
    """The bytes of a rank's own collective read call of the data files (the commonest in
    DXT_MPIIO) when the aggregators' reads are larger, a whole number of them, and no file view
    was set for each call (a batch's samples in one call: _collective_batch); else None."""
    if interface != "mpiio_coll" or transfer <= 0:
        return None
    calls = _collective_calls(job, data)
    if calls is None:
        return None
    mpiio = job.records.get("MPI-IO")
    mine = mpiio[mpiio["id"].isin(list(data.index))] if mpiio is not None else None
    if mine is not None and "MPIIO_VIEWS" in mine \
            and int(mine["MPIIO_VIEWS"].clip(lower=0).sum()) >= len(calls):
        return None
    lengths = calls["length"].to_numpy()
    sizes, counts = np.unique(lengths[lengths > 0], return_counts=True)
    if not len(sizes):
        return None
    own = int(sizes[int(np.argmax(counts))])
    return own if transfer > own and transfer % own == 0 else None


def _collective_batch(job, data, record):
    """Samples (of ``record`` bytes) each collective read call of the data files moved a rank,
    when every read was collective, the calls moved several samples each (within
    SAMPLE_SLACK of a whole number, two or more) and the job set a file view (for each call, a
    batch's scattered samples described to MPI-IO; or once, a strided type each call reads
    several samples through); else None."""
    mpiio = job.records.get("MPI-IO")
    if mpiio is None or mpiio.empty or record <= 0:
        return None
    mine = mpiio[mpiio["id"].isin(list(data.index))]
    total = (lambda c: int(mine[c].clip(lower=0).sum()) if c in mine else 0)
    calls, views = total("MPIIO_COLL_READS"), total("MPIIO_VIEWS")
    if not calls or total("MPIIO_INDEP_READS") or not views:
        return None
    # a record reduced over the ranks sums their calls: a rank's call is its share
    per_call = total("MPIIO_BYTES_READ") / calls / record
    k = int(round(per_call))
    if k < 2 or abs(per_call - k) > SAMPLE_SLACK * k:
        return None
    return k


def fit(source, *, data_folder="./data/fitted", output_folder="./dlio_output/fitted",
        name=None):
    """Fit a workload to ``source`` (see the module docstring)."""
    job = load_job(source, dxt=True)
    char = characterize(job)
    job = job.frames()      # the fit's measures read the records and traces with pandas
    notes, evidence = [w for w in job.warnings if w.startswith(REUSED_NOTE)], {}
    files, basis, reading = _file_table(job, char.roles)
    data = files[files["data"] & (files["bytes_read"] > 0)]
    if basis == "POSIX" and _stray_posix(job, data, notes):
        # the data's reads are C stdio's, under POSIX records of another descriptor's I/O:
        # the STDIO counters are the reads
        files, basis, reading = _file_table(job, char.roles, first="STDIO")
        data = files[files["data"] & (files["bytes_read"] > 0)]
    headers = header_reads_only(job.records, job.names, char.roles)
    if headers:
        # a header read before the file was mapped: its data moved unseen
        data = data[~data["name"].isin(headers)]
    back = read_back(job, char.roles, {int(i) for i in data.index})
    unseen = "; ".join(line for line in (
        unseen_io_line(opened_without_io(job.records, job.names, char.roles)),
        header_reads_line(headers)) if line)
    if back or (data.empty and checkpoint_files(job, char.roles)):
        if unseen:
            notes.append(f"{unseen}: its data reads cannot be fitted, the checkpoints "
                         "alone are (workflow.train false)")
        model, checkpoint = checkpoint_only(job, char.roles, back, output_folder, notes,
                                            evidence)
        evidence["data_files"] = {"format": None, "files": 0, "bytes_read": 0,
                                  "other_formats": {}}
        workload = {"model": {"name": name or f"fitted_{_stem(job)}", **model},
                    "workflow": {"generate_data": False, "train": False, "checkpoint": True},
                    "checkpoint": checkpoint, "output": {"folder": output_folder}}
        return Fit(workload=workload, ranks=job.nprocs, evidence=evidence, notes=notes,
                   sources=list(job.paths) if job.source == "darshan"
                   else [os.path.dirname(job.paths[0])])
    if data.empty:
        empty = not any(len(frame) for frame in job.records.values())
        raise FitError(f"{', '.join(job.paths)}: no data file was read"
                       + (f": {unseen}" if unseen else "") + ": nothing to fit"
                       + ("; the log holds no file record at all, as when a data loader's "
                          "forked workers made the reads (Darshan in MPI mode records no "
                          "I/O of a forked process: DARSHAN_ENABLE_NONMPI=1 gives a log "
                          "per process)" if empty else ""))
    if unseen:
        notes.append(f"{unseen}: the fit is of the reads Darshan recorded only")
    by_format = data.groupby("format")["bytes_read"].sum().sort_values(ascending=False)
    fmt = by_format.index[0]
    data = data[data["format"] == fmt]
    index = _index_files(job, data, basis)
    index_format = None
    if index:
        data = data.drop(index=list(index))
        notes.append(f"{len(index)} small file(s) read whole at each open "
                     f"({int(files.loc[list(index), 'bytes_read'].sum())} bytes, under "
                     f"{INDEX_SHARE:.0%} of the data's): an index or metadata beside the "
                     "data, left out of the samples")
        evidence["index_files"] = sorted(job.names.get(int(i), "") for i in index)
        index_format = _companion_format(evidence["index_files"], data["name"].tolist())
        if index_format is not None:
            notes.append(f"the index files are those dataset.format {index_format} writes "
                         f"beside each data file and reads whole once a rank: dataset.format "
                         f"{index_format}")
    evaluation = evaluation_phases(_data_trace(job, set(data.index)),
                                   {int(i): n for i, n in data["name"].items()})
    eval_files = None
    if evaluation is not None:
        # the training set is fitted alone (its reads below too); the evaluation set's phases
        # come last
        eval_files = data[data.index.isin(_ids(evaluation["eval_ids"]))]
        data = data[data.index.isin(_ids(evaluation["train_ids"]))]
    reading = reading[reading["id"].isin(list(data.index))]
    evidence["data_files"] = {"format": fmt, "files": len(data),
                              "bytes_read": int(data["bytes_read"].sum()),
                              "other_formats": {k: int(v) for k, v in by_format.iloc[1:].items()}}
    # what the fit leaves out as no data: standard streams, the MPI library's own files,
    # checkpoints, code, configuration and logs (dlio_mpi_analysis.characterization.file_roles)
    evidence["files_apart"] = {role: v for role, v in char.file_roles.items() if role != "data"}
    sizes = data["size"].to_numpy()
    evidence["file_size"] = {"min": int(sizes.min()), "median": float(np.median(sizes)),
                             "max": int(sizes.max())}
    trace = _data_trace(job, set(data.index))
    waited = fit_patterns.nonblocking_share(job, set(data.index))
    if trace is not None and waited >= DOMINANT_SHARE:
        # nonblocking reads (MPI_File_iread_at): Darshan times each from its issue to its
        # completion, which the program waits for after its compute, so the reads of a batch
        # seem to last through the step; their issue times are the program's own pace
        evidence["nonblocking_reads"] = waited
        trace = trace.assign(end=trace["start"])
        notes.append(f"{waited:.0%} of the MPI-IO reads of the data were nonblocking: timed "
                     "from their issue (Darshan's durations run to their completion, waited "
                     "for after the step's compute); the emulator reads on the step's thread")
    if trace is not None and basis == "STDIO":
        # the POSIX trace is another descriptor's I/O under the data files (_stray_posix)
        evidence["stray_trace"] = int(trace["length"].sum())
        trace = None
    if trace is not None:
        counted = _counted_reads(job, basis, reading)
        partial = any(m.startswith("DXT") for m in job.partial_modules) \
            or (counted is not None and len(trace) < counted)
        if partial:
            notes.append(f"the DXT trace is partial ({len(trace)} of "
                         f"{counted if counted is not None else 'more'} data reads): read "
                         "type, order and timing come from the counters")
            evidence["partial_trace"] = {"traced": len(trace), "counted": counted}
            trace = None
    whole_job = job
    readers = _reading_ranks(job, trace, reading)
    if readers < job.nprocs:
        # the other ranks read none of the data (rank 0 loads it for all): the data's
        # measures are those of a job of the reading ranks; checkpoints are the whole job's
        evidence["reading_ranks"] = readers
        who = "rank 0" if readers == 1 else f"ranks 0 to {readers - 1}"
        idle_open = _idle_opens(job, set(data.index), readers)
        evidence["idle_ranks_open"] = idle_open
        notes.append(f"{who} alone read the data, the job's other {job.nprocs - readers} "
                     f"of {job.nprocs} ranks none of it: reader.reading_ranks {readers}"
                     + ("; they opened the data files (reader.idle_ranks_open)" if idle_open
                        else ""))
        job = dataclasses.replace(job, nprocs=readers)
    data_reads = trace        # every traced data read, footers too
    if trace is not None and traits(fmt).row_groups:
        # pyarrow opens a file by reading its end: those footer reads are no sample's (a
        # loader that opens the file for each row group reads one before every sample)
        ends = fit_patterns.footer_reads(trace, {int(i): int(v) for i, v in data["size"].items()})
        if ends.any() and not ends.all():
            evidence["footer_reads_apart"] = int(ends.sum())
            trace = trace[~ends]
        projection = fit_parquet_columns.parquet_columns(trace)
        if projection is not None:
            # a table read in part: a row group's reads of its chosen columns stand as one
            # read of the row group (a sample), its layout the columns
            evidence["parquet_columns"] = projection
            trace = fit_parquet_columns.row_group_reads(trace, projection["period"])
            data_reads = pd.concat([data_reads[ends], trace]).sort_values("start",
                                                                          kind="stable")
            runs = ", ".join(f"{n} {'read' if j in projection['read'] else 'skipped'}"
                             for j, n in enumerate(projection["columns"]))
            notes.append(f"the Parquet files were read in part, the same holes in every row "
                         f"group of {projection['period']} bytes: columns of {runs} bytes "
                         f"(dataset.parquet_columns, reader.parquet_columns_read), "
                         + ("the row groups' chunks pre-buffered at once, neighbours' "
                            "adjacent chunks in one read (reader.parquet_coalesce batch)"
                            if projection["together"] else
                            "each row group's chunks read on their own"))
    early = _early_share(job, trace, data, basis, reading)
    burst = trace is not None and load_burst(trace, job.run_time)
    read_type = "memory" if early is not None and (early >= AT_START_THRESHOLD or burst) \
        else "on_demand"
    evidence["early_read_fraction"] = early
    evidence["load_burst"] = burst
    transfer, share = _transfer_size(trace, data, basis, reading)
    # nonblocking reads: Darshan's counters take them in the order they completed, the trace
    # in the order they were issued, the program's
    shuffle, forward = _shuffle(trace, None if "nonblocking_reads" in evidence else basis,
                                reading,
                                transfer if traits(fmt).rows and share >= DOMINANT_SHARE else None)
    evidence["forward_jump_share"] = forward
    if read_type == "memory" and shuffle != "off":
        # a load at start reads each file front to back: reads that jump about (IOR's -z
        # reading its block at random offsets in one burst) are samples read on demand
        read_type = "on_demand"
        # (under collective calls the aggregators' POSIX order is no rank's own: the
        # calls' order is read from their windows further on, _collective_order, and said)
        if "MPI-IO collective" not in _data_interfaces(job, data):
            notes.append(f"the reads came in one burst but in a shuffled order ({forward:.0%} "
                         "of the jumps forward): reads on demand in a shuffled order, not a "
                         "load at start (which reads in order)")

    shared_bytes = int(data.loc[data["ranks"] > 1, "bytes_read"].sum())
    shared = shared_bytes > SHARED_SHARE * int(data["bytes_read"].sum()) \
        and len(data) < job.nprocs
    evidence["shared_bytes"] = shared_bytes
    layout = "multi"
    if shared:
        coverage = _min_rank_coverage(data, basis, reading)
        evidence["min_rank_coverage"] = coverage
        layout = "replicated" if read_type == "memory" and coverage >= REPLICATED_COVERAGE \
            else "shared"
        if len(data) > 1:
            notes.append(f"{len(data)} shared files fitted as one file of their total size")
    num_files = 1 if shared else len(data)
    subfolders = _subfolders(data["name"].tolist()) if not shared else 0
    if subfolders:
        notes.append(f"the data files lie in {subfolders} folders of one folder: "
                     f"dataset.num_subfolders_train {subfolders}")
    file_size = int(sizes.sum()) if shared else int(round(float(np.median(sizes))))

    evidence["dominant_read_size"] = {"size": transfer, "byte_share": share}
    transfer_size = transfer if share >= DOMINANT_SHARE else 0
    spread = None if transfer_size else _sample_spread(trace, fmt, read_type)
    if spread is not None:
        # no read size dominates and the samples' reads differ in size: samples of varied
        # lengths (documents by index), fitted by their mean and spread, which keep the bytes
        record = spread[0]
    else:
        record = _record_length(trace, fmt, transfer_size or transfer, file_size, read_type)
    record = whole_fields(fmt, record)
    spf = max(1, int(round(file_size / (record + framing(fmt)))))

    interface = _interface(fmt, layout, data, job, notes)
    own = _collective_piece(job, data, interface, transfer) if spread is None else None
    if own is not None and record % own == 0 and record > own:
        # the aggregators read the pieces of every rank's call side by side in one read (a
        # rank's pieces adjacent to the next rank's): a rank's own call is the transfer, and
        # a sample (the runs of the aggregators' reads are no rank's)
        evidence["collective_piece"] = own
        notes.append(f"the aggregators read {transfer} bytes at a time, the pieces of "
                     f"several ranks' collective calls side by side; each rank's call moved "
                     f"{own} bytes (DXT_MPIIO): a sample and reader.transfer_size {own}")
        record = transfer_size = own
        spf = max(1, int(round(file_size / record)))
    pattern = fit_patterns.library_pattern(job, trace, data, fmt, layout, read_type,
                                           file_size, notes, evidence)
    reader_extra, epochs_fixed = {}, None
    if pattern is not None:
        p_record, p_spf, p_transfer, reader_extra, epochs_fixed, order_off = pattern
        if p_record is not None:
            record, spf, transfer_size = p_record, p_spf, p_transfer
            spread = None           # the library's pattern tells the samples
        if order_off is not None and (p_record is not None or order_off):
            shuffle = "off" if order_off else "seed"
        elif order_off is False and spf == 1 and layout == "multi" and shuffle == "off":
            # a file a sample: the files' order is the samples'
            shuffle = "seed"
            notes.append("a file a sample, taken out of the files' names' order: "
                         "reader.sample_shuffle seed")
    if spread is not None:
        evidence["record_length_stdev"] = spread[1]
        seed, off = fit_patterns.size_seed(num_files, spf, num_files * file_size, spread[1],
                                           record, spread[1])
        evidence["size_seed"] = {"seed": seed, "total_difference": off}
        notes.append(f"samples of varied sizes (no read size moves {DOMINANT_SHARE:.0%} of "
                     f"the bytes): dataset.record_length {record} is their mean, "
                     f"record_length_stdev {spread[1]} their spread (a sample: a run of "
                     f"consecutive reads); train.seed {seed} draws sizes that total the "
                     f"files' bytes within {off:.1%}")
    if "npy_loads" in evidence:
        interface = "posix"     # numpy's own mix: header through POSIX, array through STDIO
    if interface == "posix" and _direct(job, data, notes, evidence):
        interface = "posix_direct"
    if (pattern is None or pattern[0] is None) and trace is not None \
            and read_type == "on_demand" and transfer_size \
            and spread is None and not traits(fmt).rows and interface in ("posix", "stdio") \
            and traits(fmt).access is None and "access" not in reader_extra \
            and fit_patterns._opens(job, data) >= OPEN_PER_READ * len(trace):
        # every read in an open of its own: a loader that opens a sample's file, reads the
        # sample and closes it; the read is the sample (consecutive samples would otherwise
        # be taken for one sample per step)
        evidence["opens_per_read"] = fit_patterns._opens(job, data) / len(trace)
        record = transfer_size
        spf = max(1, file_size // record)
        reader_extra["reopen"] = True
        notes.append(f"each read of {record} bytes was its own open of the file: a sample a "
                     "read, its file opened for it (reader.reopen)")
        inside = fit_patterns.whole_file_record(trace, dict(data["size"]), fmt)
        if inside is not None and spf == 1:
            # the file read whole, its header too, in one call from its start (a reader that
            # loads the file and parses it in memory: the DLIO benchmark's O_DIRECT NPY
            # reader); the sample is the array inside, as the emulator's files hold it
            evidence["whole_file_reads"] = {"file_bytes": record, "sample_bytes": inside}
            notes.append(f"each {fmt} file read whole in one call from its start, its header "
                         f"too: reader.whole_file, a sample of {inside} bytes in a file of "
                         f"{record} (O_DIRECT, which Darshan cannot see, reads so; the "
                         "interface stays posix)")
            record = inside
            reader_extra["whole_file"] = True
            run = fit_patterns.start_runs(trace, lambda r: (r["offset"].to_numpy() == 0)
                                          & (r["length"].to_numpy() > 0))
            if run > 1:
                # a file read whole several times in a row, each a sample's load: its samples
                # (the DLIO benchmark's O_DIRECT NPY reader loads the file for each)
                spf, record = run, max(1, inside // run)
                evidence["whole_file_reads"]["loads_in_a_row"] = run
                notes.append(f"each file read whole {run} times in a row: {run} samples a "
                             f"file of {record} bytes, each loading the whole file")
    if traits(fmt).rows and interface.startswith("hdf5") and read_type == "on_demand" \
            and layout == "multi" and "access" not in reader_extra:
        samples = fit_patterns.h5d_sample_reads(job, set(data["name"]))
        opens = fit_patterns.hdf5_opens(job, data)
        per_read = fit_patterns.h5d_bytes_per_read(job, set(data["name"])) or 0
        # a sample a read (the emulator reopens a file for each sample's row)
        if samples and opens >= OPEN_PER_READ * samples \
                and abs(per_read - record) <= SAMPLE_SLACK * record:
            # the file opened for each sample (the DLIO benchmark's HDF5 reader): libhdf5
            # reads the superblock and the objects' headers again for each
            evidence["opens_per_sample"] = opens / samples
            reader_extra["reopen"] = True
            notes.append(f"{opens} opens of the data files for {samples} samples' reads: "
                         "each sample's file opened for it (reader.reopen)")
    evidence["record_length"] = record
    # (a load at start reads a rank's one block: no turns; IOR's segments read in one burst,
    # through a file view too, are)
    turn = fit_patterns.round_robin_block(trace, record, job.nprocs) \
        if layout == "shared" and trace is not None else 0
    turns = trace
    if not turn and layout == "shared" and interface in ("mpiio_coll", "hdf5_coll"):
        # collective calls: the ranks' own pieces from the aggregators' reads in each call
        lanes = collective_lanes(job.dxt_segments, set(data.index), job.nprocs,
                                 piece=evidence.get("collective_piece"))
        turn = fit_patterns.round_robin_block(lanes, record, job.nprocs) \
            if lanes is not None else 0
        turns = lanes
    if turn:
        # (applied below unless the job wrote the file first: its shift is then its
        # writers')
        evidence["turn_shift"] = fit_patterns.round_robin_shift(turns, record, job.nprocs,
                                                                turn)
        reader_extra["sharding"] = "round_robin"
        shuffle = "off"
        evidence["round_robin"] = True
        if read_type == "memory":
            # a load at start takes a rank's one block of the file: the ranks' turns are
            # replayed as reads on demand, with no compute
            read_type = "on_demand"
            notes.append("the ranks read the file in turns, all early: fitted as reads on "
                         "demand with no compute (io.read_type=memory would load a block a "
                         "rank)")
        if turn > 1:
            reader_extra["sharding_block"] = turn
            notes.append(f"each rank reads every {job.nprocs}th run of {turn} samples of the "
                         f"file (block-cyclic, IOR's segments of {turn * record}-byte blocks): "
                         f"reader.sharding round_robin, reader.sharding_block {turn}")
    elif interface in ("mpiio_coll", "hdf5_coll"):
        shuffle = _collective_order(job, data, shuffle, notes, evidence)
        if read_type == "memory":
            # the emulator's load at start reads by independent calls: the job's collective
            # read calls are only replayed as reads on demand
            read_type = "on_demand"
            notes.append("reads by collective calls, all early: fitted as reads on demand "
                         "with no compute (io.read_type=memory would load by independent "
                         "calls)")
    if trace is None and layout == "multi" and shuffle == "off" and job.nprocs > 1 \
            and read_type == "on_demand" and len(data) >= job.nprocs \
            and float((data["ranks"] > 1).mean()) >= SHARED_SHARE:
        # no trace to show the order, but the ranks read in each other's files: a rank's
        # samples spread over the files, as a global shuffle spreads them (in order, each
        # rank would read files of its own)
        shuffle = "seed"
        evidence["files_read_by_several_ranks"] = float((data["ranks"] > 1).mean())
        notes.append(f"{(data['ranks'] > 1).mean():.0%} of the data files were read by "
                     "several ranks and no trace shows the order: the samples spread over "
                     "the ranks as a global shuffle spreads them (reader.sample_shuffle seed)")
    if shuffle != "off" and read_type == "on_demand" \
            and reader_extra.get("access") != "stream" and job.nprocs > 1:
        own = _own_shares(trace, data, layout, record)
        evidence["own_shares"] = own
        if own:
            reader_extra["shuffle_scope"] = "rank"
            notes.append("each rank read a share of the data of its own "
                         + ("(its files)" if layout == "multi" else "(one block of the file)")
                         + " in a shuffled order: reader.shuffle_scope rank (a global "
                         "shuffle would spread every rank's reads over all the data)")
    compute, batch, threads = 0.0, 1, 0
    starts = None
    if trace is not None and read_type == "on_demand":
        if "numpy_loads" in evidence:        # a sample is a load: its end-record read
            # every data file's size: the evaluation set's loads are timed with it too
            sizes = {int(i): int(v) for i, v in files["size"].items()}
            starts = (lambda r: fit_patterns.load_starts(r, sizes))
        elif reader_extra.get("whole_file"):
            # a sample's load reads its whole file, from its start
            starts = (lambda r: (r["offset"].to_numpy() == 0) & (r["length"].to_numpy() > 0))
        elif "buffered_reads" in evidence:   # a sample a buffer fill
            starts = (lambda r: r["length"].to_numpy() > 0)
        elif "torch_loads" in evidence:
            # a sample is a load: a run of reads of one file from its start (torch.load
            # reads the file's start again within a load)
            starts = fit_patterns.run_starts
        elif ("npy_loads" in evidence or "whole_file_loads" in evidence
              or "image_reads" in evidence or "python_whole_reads" in evidence
              or "pickle_loads" in evidence):
            # a sample is a load: its first read (the header's, the file's start, an image's
            # buffer fill) at offset 0
            starts = (lambda r: (r["offset"].to_numpy() == 0) & (r["length"].to_numpy() > 0))
        elif traits(fmt).rows and reader_extra.get("reopen"):
            # a file opened for each sample: libhdf5 reads its superblock at the file's start
            # first (its sieve buffer's fills after it may hold more than the sample: bytes
            # over a sample's would count too many)
            starts = fit_patterns.open_starts
        elif traits(fmt).rows and evidence.get("h5d_bytes_per_read") \
                and "hdf5_chunk" in evidence:
            # chunks read whole (compressed: in a size of their own; uncompressed, a chunk
            # holding several samples read again for each where the dataset was opened for
            # each read, its chunk cache empty) are no sample's bytes; a step's samples are
            # its chunk reads' share of the H5Dread samples. An uncompressed dataset kept
            # open serves the samples of a chunk it holds from its cache: a chunk read's
            # bytes are then its samples. Uncompressed chunks larger than the cache are read
            # a selection at a time: the share applies only where chunk reads move most of
            # the bytes.
            held = fit_patterns.h5d_datasets(job, set(data["name"]))
            asked = sum(v[1] for v in held.values()) / record      # samples the calls asked
            stored = evidence["hdf5_chunk"] * evidence.get("content_fill", 1.0)
            least = max(1024.0, 0.5 * stored)
            lengths = trace["length"].to_numpy()
            chunk_reads = int((lengths >= least).sum())
            # (a sample's fields read with its rows, a label's short reads beside them, move
            # bytes of their own: the chunk reads are then to match the rows' H5Dread calls)
            rows_reads = fit_patterns.h5d_sample_reads(job, set(data["name"])) \
                if fit_patterns.datasets_read_together(job, set(data["name"])) else 0
            if not evidence.get("compression") and (
                    (lengths[lengths >= least].sum() < fit_patterns.STREAM_SHARE * lengths.sum()
                     and not (rows_reads and chunk_reads
                              >= fit_patterns.STREAM_SHARE * rows_reads))
                    or (fit_patterns.h5d_opens_per_read(job, set(data["name"])) or 0) < 1):
                chunk_reads = 0
            if asked and chunk_reads:
                per_read = asked / chunk_reads
                evidence["h5d_samples_per_read"] = per_read
                starts = (lambda r: np.where(r["length"].to_numpy() >= least, per_read, 0.0))
        elif traits(fmt).rows and evidence.get("h5d_bytes_per_read") \
                and "hdf5_chunk" not in evidence:
            held = fit_patterns.h5d_datasets(job, set(data["name"]))
            asked = sum(v[1] for v in held.values())
            big = trace[trace["length"] > 2 * record]
            fresh = (fit_patterns.h5d_opens_per_read(job, set(data["name"])) or 0) >= 1
            if asked and (len(big) >= fit_patterns.STREAM_SHARE * len(trace)
                          or (fresh and len(big))):
                # libhdf5's sieve buffer: most reads are its 64 KiB fills, each about one
                # selection of a shuffled order (or, the dataset opened for each read, every
                # H5Dread's reads its own: a fill for an image, a read to the file's end for
                # its label); a step's samples are its data reads' share of the H5Dread
                # samples, not its bytes over a sample's. libhdf5's metadata reads (a
                # netCDF-4 file's dimensions and attributes at each open) and a label's
                # short read are no share: the data reads are those of at least half the
                # size that moves the middle byte (fit_patterns.data_reads)
                least = 0.5 * (fit_patterns.middle_byte_size(trace["length"].to_numpy())
                               or 0)
                moving = int((trace["length"].to_numpy() >= least).sum())
                per_read = asked / record / max(moving, 1)
                evidence["h5d_samples_per_read"] = per_read
                starts = (lambda r: np.where(r["length"].to_numpy() >= least, per_read, 0.0))
        # a sample a load of a file (its reads a run of that file's), one load of a file in a
        # row: a pause inside a load is the library's stall, no step's end
        loads = any(k in evidence for k in LOAD_KINDS) \
            and evidence.get("loads_in_a_row", 1) <= 1
        steps = trace
        if traits(fmt).rows and share >= DOMINANT_SHARE and transfer == record \
                and "hdf5_chunk" not in evidence and starts is None:
            # the samples' reads alone: libhdf5's metadata reads between them (a dataset's
            # opening, its object header) are no step's samples, and their few bytes cut a
            # compute pause in two
            steps = trace[trace["length"] == transfer]
        calls = _collective_calls(job, data) \
            if interface in ("mpiio_coll", "hdf5_coll") else None
        if calls is not None:
            # under collective calls the POSIX reads are the aggregators', a piece of every
            # rank's request in each call: a rank's own steps are its collective calls
            steps, starts = calls, None
            evidence["timeline_from"] = "DXT_MPIIO"
        compute, batch, threads, timing = _timeline(steps if len(steps) else trace, record,
                                                    starts, loads)
        evidence["timeline"] = timing
        shared = evidence.get("worker_visits")
        if shared and compute > 0 and batch != shared["run"]:
            # a file's samples split among sibling workers read at once: each worker's run
            # of them is a batch (a loader gives each worker whole batches), where its
            # prefetch of the next batch, read back to back, hides the pause between
            batch = shared["run"]
            notes.append(f"each worker loaded {batch} of a file's samples in a row while its "
                         "sibling workers loaded the file's others: a batch is a worker's run "
                         f"(reader.batch_size {batch}; its prefetched batches are read back "
                         "to back, no pause between them)")
        per_call = _collective_batch(job, data, record) if interface == "mpiio_coll" \
            else None
        if per_call is not None:
            # each collective call read a batch's scattered samples through a file view
            evidence["collective_call_samples"] = per_call
            transfer_size, batch = 0, max(batch, per_call)
            notes.append(f"each collective read call moved {per_call} samples of {record} "
                         "bytes a rank through a file view: a batch's samples in one "
                         "collective call (reader.transfer_size 0), batch at least "
                         f"{per_call}")
        rows = evidence.get("h5d_scattered_rows")
        if rows is not None:
            # an H5Dread's union is a batch's rows of a file, read in the file's order
            # within it: the batch at least that many rows, the order that of the unions
            per_batch = rows["rows"]
            batch = max(batch, per_batch)
            # (the rows' own reads: a field's, after them, would count as a batch's)
            own = trace[trace["length"] == rows["row"]]
            forward = fit_patterns.batch_forward_share(own, per_batch) \
                if len(own) >= 0.5 * len(trace) else \
                fit_patterns.union_forward_share(trace, fit_patterns.h5d_sample_reads(
                    job, set(data["name"])))
            evidence["batch_forward_share"] = forward
            if forward is not None:
                shuffle = "off" if forward >= FORWARD_SHARE else "seed"
                notes.append(f"{forward:.0%} of a rank's H5Dread unions begin past the one "
                             f"before (their rows in the file's order within each): "
                             f"reader.sample_shuffle {shuffle}, batch at least {per_batch} "
                             "rows")
        blocks = evidence.get("h5d_row_blocks")
        if blocks is not None:
            # an H5Dread is a batch's rows read as one slice: the batch at least that many
            # rows; shuffled, the slices' starts are (reader.shuffle_block)
            batch = max(batch, blocks["rows"])
            # (under collective calls the POSIX reads are the aggregators', every rank's
            # piece of each call in turn: the order is the calls', found above)
            forward = None if evidence.get("collective_read_order") is not None \
                else fit_patterns.batch_forward_share(
                    trace[trace["length"] >= blocks["row"] * blocks["rows"]], 1)
            evidence["block_forward_share"] = forward
            if forward is not None:
                shuffle = "off" if forward >= FORWARD_SHARE else "seed"
                if shuffle == "seed":
                    reader_extra["shuffle_block"] = blocks["rows"]
                notes.append(f"{forward:.0%} of a rank's slices begin past the one before: "
                             f"reader.sample_shuffle {shuffle}"
                             + (f", reader.shuffle_block {blocks['rows']} (the slices' starts "
                                "shuffled, each slice's rows in order)"
                                if shuffle == "seed" else ""))
        if compute > 0:
            notes.append(f"a log records no batches: reader.batch_size {batch} is the samples "
                         f"read between two compute pauses (median), train.computation_time "
                         f"{compute:.6g} s the median pause")
        else:
            notes.append("a log records no batches and the reads show no compute pauses: "
                         "reader.batch_size 1 and no compute per step")
    elif trace is None and (opens := fit_patterns.first_opens(job, data)) is not None \
            and spf == 1 and layout == "multi":
        # no trace of the reads (numpy.fromfile's C stdio), one sample a file: the files'
        # first opens (POSIX_F_OPEN_START_TIMESTAMP, an epoch's) are the samples' order and
        # pace
        compute, batch, _, timing = _timeline(opens, record,
                                              lambda r: np.ones(len(r), np.float64))
        evidence["timeline"] = {**timing, "from": "first opens"}
        ascending = fit_patterns.file_order_ascending(opens, dict(data["name"].items()))
        evidence["first_opens_in_name_order"] = ascending
        if ascending is not None:
            shuffle = "off" if ascending else "seed"
        if shuffle != "off" and job.nprocs > 1 and bool((data["ranks"] == 1).all()):
            reader_extra["shuffle_scope"] = "rank"      # each rank its own files
        notes.append("no trace of the reads (C stdio's): a sample a file, each file's first "
                     "open (an epoch's) gives the samples' order and pace: "
                     f"reader.sample_shuffle {shuffle}, reader.batch_size {batch}, "
                     f"train.computation_time {compute:.6g} s (an open's gap, its read in it)")
    elif trace is None:
        notes.append("without a DXT trace of the reads on demand, batches, compute and read "
                     "concurrency cannot be seen: reader.batch_size 1, no compute, no read "
                     "threads")
    else:
        notes.append("the input was loaded in one burst (io.read_type memory): the training "
                     "from memory leaves no reads to time its steps by: reader.batch_size 1, "
                     "no compute, no read threads")
    if job.workers:
        threads = _worker_threads(job.workers)
        if evaluation is not None and trace is not None and "process" in trace:
            # the training loader's workers alone: the evaluation's have a loader of their own
            # (alive beside the training's, persistent, but reading no training file)
            threads = min(threads, _reading_processes(trace) or threads)
        kinds = " and ".join(kind for kind in ("forked", "spawned")
                             if f"{kind} worker" in job.process_roles) or "forked"
        notes.append(f"each rank's reads were made by {kinds} worker processes (a data "
                     f"loader's workers, a Darshan log each), up to {threads} at once: fitted "
                     f"as reader.read_threads {threads}")
        evidence["workers"] = {int(r): len(w) for r, w in job.workers.items()}
        # (the threads' own open files are those of a reader of samples' byte ranges: a
        # format read its own way, Parquet's footer and row groups, keeps its own)
        if "access" not in reader_extra and traits(fmt).access is None \
                and not reader_extra.get("reopen") \
                and layout == "multi" and read_type == "on_demand":
            kept = _worker_files(job, data, threads)
            evidence["worker_files"] = kept
            if kept is not None:
                reader_extra["worker_files"] = kept
                notes.append("each worker opened each file it read once and kept it open "
                             + ("until it ended, new workers every epoch: "
                                if kept == "epoch" else "for the whole run: ")
                             + f"reader.worker_files {kept} (a thread's own handles)")
    if threads >= 1 and reader_extra.get("reopen"):
        notes.append(f"each sample's file was opened for its read, by {threads} readers at "
                     "once: the emulator's read threads open a sample's file, read it and "
                     "close it (reader.reopen with reader.read_threads)")
    if traits(fmt).rows and read_type == "memory" and "h5d_bytes_per_read" not in evidence:
        per_read = fit_patterns.h5d_bytes_per_read(job, set(data["name"]))
        if per_read:
            evidence["h5d_bytes_per_read"] = per_read
    if traits(fmt).rows and (batch > 1 or read_type == "memory") \
            and "h5d_bytes_per_read" in evidence \
            and not reader_extra.get("reopen") \
            and interface in ("hdf5", "hdf5_sec2", "hdf5_coll") \
            and evidence["h5d_bytes_per_read"] == record and spf > 1:
        # each H5Dread moved one sample: the job read a batch's samples one by one
        reader_extra["hdf5_reads"] = "sample"
        notes.append("each H5Dread read one sample (H5D bytes per read = a sample): "
                     "reader.hdf5_reads sample, not a batch's rows of a file in one union")
        order = fit_patterns.batch_order(trace, record, batch) \
            if trace is not None and shuffle == "off" else None
        calls = fit_patterns.h5dread_calls(job, trace, set(data["name"]), record) \
            if order is None and trace is not None and shuffle == "off" else None
        if calls is not None:
            # each H5Dread read in several pieces (a strided selection): the calls' order
            order = fit_patterns.batch_order(calls, record, batch)
        if order is not None:
            reader_extra["batch_order"] = order
            notes.append(f"every step read its {batch} samples in one order of its own, not "
                         f"the file's: reader.batch_order {order} (the positions in the file's "
                         "order, one H5Dread each)")
    if traits(fmt).rows and interface in ("hdf5", "hdf5_sec2") \
            and not reader_extra.get("reopen"):
        per_read = fit_patterns.h5d_opens_per_read(job, set(data["name"]))
        if per_read is not None and per_read >= 1 and spf > 1:
            # the dataset opened for each H5Dread: libhdf5's chunk cache empty at each read
            # (a chunk of several samples read again for each)
            evidence["h5d_opens_per_read"] = per_read
            reader_extra["hdf5_dataset_open"] = "read"
            notes.append(f"the datasets had {per_read:.2g} opens per H5Dread (H5D_OPENS "
                         "over H5D_READS), as h5py's f['x'][i] in a Dataset's __getitem__ "
                         "does: reader.hdf5_dataset_open read (libhdf5's chunk cache empty at "
                         "each read)")
    ranks = job.nprocs
    samples = num_files * spf
    per_rank = samples if layout == "replicated" else samples // max(ranks, 1)
    if layout == "multi" and ranks > 1 and batch < per_rank and per_rank % batch \
            and bool((data["ranks"] == 1).all()) and num_files % ranks == 0:
        # each file read by one rank: a batch that leaves part of a rank's share over would
        # have the emulator's ranks share files the job's did not (the job read its last,
        # short batch); the largest batch under it that divides the share, where the rows
        # are known from the datasets (libhdf5's chunk cache, hiding most reads, can make
        # the batch unclear) or it is at least half the batch seen
        fits = max(b for b in range(1, batch + 1) if per_rank % b == 0)
        if (traits(fmt).rows and "h5d_bytes_per_read" in evidence) or 2 * fits >= batch:
            notes.append(f"reader.batch_size {batch} lowered to {fits}, which divides a "
                         f"rank's {per_rank} samples: each file stays one rank's, as in the "
                         "job")
            batch = fits
    if per_rank < batch:
        if per_rank >= 1:
            notes.append(f"reader.batch_size {batch} lowered to {per_rank}, a rank's share")
            batch = per_rank
        else:
            spf = -(-ranks * batch // num_files)
            notes.append(f"dataset.num_samples_per_file raised to {spf} so that each of the "
                         f"{ranks} ranks gets a batch")
    k = reader_extra.get("sharding_block", 1)
    if k > 1 and per_rank >= k and (per_rank // batch * batch) % k:
        # the ranks' turns of k samples must fill the samples a rank reads an epoch (its
        # whole steps): the largest batch under the one seen that keeps them whole
        fits = max(b for b in range(1, batch + 1) if (per_rank // b * b) % k == 0)
        notes.append(f"reader.batch_size {batch} lowered to {fits}: a rank's steps of it "
                     f"read whole turns of {k} samples (reader.sharding_block)")
        batch = fits
    dataset_bytes = num_files * file_size * (ranks if layout == "replicated" else 1)
    if reader_extra.get("whole_file"):
        # each sample's load reads its whole file
        dataset_bytes *= spf
    epochs = 1 if read_type == "memory" else max(
        1, int(round(int(data["bytes_read"].sum()) / max(dataset_bytes, 1))))
    if "footer_reads_apart" in evidence and read_type != "memory":
        # the samples' reads alone over the samples' bytes: the footers read before each
        # (a file opened for every row group) are no pass over the data
        epochs = max(1, int(round(int(trace["length"].sum())
                                  / max(num_files * spf * record, 1))))
    if traits(fmt).rows and read_type != "memory":
        # the datasets' own bytes: libhdf5's sieve buffer reads 64 KiB about a small
        # selection of a contiguous dataset, many times the bytes asked for
        held = fit_patterns.h5d_datasets(job, set(data["name"]))
        asked, holds = (sum(v[k] for v in held.values()) for k in (1, 2))
        if asked and holds:
            by_h5d = max(1, int(round(asked / holds)))
            if by_h5d != epochs:
                notes.append(f"the H5Dread calls asked for {units.size(asked)} of datasets "
                             f"holding {units.size(holds)}: {by_h5d} epochs (libhdf5 read "
                             f"{units.size(int(data['bytes_read'].sum()))} beneath them)")
            evidence["h5d_epochs"] = by_h5d
            epochs = by_h5d
        capped = fit_patterns.capped_epochs(
            list(fit_patterns.h5d_file_reads(job, set(data["name"])).values()), spf, ranks) \
            if read_type == "on_demand" and epochs_fixed is None and layout == "multi" \
            and not reader_extra.get("access") else None
        if capped is not None:
            # each epoch read the same share of the data, its ranks stopping short of their
            # files' end: a step limit in every epoch
            epochs, per_epoch = capped
            capped_steps = max(1, -(-per_epoch // max(ranks, 1) // max(batch, 1)))
            evidence["capped_epochs"] = {"epochs": epochs, "samples": per_epoch,
                                         "steps": capped_steps}
            named = fit_patterns.named_count(data["name"].tolist())
            unread = named - num_files if named and named > num_files else 0
            notes.append(f"every epoch read the same {per_epoch} of the "
                         f"{num_files * spf} samples of the files read, a file a rank read in "
                         f"part: {epochs} epochs of at most {capped_steps} steps "
                         f"(train.total_training_steps {capped_steps}); "
                         + (f"the files' names count {named} (..._i_of_{named}): "
                            f"dataset.num_files_train {named}, {unread} of them beyond where "
                            "the ranks stopped" if unread else
                            "files no rank reached leave no record: the dataset may hold "
                            "more"))
            if unread:
                num_files = named
    overrun = fit_patterns.epoch_overrun(trace) \
        if read_type == "on_demand" and not threads and epochs_fixed is None else None
    if overrun:
        # the passes read ahead past each epoch's end are no epochs: reader.epoch_overrun
        epochs, files_ahead = overrun
        steps_ahead = max(1, int(round(files_ahead * spf / max(batch, 1))))
        reader_extra["epoch_overrun"] = steps_ahead
        evidence["epoch_overrun"] = {"epochs": epochs, "files": files_ahead}
        notes.append(f"each rank's {epochs} passes over its files were each followed by "
                     f"about {files_ahead} files of the next pass, read again when it came: "
                     f"an input pipeline reading ahead past the epoch's end (tf.data's "
                     f"prefetch over a repeated dataset), {epochs} epochs and "
                     f"reader.epoch_overrun {steps_ahead}")
    named = fit_patterns.named_count(data["name"].tolist()) \
        if "capped_epochs" not in evidence and layout == "multi" and trace is not None \
        and read_type == "on_demand" and shuffle == "off" else None
    if named and named > num_files:
        by_rank = {int(r): [data.loc[i, "name"] for i in set(g["id"].astype("uint64"))
                            if i in data.index]
                   for r, g in trace.groupby("rank")}
        reached = fit_patterns.named_prefixes(by_rank, named) if len(by_rank) == ranks \
            else None
        if reached:
            # each rank read the first files of its share of a dataset its files' names
            # count, the same ones every epoch: a step limit in every epoch
            capped_steps = max(1, -(-(reached * spf) // max(batch, 1)))
            evidence["capped_epochs"] = {"epochs": epochs, "samples": reached * spf * ranks,
                                         "steps": capped_steps, "named_files": named}
            notes.append(f"the files' names count {named} (..._i_of_{named}) and each rank "
                         f"read the first {reached} of its share of {named // ranks}, every "
                         f"epoch: dataset.num_files_train {named}, at most {capped_steps} "
                         f"steps an epoch (train.total_training_steps {capped_steps})")
            num_files = named
    if epochs_fixed is not None:
        epochs = epochs_fixed
    steps_read = _steps_of_a_partial_read(
        data, dataset_bytes, record, ranks, batch, read_type, reader_extra, epochs_fixed,
        int(trace["length"].sum()) if "parquet_columns" in evidence else None)
    if steps_read is not None:
        epochs = 1
        evidence["partial_read"] = {"share": int(data["bytes_read"].sum()) / dataset_bytes,
                                    "steps": steps_read}
        notes.append(f"the job read {evidence['partial_read']['share']:.0%} of its data "
                     f"files' bytes, once: train.total_training_steps {steps_read} (the steps "
                     f"of {batch} samples a rank read), not a whole epoch")
    if epochs > MAX_EPOCHS:
        notes.append(f"the data was read {epochs} times over (the same bytes again and "
                     f"again): epochs capped at {MAX_EPOCHS}")
        epochs = MAX_EPOCHS
    if traits(fmt).row_groups and data_reads is not None:
        footers, chunks = parquet_footer_reads(
            data_reads, {int(i): int(v) for i, v in data["size"].items()})
        opened_files = len(data) * epochs
        evidence["parquet_footer_reads"] = {"footers": footers, "chunks": chunks}
        # nearer one footer a file and epoch than one a batch (a file opened once an epoch,
        # a few more for a library's look at a file's schema, as pyarrow.dataset makes)
        per_batch = chunks / max(batch, 1)
        if opened_files < per_batch and footers < (opened_files + per_batch) / 2:
            reader_extra["parquet_open"] = "file"
            notes.append(f"{footers} footer reads for {chunks} row-group reads of "
                         f"{len(data)} files in {epochs} epochs: a file opened once while its "
                         "row groups are read, batch after batch (reader.parquet_open file)")
    dataset_extra = {}
    if "parquet_columns" in evidence:
        projection = evidence["parquet_columns"]
        columns, read = projection["columns"], projection["read"]
        groups = int(round(record / projection["period"]))
        if spf == 1 and groups >= 2:
            # a file loaded whole, a sample: its row groups' layouts side by side in the one
            # row (pre-buffered at once, as the file's loader read them)
            read = [j + g * len(columns) for g in range(groups) for j in read]
            columns = columns * groups
            notes.append(f"each file loaded whole, {groups} row groups at once: the sample's "
                         f"row holds {groups} times the row group's columns")
        evidence["parquet_columns"]["fitted"] = {"columns": len(columns), "read": len(read)}
        dataset_extra["parquet_columns"] = columns
        reader_extra["parquet_columns_read"] = read
        if projection["together"] and spf > 1:
            reader_extra["parquet_coalesce"] = "batch"
    io_extra = _write_first(job, data, basis, fmt, transfer_size, notes, evidence, epochs,
                            read_type)
    if io_extra.get("write_first") and traits(fmt).rows and not transfer_size:
        # io.write_first writes an HDF5 rank's runs of rows in reader.transfer_size calls
        # (HDF5 reads are not cut by it): the job's H5Dwrite size, in whole rows
        per_write = fit_patterns.h5d_bytes_per_write(job, set(data["name"]))
        if per_write and per_write >= 2 * record:
            transfer_size = per_write - per_write % record
            notes.append(f"the rows were written {per_write // record} to an H5Dwrite call "
                         f"({per_write} bytes): reader.transfer_size {transfer_size}, the "
                         "size io.write_first writes a rank's rows in (HDF5 reads are not cut "
                         "by it)")
    if io_extra.get("write_first") and interface in ("hdf5", "mpiio") \
            and layout != "multi" and collective_writes(job, set(data.index)):
        # written in collective calls, read in independent ones (h5py's fast read path
        # drops dset.collective): the interface is the reads'
        io_extra["write_collective"] = True
        notes.append(f"the shared data file was written in {collective_writes(job, set(data.index))} "
                     f"collective calls and read in independent ones: io.interface "
                     f"{interface}, io.write_collective")
    if io_extra.get("write_first"):
        shift = _read_shift(job, set(data.index), job.nprocs, notes, evidence)
        if shift:
            reader_extra["rank_shift"] = shift
    elif evidence.get("turn_shift"):
        shift = evidence["turn_shift"]
        reader_extra["rank_shift"] = shift
        notes.append(f"rank r read the turns of rank (r + {shift}) mod {job.nprocs} (IOR's -C "
                     f"or -Z on a file it did not write): reader.rank_shift {shift}")
    window = fit_patterns.shuffle_window(trace, record, job.nprocs, num_files * spf) \
        if layout == "shared" and shuffle == "seed" and read_type == "on_demand" \
        and not traits(fmt).rows and "access" not in reader_extra else None
    if window:
        # each rank's reads window by window, the same shuffled positions in each: IOR's -z
        # on a shared file of several segments
        for key in ("shuffle_scope", "shuffle_block", "sharding", "sharding_block"):
            reader_extra.pop(key, None)
        reader_extra["shuffle_window"] = window
        evidence["shuffle_window"] = window
        written = io_extra.get("write_order") == "shuffled"
        if written:
            io_extra["write_order"] = "read"
        notes.append(f"each rank read the shared file window by window ({window} samples, "
                     f"{window * record} bytes), the same positions in the same shuffled order "
                     f"in each: reader.shuffle_window {window}"
                     + (", the writes in the reads' order (io.write_order read)" if written
                        else ""))
    reads = None
    if trace is not None:
        ordered = trace.sort_values("start", kind="stable")
        reads = (ordered["start"].to_numpy(), ordered["length"].to_numpy(),
                 ordered["rank"].to_numpy())
    # the share of the data read before a checkpoint, over the trace's own reads (a trace of
    # POSIX alone misses numpy.fromfile's STDIO reads, which the counters hold)
    read_bytes = int(reads[1].sum()) if reads is not None else int(data["bytes_read"].sum())
    checkpoints = fit_checkpoints(whole_job, char.roles, reads, read_bytes,
                                  epochs, max(1, per_rank // max(batch, 1)), output_folder,
                                  notes, evidence)
    eval_keys = _evaluation(evaluation, eval_files, epochs, record, file_size, starts, notes,
                            evidence) if evaluation is not None else {}
    chunk = evidence.get("hdf5_chunk")
    if chunk and chunk >= record and chunk % record:
        # a sample of several datasets' fields (an image and its label, read together): the
        # largest dataset's chunk in whole samples, as the emulator's one dataset holds them
        evidence["hdf5_chunk"] = max(1, int(round(chunk / record))) * record
        notes.append(f"the datasets' chunks of {chunk} bytes hold about "
                     f"{evidence['hdf5_chunk'] // record} samples of {record} bytes (a sample "
                     "the fields of several datasets): dataset.chunk_size "
                     f"{evidence['hdf5_chunk']}")
    elif chunk and chunk < record and evidence.get("record_length_stdev"):
        # a chunk cutting samples of their own sizes: the emulator's chunks hold whole ones
        del evidence["hdf5_chunk"]
        notes.append(f"chunks of {chunk} bytes cut samples of their own sizes: fitted "
                     "contiguous")
    # (the chunk as stored, in its own rows: evidence's counts a sample's fields in)
    chunk = (fit_patterns.h5d_chunk_bytes(job, set(data["name"])) or evidence.get("hdf5_chunk")) \
        if "hdf5_chunk" in evidence else None
    if chunk and record < chunk <= CHUNK_CACHE_BYTES and traits(fmt).rows \
            and not evidence.get("compression") and trace is not None \
            and read_type == "on_demand":
        data_reads = trace[trace["length"] > 0]
        moved = data_reads.groupby("length")["length"].sum()
        if len(moved) and int(moved.idxmax()) < chunk \
                and not (data_reads["length"] >= chunk).any():
            # libhdf5's cache reads a chunk that fits it whole at a miss: rows read alone
            # inside their chunks, never a chunk whole, are read without one (h5py's
            # File(rdcc_nbytes=0))
            reader_extra["hdf5_chunk_cache"] = "off"
            notes.append(f"the rows were read on their own inside chunks of {chunk} bytes, "
                         "no chunk ever read whole (libhdf5's cache reads a chunk that fits "
                         "it whole at a miss): reader.hdf5_chunk_cache off")
    fields = []
    if traits(fmt).rows and interface.startswith("hdf5") and not index_format \
            and not reader_extra.get("access") and not io_extra.get("write_first"):
        vlen = bool(evidence.get("hdf5_vlen"))
        fields = fit_patterns.h5d_fields(job, set(data["name"]), record, vlen) or []
        if vlen:
            # a sample's size counts its fields, beside its sequence
            record += sum(f["bytes"] for f in fields)
        chunk_bytes = fit_patterns.h5d_chunk_bytes(job, set(data["name"])) \
            if fields and "hdf5_chunk" in evidence else None
        if chunk_bytes:
            # the rows' dataset's chunk in its own rows, as whole samples (a sample counts
            # its fields: DLIO's records split in datasets of equal parts)
            own = record - sum(f["bytes"] for f in fields)
            evidence["hdf5_chunk"] = max(1, int(round(chunk_bytes / max(own, 1)))) * record
        if fields:
            evidence["hdf5_fields"] = fields
            notes.append("each sample's row read with the same rows of "
                         f"{', '.join(f['name'] for f in fields)} (datasets read as often, "
                         f"as many rows): dataset.hdf5_fields, {record} bytes a sample "
                         "counting them")
    workload = {
        "model": {"name": name or f"fitted_{_stem(job)}",
                  **(checkpoints[0] if checkpoints else {})},
        "workflow": {"generate_data": True, "train": True,
                     **({"checkpoint": True} if checkpoints else {}),
                     **({"evaluation": True} if eval_keys else {})},
        "dataset": {"data_folder": data_folder, "format": index_format or fmt,
                    "num_files_train": num_files,
                    **({"num_subfolders_train": subfolders} if subfolders else {}),
                    **({"num_files_eval": eval_keys["files"]} if eval_keys else {}),
                    **({"num_subfolders_eval": eval_keys["subfolders"]}
                       if eval_keys and eval_keys["subfolders"] else {}),
                    "num_samples_per_file": spf, "record_length": record,
                    # a fitted sample is one column-chunk read: a row group of its own
                    **({"parquet_row_group_size": 1}
                       if traits(fmt).row_groups else {}),
                    **dataset_extra,
                    **{k: evidence[k] for k in ("hdf5_libver", "hdf5_vlen", "npz_layout",
                                                 "record_length_stdev", "content_fill")
                       if k in evidence},
                    **({"enable_chunking": True, "chunk_size": evidence["hdf5_chunk"]}
                       if "hdf5_chunk" in evidence else {}),
                    **({"hdf5_fields": fields} if fields else {}),
                    **({"compression": evidence["compression"]}
                       if "compression" in evidence else {})},
        "reader": {"batch_size": batch, **({"batch_size_eval": eval_keys["batch"]}
                                           if eval_keys else {}),
                   "read_threads": threads,
                   "transfer_size": transfer_size, "sample_shuffle": shuffle,
                   **reader_extra},
        "train": {"epochs": epochs, "computation_time": round(compute, 6),
                  **({"total_training_steps": steps_read} if steps_read is not None else {}),
                  **({"total_training_steps": evidence["capped_epochs"]["steps"]}
                     if "capped_epochs" in evidence else {}),
                  **({"seed": evidence["size_seed"]["seed"]} if "size_seed" in evidence
                     else {})},
        "io": {"interface": interface, "layout": layout, "read_type": read_type,
               **io_extra},
        **({"evaluation": eval_keys["evaluation"]} if eval_keys else {}),
        **({"checkpoint": checkpoints[1]} if checkpoints else {}),
        "output": {"folder": output_folder},
    }
    crops = fit_patterns.h5d_crops(job, set(data["name"])) \
        if traits(fmt).rows and not io_extra.get("write_first") and read_type == "on_demand" \
        and trace is not None else None
    if crops:
        _crop_workload(workload, crops, trace, len(data), notes, evidence, ranks)
    elif traits(fmt).rows and fit_core_driver.whole_file_reads(job, data):
        fit_core_driver.core_workload(workload, job, data, ranks, notes, evidence)
    if readers < whole_job.nprocs:
        workload["reader"]["reading_ranks"] = readers
        if evidence["idle_ranks_open"]:
            workload["reader"]["idle_ranks_open"] = True
    return Fit(workload=workload, ranks=whole_job.nprocs, evidence=evidence, notes=notes,
               sources=list(job.paths) if job.source == "darshan"
               else [os.path.dirname(job.paths[0])])


def _crop_workload(workload, crops, trace, num_files, notes, evidence, ranks):
    """The workload of a job that read crops of N-D datasets (fit_patterns.h5d_crops): the
    emulator's HDF5 volumes (dataset.volumes), a crop of each a sample, as many crops as the
    job read (one epoch: crops at random positions make no pass over the data to count), the
    steps timed from the reads beneath the crops (libhdf5's chunk reads, each the crops' share
    of them: its chunk cache serves some crops without a read)."""
    per_read = crops["reads"] / max(len(trace), 1)
    compute, batch, _, timing = _timeline(trace, 1, lambda r: np.full(len(r), per_read))
    crop_bytes = int(np.prod(crops["crop"])) * sum(v[1] for v in crops["volumes"])
    ds, io = workload["dataset"], workload["io"]
    for key in ("hdf5_fields", "enable_chunking", "chunk_size", "compression",
                "record_length_stdev", "content_fill"):
        ds.pop(key, None)
    spf = max(1, crops["reads"] // max(num_files, 1))
    ds.update({"num_samples_per_file": spf, "record_length": crop_bytes,
               "volume_shape": crops["shape"], "crop_shape": crops["crop"],
               "volumes": [{"name": n, "dtype": fit_patterns.FIELD_DTYPES.get(size, "uint8"),
                            "chunks": chunks} for n, size, chunks in crops["volumes"]]})
    workload["reader"] = {"batch_size": max(1, int(batch)), "read_threads": 0,
                          "transfer_size": 0, "sample_shuffle": "off"}
    workload["train"] = {"epochs": 1, "computation_time": round(compute, 6)}
    for key in [k for k in io if k.startswith("write_")]:
        io.pop(key)
    evidence["hdf5_crops"] = crops
    evidence["timeline"] = timing
    parts = fit_patterns.crop_parts(crops, trace, ranks)
    if parts is not None:
        # each sample's volume cut among the ranks, each reading its own part of every
        # sample: the crops tile the volume, dealt to the ranks a sample's parts at a time
        k, shuffled = parts
        evidence["crop_parts"] = k
        ds["crop_placement"] = "tiled"
        ds["num_samples_per_file"] = crops["shape"][0] * k
        epochs = max(1, int(round(crops["reads"] / (num_files * crops["shape"][0] * k))))
        workload["train"]["epochs"] = epochs
        workload["reader"].update({"sharding": "round_robin",
                                   "sample_shuffle": "seed" if shuffled else "off",
                                   **({"shuffle_block": k} if shuffled else {})})
        notes.append(f"each H5Dread a box of {crops['crop']} of a chunked N-D dataset (taken "
                     f"as a cube of {crops['shape']}: Darshan keeps no dimensions): one index "
                     f"of its first dimension, cut into {k} parts, one a rank, no chunk of a "
                     "rank's read by another: each rank reads its part of every sample (a "
                     "domain decomposition; dataset.crop_placement tiled, reader.sharding "
                     f"round_robin{f', reader.shuffle_block {k}' if shuffled else ''}), "
                     f"{epochs} epoch(s), the samples "
                     + ("shuffled" if shuffled else "in order"))
        return
    notes.append(f"each H5Dread a box of {crops['crop']} of a chunked N-D dataset (taken as a "
                 f"cube of {crops['shape']}: Darshan keeps no dimensions), not whole rows: "
                 f"crops, the emulator's HDF5 volumes (dataset.volumes "
                 f"{', '.join(v[0] for v in crops['volumes'])}), {crops['reads']} of them in "
                 "one epoch (crops at random positions make no pass over the data to count)")

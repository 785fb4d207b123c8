"""Evaluation phases of a training job, recovered from its DXT trace.

A training job that evaluates reads a second set of files (a validation set) apart from its
training files: between some of the training epochs, every rank stops reading training files,
reads its share of the evaluation files, and goes back to training. The two sets lie in
different folders (the DLIO benchmark's ``train/`` and ``valid/``, any program's own). This
module tells them apart by that pattern in time, not by the folders' names:

- the data files are grouped by the first folder below the folder all of them share
  (``.../data/train/3/f.npz`` and ``.../data/valid/f.npz``: ``train`` and ``valid``); more
  than MAX_SETS such folders are one dataset spread over folders (a zarr array's chunk
  folders ``c/0/0``, ``c/1/0``, ..., a folder a class), with no evaluation set;
- the group of the most bytes read is the training set; another group, of fewer bytes, is an
  evaluation set when, on every rank that read it, its reads come in runs that never
  interleave with the training set's reads, each run after some training reads, and as many
  runs on every rank (a stray read or two at a run's edge, a data loader's prefetch, is no run
  of its own); two groups as large, read in turn once a pass, may be one dataset in two
  folders or a training set evaluated after every epoch on as many files: the reads cannot
  tell, and they stay one training set;
- each run starts at the end of a pass over the training set (its files' bytes read over
  their extent: an epoch, or a load of a file read whole several times an epoch), and comes
  at most once a pass: folders read one after the other within a pass (a dataset's
  subfolders) are no evaluation; where the bytes miscount the passes (libhdf5's sieve
  buffer reads far more than a sample), phases after equal amounts of training, the first
  after a whole number of them, end passes too;
- each run is an evaluation phase; the share of a rank's training bytes read before it places
  it after an epoch of the training set (the fit's ``evaluation.eval_after_epoch``, then
  ``evaluation.epochs_between_evals``: dlio_mpi_analysis.fitting.fit_evaluation).

Sets that interleave in time (a dataset in several folders read together) are one training
set; without a DXT trace the phases cannot be seen, and nothing is split.
"""

import os

import numpy as np

# a run of reads of a set shorter than this share of the set's median run on that rank is a
# stray read at another run's edge (a loader's prefetch), not a phase
STRAY_RUN_SHARE = 0.1
# the most folders of data files that may be a training set and evaluation sets
MAX_SETS = 4
# how far from the end of a pass over the training set (in passes) a phase may start
PASS_TOLERANCE = 0.25


def set_of(names):
    """File id -> set name: the first folder below the deepest folder all the files share
    ("" for files directly in it)."""
    folders = {i: os.path.dirname(n) for i, n in names.items()}
    try:
        common = os.path.commonpath(list(folders.values())) if folders else ""
    except ValueError:      # absolute and relative names together: no common folder
        common = ""
    sets = {}
    for i, folder in folders.items():
        below = os.path.relpath(folder, common) if common else folder
        sets[i] = "" if below in (".", "") else below.split(os.sep)[0]
    return sets


def _runs(labels):
    """(label, first index, length) of each run of equal labels."""
    if len(labels) == 0:
        return []
    change = np.flatnonzero(labels[1:] != labels[:-1]) + 1
    starts = np.concatenate([[0], change])
    ends = np.concatenate([change, [len(labels)]])
    return [(labels[a], int(a), int(b - a)) for a, b in zip(starts, ends)]


def _phases_of_rank(labels, lengths, train, candidate):
    """The runs of ``candidate`` among one rank's reads of ``train`` and ``candidate`` (in
    time order), as (training bytes read before the run) for each run, stray reads left out
    (STRAY_RUN_SHARE); None when the rank's reads start with the candidate."""
    keep = (labels == train) | (labels == candidate)
    labels, lengths = labels[keep], lengths[keep]
    runs = _runs(labels)
    cand_runs = [n for label, _, n in runs if label == candidate]
    if not cand_runs:
        return []
    median = float(np.median(cand_runs))
    train_runs = [n for label, _, n in runs if label == train]
    train_median = float(np.median(train_runs)) if train_runs else 0.0
    # stray reads (a short run of either set inside a run of the other) are merged into
    # the run around them
    merged = []
    for label, first, n in runs:
        typical = median if label == candidate else train_median
        if merged and n < STRAY_RUN_SHARE * typical:
            continue
        if merged and merged[-1][0] == label:
            continue
        merged.append((label, first, n))
    if not merged or merged[0][0] != train:
        return None
    cumulative = np.concatenate([[0], np.cumsum(np.where(labels == train, lengths, 0))])
    return [int(cumulative[first]) for label, first, _ in merged if label == candidate]


def _passes(trace, ids, sets, train):
    """How many times over the training set's files were read: per file, its bytes read over
    its extent (the end of its farthest read), the median over the files."""
    mine = np.array([sets[int(i)] == train for i in ids])
    files, of = np.unique(ids[mine], return_inverse=True)
    lengths = np.asarray(trace["length"])[mine]
    ends = np.asarray(trace["offset"])[mine] + lengths
    moved = np.bincount(of, weights=lengths, minlength=len(files))
    extent = np.zeros(len(files))
    np.maximum.at(extent, of, ends)
    return float(np.median(moved / np.maximum(extent, 1)))


# how far from evenly spaced (a share of the spacing) phases after equal training may be
EVEN_SPACING = 0.05


def _evenly_spaced(before):
    """Whether phases placed at ``before`` (each the share of a rank's training bytes read
    before it) follow equal amounts of training, the first after a whole number of those
    (evaluations every N epochs): the passes over the training set then ended at each, what
    ever bytes each file's reads moved (libhdf5's sieve buffer reads far more than a sample,
    so the bytes over the files' extent count passes wrong)."""
    if len(before) < 2:
        return False
    step = np.diff(np.concatenate([[0.0], before]))
    spacing = float(np.median(step[1:]))
    if spacing <= 0 or (np.abs(step[1:] - spacing) > EVEN_SPACING * spacing).any():
        return False
    first = step[0] / spacing
    return abs(first - round(first)) <= EVEN_SPACING * max(first, 1) and round(first) >= 1


def evaluation_phases(trace, names):
    """The evaluation set of a job, or None: a dict with ``train_ids``, ``eval_ids``,
    ``phases`` (evaluation phases per rank), ``before_share`` (the median over the ranks of
    the share of the rank's training bytes read before each phase: times the epochs, the
    epoch each phase follows), ``trace`` (the evaluation set's reads) and ``set_names``.

    ``trace``: the data files' DXT reads (rank, id, start, length); ``names``: file id ->
    name of (at least) the files in the trace."""
    if trace is None or len(trace) == 0:
        return None
    ids = np.asarray(trace["id"]).astype(np.uint64)
    present = {int(i) for i in np.unique(ids)}
    sets = set_of({i: names.get(i, "") for i in present})
    if not 2 <= len(set(sets.values())) <= MAX_SETS:
        # more folders than a dataset's training, validation and test sets: a dataset
        # spread over folders (a zarr array's chunk folders, a folder a class)
        return None
    order = np.argsort(np.asarray(trace["start"]), kind="stable")
    label_of = np.array([sets[int(i)] for i in ids[order]])
    ranks = np.asarray(trace["rank"])[order]
    lengths = np.asarray(trace["length"])[order]
    moved = {s: int(lengths[label_of == s].sum()) for s in set(sets.values())}
    first = {s: int(np.flatnonzero(label_of == s)[0]) for s in moved}
    train = min(moved, key=lambda s: (-moved[s], first[s]))
    # an evaluation set moves fewer bytes than the training set: two sets as large, each
    # read in turn once a pass, are one dataset in two folders as much as a training set
    # and an evaluation after every epoch, and the reads cannot tell which
    candidates = sorted(s for s in moved if s != train and moved[s] < moved[train])
    return _evaluation_of(trace, ids, sets, label_of, ranks, lengths, train, candidates)


def _evaluation_of(trace, ids, sets, label_of, ranks, lengths, train, candidates):
    """evaluation_phases with ``train`` as the training set: the first of ``candidates``
    read in phases of its own, or None."""
    for candidate in candidates:
        per_rank = {}
        for rank in np.unique(ranks):
            mine = ranks == rank
            if not (label_of[mine] == candidate).any():
                continue
            phases = _phases_of_rank(label_of[mine], lengths[mine], train, candidate)
            if phases is None:
                per_rank = None
                break
            per_rank[int(rank)] = (phases, int(lengths[mine][label_of[mine] == train].sum()))
        if not per_rank or len({len(p) for p, _ in per_rank.values()}) != 1:
            continue
        # sets read together (a dataset in several folders, drawn at random) alternate
        # again and again; an evaluation comes at most once per pass over the training set
        passes = _passes(trace, ids, sets, train)
        if len(next(iter(per_rank.values()))[0]) > passes + 1:
            continue
        # each phase's place in the training: the share of the rank's training bytes
        # before it; an evaluation starts between two passes (folders read one after the
        # other within each pass, a dataset's subfolders, are no evaluation)
        before = np.atleast_1d(np.median([[b / max(total, 1) for b in phases]
                                          for phases, total in per_rank.values()], axis=0))
        at = before * passes
        if ((np.abs(at - np.round(at)) > PASS_TOLERANCE).any() or (np.round(at) < 1).any()) \
                and not _evenly_spaced(before):
            continue
        eval_ids = {i for i, s in sets.items() if s == candidate}
        return {"train_ids": {i for i, s in sets.items() if s == train},
                "eval_ids": eval_ids,
                "phases": len(next(iter(per_rank.values()))[0]),
                "before_share": [float(b) for b in before],
                "trace": trace[np.isin(ids, np.array(sorted(eval_ids), dtype=np.uint64))],
                "set_names": {"train": train, "evaluation": candidate}}
    return None

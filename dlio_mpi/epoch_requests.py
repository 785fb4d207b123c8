"""An epoch's read-ahead requests, built at once with numpy before its first step: each step's
batch grouped by file in the order files first appear in the batch (as readers.by_file groups
it, the order a loop over the samples reads them), one segment per file, its samples' byte
ranges from the file's index. The arrays are those engines.EpochRequests takes."""
from dataclasses import dataclass

import numpy as np


@dataclass
class Layout:
    """Where an epoch's samples lie in its requests (all int64 arrays).

    files      the files the epoch reads, one per slot (sorted)
    step_seg   segments of step s: step_seg[s]:step_seg[s+1]
    seg_slot   the slot of each segment's file
    seg_range  ranges of segment g: seg_range[g]:seg_range[g+1]
    range_at   each range's entry in the per-slot tables: slot * spf + sample within the file
    order      the steps' samples in request order, (steps, batch)"""
    files: np.ndarray
    step_seg: np.ndarray
    seg_slot: np.ndarray
    seg_range: np.ndarray
    range_at: np.ndarray
    order: np.ndarray

    def first_steps(self):
        """The step that first reads each slot."""
        slots, first_seg = np.unique(self.seg_slot, return_index=True)
        out = np.zeros(len(self.files), dtype=np.int64)
        out[slots] = np.searchsorted(self.step_seg, first_seg, side="right") - 1
        return out

    def last_use(self):
        """The slots in the order of their last use in the epoch (least recent first)."""
        rev = self.seg_slot[::-1]
        slots, at = np.unique(rev, return_index=True)
        return slots[np.argsort(-at, kind="stable")]

    def step_segments(self, step):
        """(slots, first range, range count) of each segment of a step."""
        g0, g1 = int(self.step_seg[step]), int(self.step_seg[step + 1])
        first = self.seg_range[g0:g1]
        return self.seg_slot[g0:g1], first, self.seg_range[g0 + 1:g1 + 1] - first


def group_by_file(plan, spf):
    """Each row of plan (steps, batch) reordered so that a file's samples follow each other,
    files in the order they first appear in the row, samples of a file in their order."""
    plan = np.asarray(plan, dtype=np.int64)
    steps, batch = plan.shape
    files = plan // spf
    srt = np.argsort(files, axis=1, kind="stable")
    fs = np.take_along_axis(files, srt, 1)
    start = np.ones(fs.shape, dtype=bool)
    start[:, 1:] = fs[:, 1:] != fs[:, :-1]
    # each sorted sample's group start, then the column where its file first appears
    at = np.maximum.accumulate(np.where(start, np.arange(batch), 0), axis=1)
    first = np.take_along_axis(srt, at, 1)
    cols = np.take_along_axis(srt, np.argsort(first * batch + srt, axis=1, kind="stable"), 1)
    return np.take_along_axis(plan, cols, 1)


def layout(plan, spf):
    """The Layout of an epoch's plan (steps, batch) of global sample numbers."""
    order = group_by_file(plan, spf)
    steps, batch = order.shape
    files = order // spf
    new = np.ones(files.shape, dtype=bool)
    new[:, 1:] = files[:, 1:] != files[:, :-1]
    flat_new = new.reshape(-1)
    seg_first = np.flatnonzero(flat_new)
    uniq, slot = np.unique(files.reshape(-1), return_inverse=True)
    slot = slot.reshape(-1).astype(np.int64)
    step_seg = np.zeros(steps + 1, dtype=np.int64)
    np.cumsum(new.sum(axis=1), out=step_seg[1:])
    return Layout(files=uniq.astype(np.int64), step_seg=step_seg,
                  seg_slot=slot[seg_first],
                  seg_range=np.append(seg_first, steps * batch).astype(np.int64),
                  range_at=slot * spf + (order.reshape(-1) % spf), order=order)


def segment_busy(lay, draws):
    """Per segment, the preprocessing in ns of its samples: draws (steps, batch) are the
    seconds drawn per sample in request order (as a loader draws them for its samples)."""
    flat = np.asarray(draws, dtype=np.float64).reshape(-1)
    if flat.size == 0:
        return np.zeros(0, dtype=np.int64)
    return (np.add.reduceat(flat, lay.seg_range[:-1]) * 1e9).astype(np.int64)

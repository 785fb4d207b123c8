"""A Parquet table read in part: the columns a loader projects, seen in a log.

A row group lays its columns' chunks side by side; a loader that reads some columns
(`ParquetFile.read_row_group(g, columns=[...])`, `pandas.read_parquet(columns=[...])`)
reads the chosen chunks and leaves holes where the others lie, the same holes in every row
group. The union of a file's reads is then runs of read bytes between holes that repeat
with the row group's period. Folding the file's first period from the data's start (after
the magic) gives the row group's layout: read and unread runs of bytes, which the emulator
writes as columns (dataset.parquet_columns) and reads in part
(reader.parquet_columns_read), pyarrow's pre-buffering merging adjacent chunks as in the
log.

pyarrow pre-buffers either a row group's chunks alone (read_row_group) or those of all
the row groups it reads at once (read_row_groups, read_table, pandas.read_parquet): then
the last chosen chunk of a row group and the first of the next, when adjacent, are one
read. Where the layout makes them adjacent, a run of the union made of one read is the
mark of reading at once; made of two, of a row group at a time.

For the rest of the fit, the reads of one row group (consecutive reads of a rank in one
period of its file) stand as one read of the whole period: a row group a sample."""
import numpy as np

# where a Parquet file's data begin: after the magic "PAR1"
DATA_START = 4
# periods of holes tried: the unread runs a row group holds
MOST_HOLES = 8
# the sums of a period's hole distances agree within this share
PERIOD_SPREAD = 0.1
# the files whose layouts are taken: at least this many holes a file (the distances of
# two periods or more, so that they can agree)
LEAST_HOLES = 3


def _spans(reads):
    """The union of (offset, length) reads: sorted, merged (start, end) runs."""
    spans = []
    for start, end in sorted(zip(reads["offset"].tolist(),
                                 (reads["offset"] + reads["length"]).tolist())):
        if spans and start <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    return spans


def _period(spans):
    """The row group's period in bytes, from where the holes begin: the shortest run of
    hole distances whose sums agree across the file; None when none does."""
    starts = np.array([end for (_, end) in spans[:-1]], np.int64)
    gaps = np.diff(starts)
    for m in range(1, MOST_HOLES + 1):
        whole = len(gaps) // m
        if whole < 2:
            break
        sums = gaps[:whole * m].reshape(whole, m).sum(axis=1)
        if sums.min() > 0 and sums.max() <= (1 + PERIOD_SPREAD) * sums.min():
            return int(np.median(sums))
    return None


def _layout(spans, period):
    """The row group's runs of bytes, read or not, folded from the file's first period:
    [(bytes, read)], adjacent runs of a kind joined."""
    lo, hi = DATA_START, DATA_START + period
    runs, at = [], lo
    for start, end in spans:
        start, end = max(start, lo), min(end, hi)
        if end <= start:
            continue
        if start > at:
            runs.append([start - at, False])
        runs.append([end - start, True])
        at = end
    if at < hi:
        runs.append([hi - at, False])
    return [tuple(r) for r in runs if r[0] > 0]


def parquet_columns(trace):
    """The projection a log's Parquet reads show (footer reads left out), or None when the
    files are read whole row group after row group: a dict of period (the row group's
    bytes), columns (the bytes of each run of the layout, in order), read (the positions of
    the runs read), together (row groups pre-buffered at once), files (those folded)."""
    layouts, together, files = [], [], 0
    for _, reads in trace.groupby("id", sort=False):
        spans = _spans(reads)
        if len(spans) - 1 < LEAST_HOLES:
            continue
        period = _period(spans)
        if period is None:
            continue
        runs = _layout(spans, period)
        if not any(not read for _, read in runs):
            continue
        files += 1
        layouts.append((period, runs))
        distinct = len(set(zip(reads["offset"].tolist(), reads["length"].tolist())))
        # one read a run of the union: the row groups' adjacent chunks read at once
        joined = runs[0][1] and runs[-1][1]
        together.append(joined and distinct <= len(spans))
    if not layouts:
        return None
    # the layout most files share (by its kinds of runs), each run's median bytes
    shapes = [tuple(read for _, read in runs) for _, runs in layouts]
    shape = max(set(shapes), key=shapes.count)
    chosen = [lay for lay, s in zip(layouts, shapes) if s == shape]
    columns = [int(np.median([runs[j][0] for _, runs in chosen])) for j in range(len(shape))]
    return {"period": int(np.median([p for p, _ in chosen])), "columns": columns,
            "read": [j for j, read in enumerate(shape) if read],
            "together": sum(together) * 2 > len(together), "files": files}


def row_group_reads(trace, period):
    """The trace with each rank's consecutive reads of one row group of a file (the period's
    fold from the data's start, by a read's middle byte) as one read of the whole row
    group, timed from the first's start to the last's end."""
    trace = trace.sort_values("start", kind="stable")
    group = ((trace["offset"] + trace["length"] // 2 - DATA_START) // period).to_numpy()
    ranks, ids = trace["rank"].to_numpy(), trace["id"].to_numpy()
    ends = trace["end"].to_numpy().astype(float)
    keep, end_of, latest = [], {}, {}
    for pos in range(len(trace)):
        here = (ids[pos], group[pos])
        before = latest.get(ranks[pos])
        if before is not None and before[0] == here:
            head = before[1]
            end_of[head] = max(end_of[head], ends[pos])
            continue
        keep.append(pos)
        end_of[pos] = ends[pos]
        latest[ranks[pos]] = (here, pos)
    merged = trace.iloc[keep].copy()
    merged["end"] = [end_of[p] for p in keep]
    merged["offset"] = DATA_START + group[keep] * period
    merged["length"] = period
    return merged

"""The report's figures, drawn with matplotlib's Agg canvas (no display, no pyplot state).

Every function takes a job (:class:`~dlio_mpi_analysis.loading.loader.DarshanJob`) and its Characterization and
returns PNG bytes, or None when the data for the figure is not in the job; its ``*_figure``
twin returns the matplotlib Figure. Each figure's caption (the title on its right) says what its
data is (:func:`data_source`): a Darshan log's DXT trace or counters, or a dlio_mpi run's own
op log and the layer of its calls.

- ``transfer_sizes``: operations per Darshan size bucket, per module and operation (POSIX,
  MPI-IO, H5D histograms; a STDIO-only dlio_mpi run uses its STDIO calls). The count over each
  bar is left out where it would overlap another, the largest counts kept first; the caption
  says how many were left out.
- ``timeline``: every traced read and write, one row per rank, from the DXT trace (POSIX, else
  STDIO, else MPI-IO) or the op log's calls; calls shorter than MIN_WIDTH of the run time are
  drawn that wide. Without them: each rank's first-to-last read and write span from the
  counters' timestamps (a record reduced over all ranks as a band across them). A rank's reads
  are drawn just below its row, its writes just above.
- ``rank_balance``: bytes read and written per rank (the totals' modules: POSIX + STDIO, or the
  layer above POSIX a source observed); bytes of records reduced over all ranks (shared
  files) are spread evenly over the ranks and drawn hatched as "shared", their total in the
  caption.
- ``bandwidth``: bytes per second over time, read and write, in BINS bins over the run; a
  call's bytes are spread evenly over its duration. From the trace or the op log's calls,
  else from HEATMAP bins.
"""

import io

import matplotlib

matplotlib.use("Agg")
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
import numpy as np  # noqa: E402

from dlio_mpi.display import units  # noqa: E402

from dlio_mpi_analysis.characterization.counters import SIZE_BUCKETS, SPECS  # noqa: E402
from dlio_mpi_analysis.loading.oplog_records import size_buckets  # noqa: E402
from dlio_mpi_analysis.loading.trace_ops import segments_frame  # noqa: E402

MIN_WIDTH = 0.002
BINS = 100
MAX_BARS = 64  # more ranks than this: bytes per rank drawn as a sorted curve
DXT_PREFERENCE = ("DXT_POSIX", "DXT_STDIO", "DXT_MPIIO")
COLORS = {"read": "#1f77b4", "write": "#d62728"}
ROW_OFFSET = {"read": -0.15, "write": 0.15}  # reads and writes of a rank side by side
BUCKET_LABELS = ("0-100", "100-1K", "1K-10K", "10K-100K", "100K-1M", "1M-4M", "4M-10M",
                 "10M-100M", "100M-1G", "1G+")
MIB = 2**20
# the layer an op log's calls were taken at, by the trace module they stand in for
LAYER_OF_TRACE = {"DXT_POSIX": "POSIX", "DXT_STDIO": "STDIO", "DXT_MPIIO": "MPI-IO"}


def _figure(height=4.0):
    fig = Figure(figsize=(9, height), dpi=100)
    FigureCanvasAgg(fig)
    # fixed margins: a tight layout would draw every figure twice
    fig.subplots_adjust(left=0.09, right=0.98, bottom=0.5 / height + 0.02,
                        top=1 - 0.4 / height)
    return fig


def _titles(ax, title, detail=None):
    ax.set_title(title, loc="left")
    if detail:
        ax.set_title(detail, loc="right", fontsize=8, color="#555555")


def _png_of(fig):
    return None if fig is None else _png(fig)


def _png(fig):
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", pil_kwargs={"compress_level": 3})
    return buffer.getvalue()


def merged_spans(rank, start, end, gap):
    """Per rank, the union of [start, end) intervals, with intervals less than ``gap`` apart
    joined (what a figure can show): (rank, start, end) arrays."""
    order = np.lexsort((start, rank))
    rank, start, end = rank[order], start[order], end[order]
    if not len(rank):
        return rank, start, end
    same = np.r_[False, rank[1:] == rank[:-1]]
    reach = _grouped_cummax(np.cumsum(~same), end)
    new = np.r_[True, ~same[1:] | (start[1:] > reach[:-1] + gap)]
    span = np.cumsum(new) - 1
    out_end = np.zeros(span[-1] + 1)
    np.maximum.at(out_end, span, end)
    return rank[new], start[new], out_end


def _grouped_cummax(group, values):
    """Running maximum of values within each run of equal (sorted) group labels."""
    offset = (group - group[0]) * (float(values.max() - values.min()) + 1.0)
    return np.maximum.accumulate(values - values.min() + offset) - offset + values.min()


def _as_frame(table):
    """A loader Table (a trace's op as its names) as the DataFrame the figures read; None and
    a DataFrame as they are."""
    if table is None or not hasattr(table, "rows"):
        return table
    return segments_frame(table) if "op" in table else table.frame()


def _trace(job):
    for name in DXT_PREFERENCE:
        frame = (job.dxt_segments or {}).get(name)
        if frame is not None and not frame.empty:
            return name, _as_frame(frame)
    return None, None


def data_source(job, trace=None):
    """What a figure's data is, for its caption: the module's DXT trace of a Darshan log, or a
    dlio_mpi run's own op log (its calls at that layer); without ``trace``, the counters of the
    totals' modules (POSIX + STDIO, or the layer above POSIX a source observed)."""
    if job.source == "oplog":
        return f"dlio_mpi op log, {LAYER_OF_TRACE.get(trace, 'all')} calls" if trace \
            else "dlio_mpi op log"
    return f"{trace} trace" if trace else "Darshan counters"


def _thin_labels(fig, labels):
    """Bar labels that would overlap one another are left out, the largest counts kept first:
    a bar chart with many narrow bars shows what fits, never run-together digits."""
    renderer = fig.canvas.get_renderer()
    kept = []
    for label, _ in sorted(labels, key=lambda pair: -pair[1]):
        if not label.get_text():
            continue
        box = label.get_window_extent(renderer)
        if any(box.overlaps(other) for other in kept):
            label.set_visible(False)
        else:
            kept.append(box)


def transfer_sizes(job, char):
    return _png_of(transfer_sizes_figure(job, char))


def transfer_sizes_figure(job, char):
    series = []
    for name, metrics in char.modules.items():
        for op, sizes in (("read", metrics.read_sizes), ("write", metrics.write_sizes)):
            if sizes is not None and sizes.operations:
                series.append((f"{name} {op}", [sizes.histogram[b] for b in SIZE_BUCKETS]))
    stdio = _as_frame((job.dxt_segments or {}).get("DXT_STDIO"))
    stdio_only = not series and stdio is not None and not stdio.empty
    if stdio_only:
        for op in ("read", "write"):
            lengths = stdio.loc[stdio["op"] == op, "length"].to_numpy()
            if len(lengths):
                series.append((f"STDIO {op} (trace)",
                               np.bincount(size_buckets(lengths), minlength=10).tolist()))
    if not series:
        return None
    fig = _figure()
    ax = fig.add_subplot()
    width = 0.8 / len(series)
    x = np.arange(len(SIZE_BUCKETS))
    labels = []
    for i, (label, counts) in enumerate(series):
        bars = ax.bar(x + (i - (len(series) - 1) / 2) * width, counts, width, label=label)
        texts = ax.bar_label(bars, labels=[f"{c:,}" if c else "" for c in counts], fontsize=7)
        labels += list(zip(texts, counts))
    ax.set_xticks(x, BUCKET_LABELS)
    ax.set_xlabel("bytes per operation (Darshan size buckets)")
    ax.set_ylabel("operations")
    ax.legend(fontsize=8)
    _thin_labels(fig, labels)
    shown = sum(label.get_visible() and bool(label.get_text()) for label, _ in labels)
    counted = sum(bool(label.get_text()) for label, _ in labels)
    _titles(ax, "Transfer sizes", "; ".join(
        [data_source(job, "DXT_STDIO") if stdio_only else data_source(job)]
        + ([f"{counted - shown} of {counted} counts left out where they would overlap"]
           if shown < counted else [])))
    return fig


def timeline(job, char):
    return _png_of(timeline_figure(job, char))


def timeline_figure(job, char):
    name, frame = _trace(job)
    fig = _figure(max(3.0, min(8.0, 2.0 + 0.08 * job.nprocs)))
    ax = fig.add_subplot()
    run = max(job.run_time, 1e-9)
    if frame is not None:
        for op in ("read", "write"):
            part = frame[frame["op"] == op]
            if part.empty:
                continue
            rank, start, end = merged_spans(part["rank"].to_numpy(), part["start"].to_numpy(),
                                            part["end"].to_numpy(), MIN_WIDTH * run / 4)
            end = np.maximum(end, start + MIN_WIDTH * run)
            rank = rank + ROW_OFFSET[op]
            lines = np.stack([np.stack([start, rank], 1), np.stack([end, rank], 1)], 1)
            ax.add_collection(LineCollection(lines, colors=COLORS[op], label=op,
                                             linewidths=_line_width(job.nprocs)))
        source = f"{data_source(job, name)}, {len(frame):,} calls"
    else:
        spans = _counter_spans(job, char)
        if not spans:
            return None
        for op, rank, first, last in spans:
            last = max(last, first + MIN_WIDTH * run)
            if rank < 0:  # a record reduced over all ranks: a band across them
                ax.fill_between([first, last], -0.5, job.nprocs - 0.5, color=COLORS[op],
                                alpha=0.25, linewidth=0)
                continue
            row = rank + ROW_OFFSET[op]
            ax.plot([first, last], [row, row], color=COLORS[op],
                    linewidth=_line_width(job.nprocs), solid_capstyle="butt")
        for op in ("read", "write"):
            ax.plot([], [], color=COLORS[op], label=op)
        source = f"first to last call per rank ({data_source(job)})"
        if any(rank < 0 for _, rank, _, _ in spans):
            source += "; bands: records of all ranks"
    ax.set_xlim(0, run * 1.01)
    ax.set_ylim(-0.5 - 0.02 * job.nprocs, job.nprocs - 0.5 + 0.02 * job.nprocs)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("seconds since the job's start")
    ax.set_ylabel("rank")
    _titles(ax, "I/O timeline per rank", source)
    ax.legend(fontsize=8, loc="upper right")
    return fig


def _line_width(nprocs):
    return max(0.5, min(8.0, 200.0 / max(nprocs, 1)))


def _counter_spans(job, char):
    spans = []
    for name in char.totals.basis:
        frame = _as_frame(job.records[name])
        prefix = SPECS[name].name
        for op, word in (("read", "READ"), ("write", "WRITE")):
            first, last = f"{prefix}_F_{word}_START_TIMESTAMP", f"{prefix}_F_{word}_END_TIMESTAMP"
            used = frame[frame[last] > 0]
            for rank, rows in used.groupby("rank"):
                spans.append((op, int(rank), float(rows[first].min()), float(rows[last].max())))
    return spans


def bytes_per_rank(job, char):
    """Bytes each rank read and wrote in its own records, and the bytes of the records Darshan
    reduced over all ranks (rank -1: files every rank opened), which belong to no one rank:
    ({"read": array, "write": array}, {"read": bytes, "write": bytes}), POSIX + STDIO."""
    own_bytes = {op: np.zeros(job.nprocs, np.int64) for op in ("read", "write")}
    shared = {"read": 0, "write": 0}
    for name in char.totals.basis:
        frame = _as_frame(job.records[name])
        spec = SPECS[name]
        own = frame["rank"].to_numpy() >= 0
        ranks = frame["rank"].to_numpy()[own]
        for op, counter in (("read", spec.bytes_read), ("write", spec.bytes_written)):
            moved = frame[counter].clip(lower=0).to_numpy()
            own_bytes[op] += np.bincount(ranks, weights=moved[own],
                                         minlength=job.nprocs)[:job.nprocs].astype(np.int64)
            shared[op] += int(moved[~own].sum())
    return own_bytes, shared


def rank_balance(job, char):
    return _png_of(rank_balance_figure(job, char))


def rank_balance_figure(job, char):
    """Bytes read and written per rank (:func:`bytes_per_rank`). The shared records' bytes are
    spread evenly over the ranks and drawn apart, hatched, as "shared", so a job whose I/O is
    all in shared files still shows its volume per rank."""
    own_bytes, shared = bytes_per_rank(job, char)
    if not (own_bytes["read"].any() or own_bytes["write"].any() or any(shared.values())):
        return None
    nprocs = max(job.nprocs, 1)
    layers = [(f"{op_label}", own_bytes[op], COLORS[op], None)
              for op, op_label in (("read", "read"), ("write", "written"))]
    layers += [(f"{op_label}, shared (spread evenly)",
                np.full(job.nprocs, shared[op] / nprocs), COLORS[op], "//")
               for op, op_label in (("read", "read"), ("write", "written"))]
    layers = [layer for layer in layers if layer[1].any()]
    most = max(sum(values for _, values, _, _ in layers).max(), 1)
    unit = "MiB" if most >= MIB else "KiB"
    scale = units.UNIT_BYTES[unit]
    fig = _figure()
    ax = fig.add_subplot()
    if job.nprocs <= MAX_BARS:
        x = np.arange(job.nprocs)
        bottom = np.zeros(job.nprocs)
        for label, values, color, hatch in layers:
            ax.bar(x, values / scale, bottom=bottom, color=color, label=label, hatch=hatch,
                   alpha=0.45 if hatch else 1.0, edgecolor="white" if hatch else None)
            bottom += values / scale
        ax.set_xlabel("rank")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    else:
        total = sum(values for _, values, _, _ in layers)
        order = np.argsort(total)[::-1]
        for label, values, color, hatch in layers:
            ax.plot(values[order] / scale, color=color, label=label,
                    linestyle="--" if hatch else "-")
        ax.set_xlabel("ranks, sorted by bytes")
    ax.set_ylabel(unit)
    spread = sum(shared.values())
    _titles(ax, "Bytes per rank", f"{data_source(job)}, {' + '.join(char.totals.basis)}" + (
        f"; shared records: {units.size(spread)}, spread evenly over {job.nprocs} ranks"
        if spread else ""))
    ax.legend(fontsize=8)
    return fig


def bandwidth(job, char):
    return _png_of(bandwidth_figure(job, char))


def bandwidth_figure(job, char):
    name, frame = _trace(job)
    run = max(job.run_time, 1e-9)
    edges = np.linspace(0.0, run, BINS + 1)
    rates = {}
    if frame is not None:
        for op in ("read", "write"):
            part = frame[frame["op"] == op]
            if not part.empty:
                rates[op] = _spread(part["start"].to_numpy(), part["end"].to_numpy(),
                                    part["length"].to_numpy().astype(float), edges)
        source = data_source(job, name)
    else:
        heatmap = next((job.heatmap_bins[m] for m in ("POSIX", "STDIO", "MPI-IO")
                        if m in job.heatmap_bins), None)
        if heatmap is None:
            return None
        edges = heatmap["edges"]
        width = np.diff(edges)
        for op in ("read", "write"):
            if heatmap[op].any():
                rates[op] = heatmap[op] / np.where(width > 0, width, 1)
        source = "Darshan HEATMAP bins"
    if not rates:
        return None
    fig = _figure(3.5)
    ax = fig.add_subplot()
    middle = (edges[:-1] + edges[1:]) / 2
    for op, rate in rates.items():
        ax.plot(middle, rate / MIB, color=COLORS[op], label=op, drawstyle="steps-mid")
    ax.set_xlabel("seconds since the job's start")
    ax.set_ylabel("MiB/s")
    _titles(ax, "Bandwidth over time", source)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    return fig


def _spread(start, end, length, edges):
    """Bytes per second in each bin, each call's bytes spread evenly over its duration."""
    width = edges[1] - edges[0]
    end = np.maximum(end, start)
    first = np.clip((start / width).astype(np.int64), 0, len(edges) - 2)
    last = np.clip((end / width).astype(np.int64), 0, len(edges) - 2)
    total = np.zeros(len(edges) - 1)
    one = first == last
    np.add.at(total, first[one], length[one])
    for s, e, n, b0, b1 in zip(start[~one], end[~one], length[~one], first[~one], last[~one]):
        bins = np.arange(b0, b1 + 1)
        overlap = np.minimum(edges[bins + 1], e) - np.maximum(edges[bins], s)
        total[bins] += n * np.maximum(overlap, 0) / max(e - s, 1e-12)
    return total / width


FIGURES = (
    ("transfer_sizes", "Transfer-size histogram", transfer_sizes),
    ("timeline", "I/O timeline per rank", timeline),
    ("rank_balance", "Bytes per rank", rank_balance),
    ("bandwidth", "Bandwidth over time", bandwidth),
)


def all_figures(job, char):
    """name -> (title, PNG bytes) of every figure the job has data for, in FIGURES order."""
    out = {}
    for name, title, draw in FIGURES:
        png = draw(job, char)
        if png is not None:
            out[name] = (title, png)
    return out

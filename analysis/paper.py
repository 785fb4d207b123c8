"""The DLIO paper's characterization study, on the emulator: the six applications the paper
characterized (its shipped workloads), scaled down, run under mpiexec with their op logs kept,
characterized from the op logs, tabulated as the paper tabulates them and set beside the real
applications' figures (analysis.paper_reference).

``run_paper(out_dir, ranks=2)`` runs them one after another and returns a :class:`PaperStudy`;
``render_paper(study)`` is the table. The scaled-down runs keep each application's format,
layout, interface, access pattern, chunking and transfer size; they shrink the file count and
samples per file (in proportion to the rank count, files large enough that each is read in many
transfers, as the real ones were) and run one epoch.

Compute per step is calibrated on the storage under test: a probe run of each application
without compute measures the I/O time per step (the slowest rank's I/O time over its steps)
and the time per step (I/O and the loop's own time), and the measured run computes
io_step / share - step per step, share being the real application's I/O share of run time.
"""

import glob
import json
import os
import warnings
from dataclasses import dataclass, field

from dlio_mpi import summary_layout
from dlio_mpi.safe_files import write_whole

from .characterize import characterize
from .errors import AnalysisWarning
from .launch import LaunchError, run_emulator
from .paper_reference import REAL, comparison, render_comparison
from .text import _bytes, _share

APPS = ("cosmic_tagger", "ffn", "imagenet", "cosmoflow_paper", "frnn", "candle_nt3")
RUN_TIMEOUT_S = 300
MIN_COMPUTE_S = 0.0005


def scaled_overrides(app, ranks):
    """The overrides that shrink workload ``app`` for ``ranks`` processes."""
    return [f"{key}={value}" for key, value in {
        "cosmic_tagger": {"dataset.num_samples_per_file": 64 * ranks,
                          "dataset.volume_shape": "[33554432]"},
        "ffn": {"dataset.num_samples_per_file": 64 * ranks,
                "dataset.volume_shape": "[384,384,384]"},
        "imagenet": {"dataset.num_files_train": 2 * ranks, "dataset.num_samples_per_file": 96,
                     "reader.shuffle_size": 32},
        "cosmoflow_paper": {"dataset.num_files_train": 2 * ranks,
                            "dataset.num_samples_per_file": 2},
        "frnn": {"dataset.num_files_train": 8 * ranks},
        # batches of 4 (not 20): enough steps after the load for its share to be measured
        "candle_nt3": {"dataset.num_samples_per_file": 32 * ranks, "reader.batch_size": 4},
    }[app].items()] + ["train.epochs=1"]


def calibrated_compute(io_step_s, share, step_s=None):
    """Compute per step that makes I/O ``share`` of a step: a step of ``io_step_s`` seconds of
    I/O (and, when ``step_s`` is given, ``step_s`` seconds in all without compute: I/O and the
    loop's own time) then lasts io_step_s / share."""
    if not share or share >= 1:
        return MIN_COMPUTE_S
    busy = step_s if step_s is not None else io_step_s
    return max(MIN_COMPUTE_S, io_step_s / share - busy)


@dataclass
class PaperStudy:
    """Rows of the paper's table (one dict per application, PAPER_COLUMNS keys), and where each
    run's outputs are."""

    ranks: int
    rows: list
    run_dirs: dict
    characterizations: dict = field(default_factory=dict, repr=False)

    def to_dict(self):
        return {"ranks": self.ranks, "rows": self.rows, "run_dirs": self.run_dirs,
                "comparison": comparison(self.rows)}


class PaperError(LaunchError):
    """A run of the study failed; the message names the application and ends with its output."""


def run_app(app, out_dir, ranks, launcher=None, python=None, extra=()):
    """Run one scaled-down application; returns its run directory."""
    run_dir = os.path.join(out_dir, "runs", app)
    data_dir = os.path.join(out_dir, "data", app)
    for stale in glob.glob(os.path.join(run_dir, "oplog_rank*.npz")):
        os.unlink(stale)  # a previous run's, perhaps of more ranks
    try:
        run_emulator(app, ranks, ["run", f"workload={app}", f"dataset.data_folder={data_dir}",
                                  f"output.folder={run_dir}", "io.keep_oplog=true",
                                  *scaled_overrides(app, ranks), *extra],
                     launcher=launcher, python=python, timeout=RUN_TIMEOUT_S)
    except LaunchError as e:
        raise PaperError(str(e)) from None
    return run_dir


def training_time(run_dir):
    """Seconds of a run's training part (its load, epochs and evaluations, from summary.json):
    the run time the paper's I/O shares are taken over, since a scaled-down run's start-up
    (imports, MPI_Init, checks: a second or so) would weigh on them as it does not on a real
    application's hours."""
    _, s = summary_layout.load(run_dir)
    return (s.get("load") or {}).get("duration_s", 0.0) + sum(
        e.get("duration_s", 0.0) for e in s.get("epochs", []) + s.get("evaluations", []))


def probe_step(run_dir):
    """(I/O time per step, time per step) of a run without compute: the slowest rank's I/O
    time and the run's training time, over its steps. A load of input read at start counts
    towards the steps with its wall time (summary.json: the slowest rank's), the time the
    training waits for it; otherwise the I/O time is Darshan's estimate from the op log."""
    _, s = summary_layout.load(run_dir)
    steps = max(1, int(s.get("steps_per_epoch", 1)))
    if s.get("load"):
        io = s["load"].get("duration_s", 0.0) + sum(e.get("io_wait_s_max", 0.0)
                                                   for e in s.get("epochs", []))
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AnalysisWarning)
            io = characterize(run_dir).totals.io_time.slowest_rank
    return io / steps, training_time(run_dir) / steps


def run_paper(out_dir, ranks=2, launcher=None, python=None, apps=APPS, calibrate=True,
              progress=None):
    """Run the study into ``out_dir`` (data/, runs/ below it) and characterize every run.
    With calibrate, each application runs first without compute (the probe) and then with the
    compute per step that gives its real I/O share on this storage."""
    os.makedirs(out_dir, exist_ok=True)
    rows, run_dirs, chars, compute = [], {}, {}, {}
    for app in apps:
        extra = []
        if calibrate:
            if progress:
                progress(f"{app}: probe run")
            probe = run_app(app, out_dir, ranks, launcher, python, ["train.computation_time=0"])
            io_step, step = probe_step(probe)
            compute[app] = calibrated_compute(io_step, REAL.get(app, {}).get("io_share"), step)
            extra = [f"train.computation_time={compute[app]:.6g}"]
        if progress:
            progress(f"{app}: run")
        run_dirs[app] = run_app(app, out_dir, ranks, launcher, python, extra)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AnalysisWarning)
            chars[app] = characterize(run_dirs[app])
        rows.append(paper_row(app, chars[app]))
        busy = chars[app].totals.io_time.slowest_rank
        train_s = training_time(run_dirs[app])
        if busy is not None and train_s > 0:
            rows[-1]["io_share"] = min(1.0, busy / train_s)
        if app in compute:
            rows[-1]["computation_time"] = compute[app]
    return PaperStudy(ranks=ranks, rows=rows, run_dirs=run_dirs, characterizations=chars)


PAPER_COLUMNS = (
    ("application", "application"), ("format", "format"), ("files", "files"),
    ("sharing", "shared / unique"), ("transfer", "transfer size min / median / max"),
    ("sequential", "sequential"), ("input", "input read"), ("interface", "interface"),
    ("io_share", "I/O share of run time"),
)
DXT_PREFERENCE = ("DXT_POSIX", "DXT_STDIO", "DXT_MPIIO")


def paper_row(app, c):
    """The paper's row for one characterization: data format (the one reading the most
    bytes), files (POSIX + STDIO), shared / unique files, read sizes (min / median / max from
    the trace, else Darshan buckets), sequential reads (% of POSIX reads, Darshan's
    definition: a record's first read, at offset 0, is not sequential), whether input is
    read at start or on demand (trace), interfaces, and the slowest rank's I/O time over the
    run time."""
    trace = next((c.dxt[name] for name in DXT_PREFERENCE
                  if name in c.dxt and c.dxt[name].read_sizes is not None), None)
    if trace is not None:
        s = trace.read_sizes
        transfer = [s.min, s.median, s.max]
        transfer_text = " / ".join(_bytes(v) for v in transfer)
    else:
        sizes = next((m.read_sizes for m in c.modules.values()
                      if m.read_sizes is not None and m.read_sizes.operations), None)
        transfer = None if sizes is None else [sizes.min_bucket, sizes.median_bucket,
                                               sizes.max_bucket]
        transfer_text = "-" if transfer is None else " / ".join(transfer)
    posix = c.modules.get("POSIX")
    files = c.totals.files
    return {
        "application": app,
        "xfer_mean": None if trace is None else float(trace.read_sizes.mean),
        "xfer_median": None if trace is None else float(trace.read_sizes.median),
        "consecutive_pct": None if posix is None else posix.consecutive_read_pct,
        "format": next(iter(c.data_formats), None),
        "files": files.total,
        "shared_files": files.shared,
        "unique_files": files.unique,
        "sharing": f"{files.shared} / {files.unique}",
        "transfer_sizes": transfer,
        "transfer": transfer_text,
        "sequential_pct": None if posix is None else posix.sequential_read_pct,
        "input_read": None if trace is None else trace.read_pattern,
        "interfaces": list(c.interfaces),
        "io_share": c.totals.io_time.slowest_rank_share,
        "bytes_read": c.totals.bytes_read,
    }


def render_paper(study):
    """The study as a plain-text table in the paper's form."""
    rows = []
    for row in study.rows:
        rows.append([
            row["application"], row["format"] or "-", str(row["files"]), row["sharing"],
            row["transfer"],
            "-" if row["sequential_pct"] is None else f"{row['sequential_pct']:.0f}%",
            row["input_read"] or "-", ", ".join(row["interfaces"]) or "-",
            _share(row["io_share"]),
        ])
    header = [title for _, title in PAPER_COLUMNS]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [f"The DLIO paper's characterization, emulated on {study.ranks} ranks "
             f"(scaled down; from the runs' op logs)", ""]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip()
              for r in [header, ["-" * w for w in widths], *rows]]
    return "\n".join(lines) + "\n\n" + render_comparison(study.rows, study.ranks)


def summary_line(study):
    """One JSON object: application -> io_share, files, xfer_mean, xfer_median, seq, consec
    (the emulated figures), with the real ones, the errors and whether each is within its
    target."""
    return json.dumps(comparison(study.rows), separators=(",", ":"))


def write_paper(study, out_dir):
    """paper.txt and paper.json in ``out_dir``; returns their paths."""
    text_path, json_path = os.path.join(out_dir, "paper.txt"), os.path.join(out_dir,
                                                                             "paper.json")
    write_whole(text_path, render_paper(study), fsync=True)
    write_whole(json_path, json.dumps(study.to_dict(), indent=1), fsync=True)
    return text_path, json_path

"""The DLIO paper's characterization study, on the emulator: the six applications the paper
characterized (its shipped workloads), scaled down, run under mpiexec with their op logs kept,
characterized from the op logs, tabulated as the paper tabulates them and set beside the real
applications' figures (dlio_mpi_analysis.paper_study.paper_reference).

``run_paper(out_dir, ranks=2)`` runs them one after another and returns a :class:`PaperStudy`;
``render_paper(study)`` is the table. The scaled-down runs keep each application's format,
layout, interface, access pattern, chunking and transfer size; they shrink the file count and
samples per file (in proportion to the rank count, files large enough that each is read in many
transfers, as the real ones were) and run one epoch.

Compute per step is calibrated on the storage under test: a probe run of each application
without compute measures the I/O time per step (the slowest rank's I/O time over its steps)
and the time per step (I/O and the loop's own time), and the measured run computes
io_step / share - step per step, share being the real application's I/O share of run time.
The share a run reaches follows the storage of the moment (a busy machine's I/O time varies
from run to run), so the measured run is repeated, its compute corrected (from the I/O time
and the time besides compute measured so far, medians over the runs; once runs lie on both
sides of the share, between them) until its share is within SHARE_AIM of the real one or
CALIBRATION_RUNS runs were made; the run closest to the real share is kept. Each row reports the share its run reached, its target, every run's
compute and share, and whether the share is within SHARE_TOLERANCE of the target.
"""

import glob
import json
import os
import shutil
import warnings
from dataclasses import dataclass, field

from dlio_mpi.display import tables, units
from dlio_mpi.run import summary_layout
from dlio_mpi.files.safe_files import write_whole

from dlio_mpi_analysis.characterization.characterize import characterize
from dlio_mpi_analysis.errors import AnalysisWarning
from dlio_mpi_analysis.replays.launch import LaunchError, run_emulator
from dlio_mpi_analysis.paper_study.paper_reference import REAL, TARGETS, comparison, render_comparison
from dlio_mpi_analysis.characterization.text import _share

APPS = ("cosmic_tagger", "ffn", "imagenet", "cosmoflow_paper", "frnn", "candle_nt3")
RUN_TIMEOUT_S = 300
MIN_COMPUTE_S = 0.0005
# a calibrated run's I/O share must be within SHARE_TOLERANCE of the real one (relative); runs
# stop at one within SHARE_AIM, closer, so that the next run's noise does not matter
SHARE_TOLERANCE = TARGETS["io_share"][1]
SHARE_AIM = 0.10
CALIBRATION_RUNS = 10


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


def corrected_compute(compute_s, io_s, train_s, steps, share):
    """Compute per step for the next run, from a run that computed ``compute_s`` per step over
    ``steps`` steps and spent ``io_s`` of its ``train_s`` seconds on I/O: the next run keeps
    this one's I/O and time besides compute, and computes enough for the I/O to be ``share``
    of it (io_s / share in all)."""
    if not share or share >= 1 or io_s <= 0 or steps < 1:
        return compute_s
    return max(MIN_COMPUTE_S, compute_s + (io_s / share - train_s) / steps)


def next_compute(runs, share, corrected):
    """Compute per step for the next calibration run, from the runs so far (their
    ``computation_time`` and ``io_share``): between the most compute that still gave too high
    a share and the least that gave too low a one, where 1 / share reaches 1 / ``share`` on
    the line through them (1 / share grows linearly with compute when the I/O time and the
    time besides compute stay); without runs on both sides, ``corrected`` (from
    :func:`corrected_compute`). A busy machine's noise can put the two the wrong way round:
    then halfway between them."""
    above = [r for r in runs if r["io_share"] is not None and r["io_share"] > share]
    below = [r for r in runs if r["io_share"] is not None and r["io_share"] < share]
    if not above or not below:
        return corrected
    a = max(above, key=lambda r: r["computation_time"])
    b = min(below, key=lambda r: r["computation_time"])
    ca, cb = a["computation_time"], b["computation_time"]
    if ca >= cb:
        return max(MIN_COMPUTE_S, (ca + cb) / 2)
    ia, ib = 1 / a["io_share"], 1 / b["io_share"]
    return max(MIN_COMPUTE_S, ca + (1 / share - ia) * (cb - ca) / (ib - ia))


def within_share(reached, share):
    """True when the share a run reached is within SHARE_TOLERANCE of ``share``."""
    return bool(share) and reached is not None and abs(reached / share - 1) <= SHARE_TOLERANCE


def compute_steps(run_dir):
    """The steps of a run that computed (its training epochs' steps on a rank)."""
    _, s = summary_layout.load(run_dir)
    return sum(int(e.get("steps", 0)) for e in s.get("epochs", [])) or 1


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


def run_app(app, out_dir, ranks, launcher=None, python=None, extra=(), name=None):
    """Run one scaled-down application into runs/NAME (the application's name unless given);
    returns its run directory."""
    run_dir = os.path.join(out_dir, "runs", name or app)
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
              progress=None, shares=None):
    """Run the study into ``out_dir`` (data/, runs/ below it) and characterize every run.
    With calibrate, each application runs first without compute (the probe) and then with the
    compute per step that gives its real I/O share on this storage (``shares``: app -> another
    share to aim at), again with corrected compute while the share is not within SHARE_AIM
    (module docstring); the run closest to the target is the application's (runs/APP), the
    others are removed. A calibrated row holds ``io_share_target`` and ``calibration``: the
    runs (compute per step and share reached of each), ``chosen`` (the index of the row's run
    among them) and ``within``, its share within SHARE_TOLERANCE of the target."""
    os.makedirs(out_dir, exist_ok=True)
    rows, run_dirs, chars = [], {}, {}
    for app in apps:
        share = (shares or {}).get(app, REAL.get(app, {}).get("io_share"))
        if not calibrate or not share:
            run_dirs[app] = run_app(app, out_dir, ranks, launcher, python)
            chars[app], row, _ = _measure(app, run_dirs[app])
            rows.append(row)
            continue
        if progress:
            progress(f"{app}: probe run")
        probe = run_app(app, out_dir, ranks, launcher, python, ["train.computation_time=0"])
        io_step, step = probe_step(probe)
        compute = calibrated_compute(io_step, share, step)
        runs, measured = [], []
        while True:
            if progress:
                progress(f"{app}: run {len(runs) + 1}, compute {compute:.6g} s per step")
            run_dir = run_app(app, out_dir, ranks, launcher, python,
                              [f"train.computation_time={compute:.6g}"],
                              name=f"{app}.run{len(runs) + 1}")
            _, row, (busy, train_s) = _measure(app, run_dir)
            runs.append({"computation_time": compute, "io_share": row["io_share"]})
            steps = compute_steps(run_dir)
            # the I/O time and the time besides compute, median over the runs so far: one
            # run slowed by the machine's other work does not throw the next one off
            measured.append((busy, train_s - steps * compute))
            if row["io_share"] is None or abs(row["io_share"] / share - 1) <= SHARE_AIM \
                    or len(runs) >= CALIBRATION_RUNS:
                break
            io_s, others = (float(sorted(v)[len(v) // 2]) for v in zip(*measured))
            following = next_compute(runs, share, corrected_compute(
                compute, io_s, others + steps * compute, steps, share))
            if following == compute:    # at its floor: less compute is not possible
                break
            compute = following
        chosen = min(range(len(runs)), key=lambda i: abs((runs[i]["io_share"] or 0) / share
                                                         - 1))
        run_dirs[app] = _keep_run(out_dir, app, chosen, len(runs))
        chars[app], row, _ = _measure(app, run_dirs[app])
        row["computation_time"] = runs[chosen]["computation_time"]
        row["io_share_target"] = share
        within = within_share(row["io_share"], share)
        row["calibration"] = {"runs": runs, "chosen": chosen, "within": within,
                              # not within, short of the share with no compute left to take
                              # away
                              "at_floor": not within
                              and row["computation_time"] <= MIN_COMPUTE_S
                              and (row["io_share"] or 0) < share}
        if progress:
            progress(f"{app}: I/O share {100 * (row['io_share'] or 0):.2f} % (run {chosen + 1} "
                     f"of {len(runs)}), target {100 * share:.2f} %"
                     + ("" if row["calibration"]["within"] else
                        f": not within {SHARE_TOLERANCE:.0%}"))
        rows.append(row)
    return PaperStudy(ranks=ranks, rows=rows, run_dirs=run_dirs, characterizations=chars)


def _measure(app, run_dir):
    """(characterization, paper row, (slowest rank's I/O time, training time)) of one run; the
    row's ``io_share`` is the one over the training time (:func:`training_time`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AnalysisWarning)
        char = characterize(run_dir)
    row = paper_row(app, char)
    busy = char.totals.io_time.slowest_rank
    train_s = training_time(run_dir)
    if busy is not None and train_s > 0:
        row["io_share"] = min(1.0, busy / train_s)
    return char, row, (busy or 0.0, train_s)


def _keep_run(out_dir, app, chosen, count):
    """Make calibration run ``chosen`` (of ``count``, runs/APP.runN) the application's run
    directory, runs/APP, and remove the others; returns its path."""
    runs = os.path.join(out_dir, "runs")
    kept = os.path.join(runs, app)
    if os.path.isdir(kept):
        shutil.rmtree(kept)
    for i in range(count):
        path = os.path.join(runs, f"{app}.run{i + 1}")
        if i == chosen:
            os.rename(path, kept)
        else:
            shutil.rmtree(path, ignore_errors=True)
    return kept


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
        transfer_text = " / ".join(units.size(v) for v in transfer)
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
    lines = [f"The DLIO paper's characterization, emulated on {study.ranks} ranks "
             f"(scaled down; from the runs' op logs)", ""]
    lines += tables.table(rows, header, rule=True)
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

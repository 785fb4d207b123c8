"""The DLIO paper's characterization study, on the emulator: the six applications the paper
characterized (its shipped workloads), scaled down, run under mpiexec with their op logs kept,
characterized from the op logs, and tabulated as the paper tabulates them.

``run_paper(out_dir, ranks=2)`` runs them one after another and returns a :class:`PaperStudy`;
``render_paper(study)`` is the table. The scaled-down runs keep each application's format,
layout, interface, read pattern and transfer size; they shrink the file count and samples per
file (in proportion to the rank count), run one epoch and emulate COMPUTE_S of compute per step
(the paper's applications spent most of their time computing, so that the I/O share of run
time means something). CANDLE, which reads its input whole at start, computes LOAD_COMPUTE_S
per step: its training must outlast the emulator's set-up before the load (about 0.1 s here)
many times over for the load to fall in the first 10% of the run, where the characterization
looks for input read at start.
"""

import glob
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import warnings
from dataclasses import dataclass, field

from .characterize import characterize
from .errors import AnalysisWarning
from .text import _bytes, _share

APPS = ("cosmic_tagger", "ffn", "imagenet", "cosmoflow_paper", "frnn", "candle_nt3")
COMPUTE_S = 0.005
LOAD_COMPUTE_S = 0.05
RUN_TIMEOUT_S = 300


def scaled_overrides(app, ranks):
    """The overrides that shrink workload ``app`` for ``ranks`` processes."""
    per_rank = {
        "cosmic_tagger": {"dataset.num_samples_per_file": 16 * ranks},
        "ffn": {"dataset.num_samples_per_file": 16 * ranks},
        "imagenet": {"dataset.num_files_train": 4 * ranks, "dataset.num_samples_per_file": 4},
        "cosmoflow_paper": {"dataset.num_files_train": 4 * ranks,
                            "dataset.num_samples_per_file": 4},
        "frnn": {"dataset.num_files_train": 8 * ranks, "dataset.num_samples_per_file": 2},
        "candle_nt3": {"dataset.num_samples_per_file": 16 * ranks},
    }[app]
    compute = LOAD_COMPUTE_S if app == "candle_nt3" else COMPUTE_S
    return [f"{key}={value}" for key, value in per_rank.items()] + [
        "train.epochs=1", f"train.computation_time={compute}"]


@dataclass
class PaperStudy:
    """Rows of the paper's table (one dict per application, PAPER_COLUMNS keys), and where each
    run's outputs are."""

    ranks: int
    rows: list
    run_dirs: dict
    characterizations: dict = field(default_factory=dict, repr=False)

    def to_dict(self):
        return {"ranks": self.ranks, "rows": self.rows, "run_dirs": self.run_dirs}


class PaperError(RuntimeError):
    """A run of the study failed; the message names the application and ends with its output."""


def mpiexec_command(ranks, launcher=None):
    """The launcher command for ``ranks`` processes: ``launcher`` (a string, split like a
    shell would) or mpiexec from PATH, with Open MPI's --oversubscribe (and
    --allow-run-as-root as root)."""
    if launcher:
        return shlex.split(launcher) + ["-n", str(ranks)]
    exe = shutil.which("mpiexec")
    if exe is None:
        raise PaperError("mpiexec not found on PATH (give --mpiexec)")
    cmd = [exe, "-n", str(ranks)]
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    if "Open MPI" in version or "OpenRTE" in version:
        cmd.append("--oversubscribe")
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
    return cmd


def run_app(app, out_dir, ranks, launcher=None, python=None, extra=()):
    """Run one scaled-down application; returns its run directory."""
    run_dir = os.path.join(out_dir, "runs", app)
    data_dir = os.path.join(out_dir, "data", app)
    for stale in glob.glob(os.path.join(run_dir, "oplog_rank*.npz")):
        os.unlink(stale)  # a previous run's, perhaps of more ranks
    cmd = mpiexec_command(ranks, launcher) + [
        python or sys.executable, "-m", "dlio_mpi", "run", f"workload={app}",
        f"dataset.data_folder={data_dir}", f"output.folder={run_dir}", "io.keep_oplog=true",
        *scaled_overrides(app, ranks), *extra]
    env = dict(os.environ)
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        raise PaperError(f"{app}: no result after {RUN_TIMEOUT_S} s:\n{output[-3000:]}") \
            from None
    if proc.returncode != 0:
        raise PaperError(f"{app}: {' '.join(cmd)} exited {proc.returncode}:\n{output[-3000:]}")
    return run_dir


def run_paper(out_dir, ranks=2, launcher=None, python=None, apps=APPS):
    """Run the study into ``out_dir`` (data/, runs/ below it) and characterize every run."""
    os.makedirs(out_dir, exist_ok=True)
    rows, run_dirs, chars = [], {}, {}
    for app in apps:
        run_dirs[app] = run_app(app, out_dir, ranks, launcher, python)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AnalysisWarning)
            chars[app] = characterize(run_dirs[app])
        rows.append(paper_row(app, chars[app]))
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
    return "\n".join(lines) + "\n"


def write_paper(study, out_dir):
    """paper.txt and paper.json in ``out_dir``; returns their paths."""
    text_path, json_path = os.path.join(out_dir, "paper.txt"), os.path.join(out_dir,
                                                                             "paper.json")
    with open(text_path, "w") as f:
        f.write(render_paper(study))
    with open(json_path, "w") as f:
        json.dump(study.to_dict(), f, indent=1)
    return text_path, json_path

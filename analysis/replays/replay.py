"""Replay a real job on the emulator: fit a workload to its log, run it under mpiexec at the
log's process count (or a given one) with the op logs kept (the dataset is generated first),
and compare the run with the log.

``replay(source, out_dir)`` returns a :class:`Replay`: the fit, the run directory, the
comparison (dlio_mpi_analysis.comparison.compare; the log is the first job) and the side-by-side structure of the
two jobs (files, shared files, interfaces, bytes and calls read and written, mean read size),
both counted at the comparison's layer. Files written to ``out_dir``: ``fitted.yaml``,
``data/`` (the dataset), ``run/`` (the emulator's outputs) and ``replay.json``.

Before anything is made, the replay is estimated (:mod:`dlio_mpi_analysis.replays.replay_size`: the dataset's
bytes, the bytes read, the op logs, a time) and refused, with one line of the numbers, when it
would not fit the free space of ``out_dir``; ``scale`` shrinks it while keeping the pattern, and
the output and replay.json say what the scaling changed. While the job runs, a progress line
comes every PROGRESS_EVERY_S seconds; the job never outlives the call (:mod:`dlio_mpi_analysis.replays.launch`).
"""

import json
import os
import time
import warnings
from dataclasses import dataclass

from dlio_mpi.display import tables, units
from dlio_mpi.files.safe_files import write_whole

from dlio_mpi_analysis.replays import replay_size
from dlio_mpi_analysis.characterization.characterize import characterize, data_formats
from dlio_mpi_analysis.comparison.compare import compare, profile, render_comparison
from dlio_mpi_analysis.errors import AnalysisWarning
from dlio_mpi_analysis.fitting.fit import fit
from dlio_mpi_analysis.replays.launch import run_emulator
from dlio_mpi_analysis.characterization.layers import parts_at

RUN_TIMEOUT_S = 1800
PROGRESS_EVERY_S = 10.0     # a progress line while the dataset is written and the job runs
STRUCTURE = ("files", "shared_files", "interfaces", "bytes_read", "read_ops",
             "mean_read_size", "bytes_written", "write_ops")
SIZES = ("bytes_read", "mean_read_size", "bytes_written")


@dataclass
class Replay:
    fit: object
    run_dir: str
    comparison: object
    real: dict
    emulated: dict
    estimate: object = None     # dlio_mpi_analysis.replays.replay_size.Estimate
    scaling: object = None      # dlio_mpi_analysis.replays.replay_size.Scaling, when the replay was scaled

    @property
    def score(self):
        return self.comparison.score

    def to_dict(self):
        return {"score": self.score, "ranks": self.fit.ranks, "run_dir": self.run_dir,
                "workload": self.fit.workload, "notes": list(self.fit.notes),
                "real": self.real, "emulated": self.emulated,
                "estimate": self.estimate.to_dict() if self.estimate else None,
                "scale": self.scaling.to_dict() if self.scaling else None}


def structure(c, layer="POSIX"):
    """The shape of a characterized job, its files counted at ``layer`` (dlio_mpi_analysis.characterization.layers): data
    and checkpoint files (dlio_mpi_analysis.characterization.file_roles: not code, configuration, standard streams or the
    MPI library's own files such as Open MPI's lock-test files) and those shared by several
    ranks, interfaces, bytes and calls read, mean read size, bytes and calls written."""
    values = profile(c, layer)
    parts, _ = parts_at(c.records, c.names, c.layers, layer)
    data = data_formats(c.roles, c.names, c.records, parts)
    shared = sum(v.get("shared_files", 0) for v in data.values())
    return {"files": values["files"], "shared_files": shared,
            "interfaces": values["interfaces"], "bytes_read": values["bytes_read"],
            "read_ops": values["read_ops"], "mean_read_size": values["mean_read_size"],
            "bytes_written": values["bytes_written"], "write_ops": values["write_ops"]}


def replay(source, out_dir, ranks=None, launcher=None, python=None, progress=None,
           scale=None):
    """Fit, estimate, generate, run and compare (see the module docstring). ``scale`` (0 to
    1): the replay's dataset and bytes read shrunk to about that share, the pattern kept
    (:func:`dlio_mpi_analysis.replays.replay_size.scale`). Raises ReplaySizeError, having made nothing, when
    the replay would not fit the free space of ``out_dir``."""
    out_dir = os.path.abspath(out_dir)
    data, run_dir = os.path.join(out_dir, "data"), os.path.join(out_dir, "run")
    say = progress or (lambda m: None)
    say("fitting the workload")
    fitted = fit(source, data_folder=data, output_folder=run_dir)  # a bad log: nothing made
    n = ranks or fitted.ranks
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AnalysisWarning)
        # with the traces: the read order at POSIX is part of the score where both have them
        real = characterize(source, dxt=True)
    real_read = fitted.evidence["data_files"]["bytes_read"]
    workload, scaling = fitted.workload, None
    if scale is not None and scale != 1:
        workload, scaling = replay_size.scale(fitted.workload, scale, n)
        fitted.notes.append(scaling.text())
        say(scaling.text())
    est = replay_size.estimate(workload, n, out_dir, real_read, real.run_time,
                               fitted=fitted.workload if scaling else None)
    say(est.text())
    if replay_size.refusal(est, None):
        fits = replay_size.fitting_scale(fitted.workload, n, out_dir, real_read, real.run_time)
        raise replay_size.ReplaySizeError(replay_size.refusal(est, fits))
    fitted.workload = workload
    os.makedirs(out_dir, exist_ok=True)
    yaml_path = os.path.join(out_dir, "fitted.yaml")
    fitted.write(yaml_path)
    say(f"generating the dataset and running it on {n} ranks")
    started = time.monotonic()

    def watch():
        done = replay_size.bytes_under(data)
        if done < est.dataset_bytes:
            say(f"writing the dataset: {done / max(est.dataset_bytes, 1):.0%} of "
                f"{units.size(est.dataset_bytes)}")
        else:
            say(f"running: {time.monotonic() - started:,.0f} s, about "
                f"{est.generate_s + est.run_s:,.0f} s expected")

    trains = workload.get("workflow", {}).get("train", True)
    run_emulator("replay", n, ["run", "--config", yaml_path, "io.keep_oplog=true"]
                 + (["workflow.generate_data=true"] if trains else []),
                 launcher=launcher, python=python, timeout=RUN_TIMEOUT_S,
                 watch=watch if progress else None, every=PROGRESS_EVERY_S)
    say("comparing")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AnalysisWarning)
        emulated = characterize(run_dir, dxt=True)
    comparison = compare([real, emulated], labels=["real", "emulated"])
    result = Replay(fit=fitted, run_dir=run_dir, comparison=comparison,
                    real=structure(real, comparison.layer),
                    emulated=structure(emulated, comparison.layer),
                    estimate=est, scaling=scaling)
    write_whole(os.path.join(out_dir, "replay.json"),
                json.dumps(result.to_dict(), indent=1, default=str), fsync=True)
    return result


def render_replay(result):
    """The fitted workload's essentials, the two jobs' structure side by side and the score."""
    w = result.fit.workload
    if not w.get("workflow", {}).get("train", True):
        ck = w["checkpoint"]
        lines = [f"fitted: checkpoint-only, {ck['num_checkpoints_write']} checkpoints written "
                 f"and {ck['num_checkpoints_read']} read back, format {ck['format']}, "
                 f"{ck['time_between_checkpoints']} s apart, {result.fit.ranks} ranks"]
    else:
        ds, rd, io = w["dataset"], w["reader"], w["io"]
        lines = [f"fitted: {ds['format']}, {ds['num_files_train']} files x "
                 f"{ds['num_samples_per_file']} samples of {ds['record_length']} B, "
                 f"{io['interface']}, layout {io['layout']}, {io['read_type']}, access "
                 f"{rd.get('access', 'sample')}, transfer {rd['transfer_size']} B, batch "
                 f"{rd['batch_size']}, {rd['read_threads']} read threads, "
                 f"{w['train']['epochs']} epochs, compute {w['train']['computation_time']} "
                 f"s/step, {result.fit.ranks} ranks"]
    lines += [f"note: {n}" for n in result.fit.notes]
    def text(key, v):
        if isinstance(v, list):
            return ", ".join(v)
        if v is None:
            return "-"
        if key in SIZES:
            return units.size(round(v))
        return f"{v:,.0f}" if isinstance(v, float) else f"{v:,}"

    cells = [(key, text(key, result.real[key]), text(key, result.emulated[key]))
             for key in STRUCTURE]
    lines += ["", *tables.table(cells, ["", "real", "emulated"], align="lr")]
    lines += ["", f"similarity of the replay to the real job: {result.score:.3f}"
              + (f" (scaled by {result.scaling.factor:g}: files and volumes differ by design)"
                 if result.scaling else "")]
    # every metric of the score, the ones that differ with the ones that match
    lines += ["", "every metric of the score:", "", render_comparison(result.comparison)]
    return "\n".join(lines)

"""``analyze diagnose PATH``: the findings of a Darshan log, a job's folder of logs or a dlio_mpi
run directory as one JSON-ready result, and its text for the terminal.

A finding's level says how much of the run it puts at stake (its severity, see
dlio_mpi_analysis.diagnosis.diagnose): "high" from HIGH_SEVERITY of the run on, "warn" from WARN_SEVERITY, else
"info".
"""

import dataclasses
import json
import os
import shlex

from dlio_mpi_analysis.characterization.characterize import characterize
from dlio_mpi_analysis.diagnosis.finding_kinds import KINDS, Thresholds

HIGH_SEVERITY = 0.10
WARN_SEVERITY = 0.01


def level(severity):
    return "high" if severity >= HIGH_SEVERITY else "warn" if severity >= WARN_SEVERITY \
        else "info"


def _run_dir_inputs(path):
    """(workload, summary) of a dlio_mpi run directory, (None, None) for anything else."""
    summary_path = os.path.join(path, "summary.json")
    if not os.path.isdir(path) or not os.path.isfile(summary_path):
        return None, None
    with open(summary_path) as f:
        summary = json.load(f)
    return summary.get("config"), summary


def diagnose_path(path, thresholds=None, dxt=True):
    """The diagnosis of ``path`` (a dict: the job, the thresholds and the findings, most severe
    first, each with its id, level, evidence, files, ranks, Drishti codes and the change
    advise measures)."""
    from dlio_mpi_analysis.characterization.characterize import load_job
    from dlio_mpi_analysis.diagnosis.diagnose import diagnose

    thresholds = thresholds or Thresholds()
    job = load_job(path, dxt=dxt)
    char = characterize(job, overview=False)
    workload, summary = _run_dir_inputs(path)
    findings = diagnose(char, workload, summary, thresholds=thresholds, log=job)
    command = (f"mpiexec -n {char.nprocs} python -m dlio_mpi advise {shlex.quote(path)}")
    out = []
    for f in findings:
        entry = f.to_dict()
        entry["level"] = level(f.severity)
        entry["advise_command"] = command if KINDS.get(f.key, None) and \
            KINDS[f.key].change else None
        out.append(entry)
    share = char.totals.io_time.slowest_rank_share
    return {"path": path, "logs": char.logs, "exe": char.exe, "nprocs": char.nprocs,
            "run_time_s": char.run_time, "io_share": share,
            "hints": list(getattr(job, "hints", ())),
            "thresholds": dataclasses.asdict(thresholds), "findings": out}


def render_diagnosis(result):
    """The findings as text: one block per finding, most severe first."""
    share = result["io_share"]
    lines = [f"diagnose: {result['path']}: {result['nprocs']} processes, "
             f"{result['run_time_s']:.1f} s"
             + (f", I/O {100 * share:.0f} % of the slowest rank's time" if share is not None
                else "")]
    if not result["findings"]:
        lines.append("no findings (no rule's threshold was crossed)")
    for i, f in enumerate(result["findings"], 1):
        lines.append(f"{i}. [{f['level']}] {f['title']} ({f['id']})")
        lines.append(f"   evidence: {f['evidence']}")
        if f["files"]:
            lines.append(f"   files: {', '.join(f['files'])}")
        if f["ranks"]:
            ranks = f["ranks"]
            shown = ", ".join(str(r) for r in ranks[:16]) + (" ..." if len(ranks) > 16 else "")
            lines.append(f"   ranks: {shown}")
        if f["changes"]:
            lines.append(f"   changes advise measures: {'; '.join(f['changes'])}")
        elif f["advise"]:
            lines.append(f"   change advise measures: {f['advise']}")
        if f["advise_command"]:
            lines.append(f"   measure it: {f['advise_command']}")
    return "\n".join(lines) + "\n"

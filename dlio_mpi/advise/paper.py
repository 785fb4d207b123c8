"""advise --paper: the DLIO paper's optimization study on its applications, scaled down as
``analyze paper`` scales them (dlio_mpi_analysis.paper_study.paper.scaled_overrides), measured as advise measures
(rounds against each application's shipped setting, speedup and spread of the time per epoch).

The paper varied, on the HDF5 shared-file applications (CosmicTagger, FFN), the transfer size
(here the chunk size, which sets libhdf5's reads: chunks a quarter, four and sixteen times as
large in bytes) and compression (none, gzip, lzf); on ImageNet and CosmoFlow the read threads
(0 to 8). FRNN and CANDLE were not part of its optimization study. The budget is shared evenly
among the applications; each runs its sweeps' settings in rounds with its baseline.

Compute per step is calibrated on the storage under test, as ``analyze paper`` does: a probe
run without compute measures the I/O per step, and the study computes enough for I/O to be
the real application's share of the run time (``--io-share`` sets another share, to study the
same application on storage that is slower relative to its compute); runs with the compute
corrected from what each measured follow until the share is close, and the study reports the
share reached. A change can save at most
that share of the time: on fast storage the speedups are small, and that is what they are.
"""

import os
import time

from dlio_mpi.config import loader as config
from dlio_mpi.advise.measure import Advisor, Candidate, _slug, merged, minimal_doc, speedup
from dlio_mpi.display import tables

CHUNK_SCALES = (0.25, 4, 16)
CALIBRATION_RUNS = 3
THREADS = (0, 1, 2, 4, 8)
# an application whose steps are mostly compute runs fewer of them here than in analyze
# paper, so that rounds of every setting fit a budget (its pattern is the same)
FEWER_STEPS = {"ffn": lambda ranks: (f"dataset.num_samples_per_file={16 * ranks}",)}
STUDY = {
    "cosmic_tagger": ("chunk size", "compression"),
    "ffn": ("chunk size", "compression"),
    "imagenet": ("read threads",),
    "cosmoflow_paper": ("read threads",),
}


def _scaled_chunks(volume, shape, scale):
    """A volume's chunk shape scaled to about ``scale`` times its bytes: the first dimensions
    grow (or shrink) first, each within the volume's extent."""
    chunks = list(volume["chunks"])
    target = max(1, round(_prod(chunks) * scale))
    for i, extent in enumerate(shape):
        rest = _prod(chunks[i + 1:])
        chunks[i] = max(1, min(extent, round(target / rest)))
        if _prod(chunks) >= target * 0.9 or scale < 1:
            break
    return chunks


def _prod(xs):
    out = 1
    for x in xs:
        out *= int(x)
    return out


def sweep(name, doc):
    """(label, change) of one sweep over a scaled workload document."""
    ds, rd = doc["dataset"], doc.get("reader", {})
    volumes = ds.get("volumes") or []
    if name == "chunk size":
        out = []
        for scale in CHUNK_SCALES:
            grown = [dict(v, chunks=_scaled_chunks(v, ds["volume_shape"], scale))
                     for v in volumes]
            size = sum(_prod(v["chunks"]) for v in grown) // max(1, len(grown))
            out.append((f"chunks x{scale:g} ({size:,} elements)", {"dataset": {"volumes": grown}}))
        return out
    if name == "compression":
        now = sorted({v.get("compression", "none") for v in volumes})
        return [(f"compression {kind}", {"dataset": {"volumes": [dict(v, compression=kind)
                                                                 for v in volumes]}})
                for kind in ("none", "gzip", "lzf") if now != [kind]]
    if name == "read threads":
        have = int(rd.get("read_threads", 1))
        return [(f"{t} read thread{'' if t == 1 else 's'}", {"reader": {"read_threads": t}})
                for t in THREADS if t != have]
    raise ValueError(name)


def app_doc(app, ranks, out_dir):
    from dlio_mpi_analysis.paper_study.paper import scaled_overrides
    cfg = config.load([f"workload={app}", *scaled_overrides(app, ranks),
                       *FEWER_STEPS.get(app, lambda ranks: ())(ranks)])
    doc = minimal_doc(cfg)
    doc["dataset"]["data_folder"] = os.path.join(out_dir, "data", app)
    doc.setdefault("workflow", {})["generate_data"] = True
    return doc


def calibrate(adv, app, doc, io_share):
    """Compute per step that makes I/O ``io_share`` of the shipped setting's run time on this
    storage (the real application's share unless given), as ``analyze paper`` calibrates it:
    a probe run without compute (dlio_mpi_analysis.paper_study.paper.calibrated_compute), then runs with the
    compute corrected from the medians of what they measured (dlio_mpi_analysis.paper_study.paper.corrected_compute)
    until one's share is within SHARE_AIM or CALIBRATION_RUNS were made (fewer than analyze
    paper's: they come out of the budget). Returns (compute of the run closest to the share,
    share, calibration: the runs' compute and share reached, ``chosen``, and ``within``: the
    chosen run's share within SHARE_TOLERANCE); rank 0's figures on every rank."""
    from dlio_mpi_analysis.paper_study.paper import (SHARE_AIM, calibrated_compute, corrected_compute,
                                next_compute, probe_step, within_share)
    from dlio_mpi_analysis.paper_study.paper_reference import REAL
    share = io_share if io_share is not None else REAL.get(app, {}).get("io_share")
    probe = merged(doc, {"train": {"computation_time": 0}})
    out = os.path.join(adv.out, "runs", "probe")
    adv.run(probe, out, keep_oplog=True)
    compute = None
    if adv.rank == 0:
        io_step, step = probe_step(out)
        compute = calibrated_compute(io_step, share, step)
    compute = adv.comm.bcast(compute, root=0)
    runs, measured, out = [], [], os.path.join(adv.out, "runs", "calibration")
    while share and len(runs) < CALIBRATION_RUNS:
        adv.run(merged(doc, {"train": {"computation_time": round(compute, 6)}}), out,
                keep_oplog=True)
        following = None
        if adv.rank == 0:
            io_s, train_s, steps = _measured(out)
            runs.append({"computation_time": round(compute, 6),
                         "io_share": io_s / train_s if train_s > 0 else None})
            measured.append((io_s, train_s - steps * compute))
            reached = runs[-1]["io_share"]
            if reached is not None and abs(reached / share - 1) > SHARE_AIM:
                io_s, others = (float(sorted(v)[len(v) // 2]) for v in zip(*measured))
                following = next_compute(runs, share, corrected_compute(
                    compute, io_s, others + steps * compute, steps, share))
        runs = adv.comm.bcast(runs, root=0)
        following = adv.comm.bcast(following, root=0)
        if following is None or following == compute:
            break
        compute = following
    if not runs:
        return compute, share, {"runs": [], "chosen": None, "within": False}
    chosen = min(range(len(runs)),
                 key=lambda i: abs((runs[i]["io_share"] or 0) / share - 1))
    return runs[chosen]["computation_time"], share, {
        "runs": runs, "chosen": chosen, "within": within_share(runs[chosen]["io_share"], share)}


def _measured(run_dir):
    """(slowest rank's I/O time, training time, compute steps) of a run, as analyze paper
    measures its share."""
    import warnings

    from dlio_mpi_analysis.characterization.characterize import characterize
    from dlio_mpi_analysis.errors import AnalysisWarning
    from dlio_mpi_analysis.paper_study.paper import compute_steps, training_time
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AnalysisWarning)
        busy = characterize(run_dir).totals.io_time.slowest_rank or 0.0
    return busy, training_time(run_dir), compute_steps(run_dir)


def advise_paper(comm, out_dir, budget_s, apps=None, cold=False, echo=None, io_share=None):
    """Run the study; returns {app: {"baseline": ..., "rows": [...]}} on rank 0. Each
    application's compute per step is calibrated first (:func:`calibrate`)."""
    apps = list(apps or STUDY)
    unknown = [a for a in apps if a not in STUDY]
    if unknown:
        raise config.ConfigError(f"--apps: {', '.join(unknown)} not in the paper's "
                                 f"optimization study ({', '.join(STUDY)})")
    study = {"ranks": comm.Get_size(), "budget_s": budget_s, "apps": {}}
    part, t0 = budget_s / len(apps), time.monotonic()
    for i, app in enumerate(apps):
        # what the applications so far have not used is the next one's too
        until = comm.bcast(t0 + part * (i + 1) - time.monotonic(), root=0)
        adv = Advisor(comm, os.path.join(out_dir, app), until, cold=cold, keep_data=False,
                      echo=echo)
        doc = app_doc(app, comm.Get_size(), out_dir)
        compute, io, calibration = calibrate(adv, app, doc, io_share)
        doc.setdefault("train", {})["computation_time"] = round(compute, 6)
        base = Candidate(name="baseline", label="as shipped", finding="baseline",
                         evidence="", change={}, doc=doc)
        cands = []
        for name in STUDY[app]:
            for label, change in sweep(name, doc):
                d = merged(doc, change)
                if "dataset" in change:
                    d["dataset"]["data_folder"] = adv.data_folder(doc, d)
                cands.append(Candidate(name=f"{len(cands) + 1:02d}_{_slug(label)}",
                                       label=label, finding=name, evidence="", change=change,
                                       doc=d))
        adv.say(f"advise --paper: {app}: {len(cands)} settings")
        adv.longest = 0.0
        adv.measure(base, -1)           # generates the dataset; not a round
        adv.rounds(base, cands)
        adv.cleanup()
        if comm.Get_rank() == 0:
            rows = []
            for c in cands:
                s, spread = speedup(base.times, c.times)
                times = [t for t in c.times.values() if t]
                rows.append({"study": c.finding, "setting": c.label, "speedup": s,
                             "spread": spread, "rounds": len(times), "error": c.error,
                             "time_per_epoch_s": sorted(times)[len(times) // 2]
                             if times else None})
            base_times = [t for r, t in base.times.items() if r >= 0 and t]
            study["apps"][app] = {
                "baseline_time_per_epoch_s": sorted(base_times)[len(base_times) // 2]
                if base_times else None, "rows": rows, "io_share": io,
                "computation_time": compute, "calibration": calibration,
                "elapsed_s": round(adv.budget - adv.left(), 1)}
        study["apps"] = comm.bcast(study["apps"], root=0)
    return study if comm.Get_rank() == 0 else None


def render_paper(study):
    """One table per application: the setting, time per epoch, speedup and spread."""
    lines = [f"The DLIO paper's optimization study, emulated on {study['ranks']} ranks "
             "(scaled down; speedup of the time per epoch over the shipped setting)"]
    for app, res in study["apps"].items():
        base = res["baseline_time_per_epoch_s"]
        from dlio_mpi_analysis.paper_study.paper import MIN_COMPUTE_S, SHARE_TOLERANCE
        floor = res["computation_time"] <= MIN_COMPUTE_S
        aim = (f"compute at its floor, {MIN_COMPUTE_S} s per step: without compute I/O is "
               f"already under the real {100 * res['io_share']:.1f} % of the run time"
               if floor else f"compute {res['computation_time']:.4f} s per step, for I/O to "
               f"be {100 * res['io_share']:.1f} % of the run time")
        lines += ["", f"{app}: as shipped {base:.3f} s per epoch; {aim}" if base
                  else f"{app}: nothing measured within the budget"]
        cal = res.get("calibration") or {}
        runs = cal.get("runs") or []
        if runs and runs[cal["chosen"]]["io_share"] is not None:
            lines.append(f"  calibration: I/O {100 * runs[cal['chosen']]['io_share']:.1f} % of "
                         f"the run time (run {cal['chosen'] + 1} of {len(runs)})"
                         + ("" if res["calibration"]["within"] else
                            f", NOT within {SHARE_TOLERANCE:.0%} of the target"))
        rows = []
        for r in res["rows"]:
            t = "-" if r["time_per_epoch_s"] is None else f"{r['time_per_epoch_s']:.3f}"
            s = "failed" if r["error"] else "-" if r["speedup"] is None else f"{r['speedup']:.2f}"
            sp = "-" if r["spread"] is None else f"{r['spread']:.2f}"
            rows.append([r["study"], r["setting"], t, s, sp, r["rounds"]])
        lines += ["  " + line for line in tables.table(
            rows, ["study", "setting", "s/epoch", "speedup", "spread", "rounds"], align="llr")]
    return "\n".join(lines) + "\n"

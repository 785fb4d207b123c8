"""advise's result (rank 0): the baseline, every measured change with its speedup and spread,
the winner written as a ready-to-run workload, and notes on what the figures stand for."""

import os
import statistics
import time

import yaml

from dlio_mpi import backends
from dlio_mpi.display import units
from dlio_mpi.run import summary_layout
from dlio_mpi.advise.measure import speedup


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _figures(cand):
    runs = [r for r in cand.runs.values() if r]
    return {"time_per_epoch_s": _median([r["time_per_epoch_s"] for r in runs]),
            "au_pct": _median([r["au_pct"] for r in runs]),
            "bytes_moved_per_epoch": _median([r["bytes_moved_per_epoch"] for r in runs]),
            "samples_per_s": _median([r["samples_per_s"] for r in runs]),
            "rounds": len(runs)}


def _page_cache_note(summary, cold):
    summary = summary_layout.own(summary)
    facts = summary.get("facts") or {}
    interface = (summary.get("config") or {}).get("io", {}).get("interface")
    if interface in backends.BACKENDS and backends.get(interface).direct:
        return "reads with O_DIRECT: the page cache holds none of the dataset's reads"
    data, memory = facts.get("dataset_bytes") or 0, facts.get("host_memory_bytes") or 0
    if cold:
        return ("--cold: every run started with the dataset evicted from the page cache of "
                "each host; reads within a run (a second epoch) may still come from it")
    if memory and data <= memory:
        return (f"the dataset ({units.size_in(data, 'GiB')}) fits in one host's memory "
                f"({units.size_in(memory, 'GiB', 1)}): after their first read the runs read it from "
                "the page cache, so the speedups are those of a cached dataset; rerun with "
                "--cold (evicted before every run), io.interface=posix_direct, or a dataset "
                "larger than memory to measure the storage")
    return None


def result(base, cands, findings, skipped, notes, summary, adv, source, started):
    """The result object (also advise.json), with winner.yaml written in the output folder."""
    recs = []
    for c in cands:
        s, spread = speedup(base.times, c.times)
        recs.append({"change": c.change, "label": c.label, "finding": c.finding,
                     "evidence": c.evidence,
                     "speedup": None if s is None else round(s, 4),
                     "spread": None if spread is None else round(spread, 4),
                     **_figures(c), "error": c.error, "run_dir": os.path.join(
                         adv.out, "runs", c.name)})
    recs.sort(key=lambda r: -(r["speedup"] or 0.0))
    winner = next((r for r in recs if r["speedup"] and r["speedup"] - (r["spread"] or 0) > 1.0
                   and r["rounds"] >= 2), None)
    out = {"source": source, "ranks": adv.comm.Get_size(), "budget_s": adv.budget,
           "elapsed_s": round(time.time() - started, 1), "cold": adv.cold,
           "stopped_by_budget": adv.stopped_by_budget,
           "baseline": {**_figures(base), "times": [base.times[r] for r in sorted(base.times)],
                        "workload": base.doc},
           "findings": findings, "recommendations": recs, "not_measured": skipped,
           "winner": None, "notes": list(notes)}
    note = _page_cache_note(summary, adv.cold)
    if note:
        out["notes"].append(note)
    if adv.stopped_by_budget:
        out["notes"].append(f"the budget ({adv.budget:.0f} s) ended the measurements: some "
                            "changes have fewer rounds than the others")
    if winner is not None:
        path = os.path.join(adv.out, "winner.yaml")
        doc = next(c.doc for c in cands if c.change == winner["change"])
        header = [f"# dlio_mpi workload: the fastest change advise measured: {winner['label']}",
                  f"# {winner['speedup']:.2f}x the baseline's time per epoch (spread "
                  f"{winner['spread'] if winner['spread'] is not None else 'unknown'}, "
                  f"{winner['rounds']} rounds on {out['ranks']} ranks)",
                  f"# mpiexec -n {out['ranks']} python -m dlio_mpi run --config {path}"]
        from dlio_mpi.files.safe_files import write_whole
        write_whole(path, "\n".join(header) + "\n" + yaml.safe_dump(doc, sort_keys=False),
                    fsync=True)
        out["winner"] = {"label": winner["label"], "change": winner["change"],
                         "speedup": winner["speedup"], "spread": winner["spread"],
                         "yaml": path}
    else:
        out["notes"].append("no change was faster than the baseline beyond its spread")
    return out

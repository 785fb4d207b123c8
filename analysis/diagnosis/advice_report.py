"""advise's report for people: a table for the terminal, ``advise.md`` and a self-contained
``advise.html`` with the speedup of every measured change (bars with their spread), from the
result object dlio_mpi.advise writes as ``advise.json``."""

import base64
import json
import os
import textwrap

from dlio_mpi.display import tables, units
from dlio_mpi.files.safe_files import write_whole

from dlio_mpi_analysis.reporting.plots import _figure, _png, _titles
from dlio_mpi_analysis.reporting import pages


def _num(value, fmt):
    return "-" if value is None else format(value, fmt)


def _rows(result):
    base = result["baseline"]
    rows = [["baseline", "", _num(base["time_per_epoch_s"], ".4g"), _num(base["au_pct"], ".1f"),
             units.size(base["bytes_moved_per_epoch"]), "1.00", "-", str(base["rounds"])]]
    for r in result["recommendations"]:
        speed = "failed" if r["error"] else _num(r["speedup"], ".2f")
        rows.append([r["label"], r["finding"], _num(r["time_per_epoch_s"], ".4g"),
                     _num(r["au_pct"], ".1f"), units.size(r["bytes_moved_per_epoch"]), speed,
                     _num(r["spread"], ".2f"), str(r["rounds"])])
    return rows


HEADER = ["change", "finding", "s/epoch", "AU %", "bytes/epoch", "speedup", "spread", "rounds"]


def render_text(result):
    """Findings, the table of measured changes (fastest first), the winner and the notes."""
    lines = [f"advise: {result['source']} on {result['ranks']} ranks, "
             f"{result['elapsed_s']:.0f} s of a {result['budget_s']:.0f} s budget", ""]
    if result["findings"]:
        lines.append("findings (most severe first):")
        lines += [f"  {i + 1}. {f['title']} ({f.get('id', f['key'])}): {f['evidence']}"
                  for i, f in enumerate(result["findings"])]
    else:
        lines.append("findings: none (no rule's threshold was crossed)")
    rows = _rows(result)
    lines += ["", *tables.table(rows, HEADER, align="llr", rule=True)]
    for r in result["recommendations"]:
        if r["error"]:
            lines.append(f"failed: {r['label']}: {r['error']}")
    for s in result["not_measured"]:
        lines.append(f"not measured: {s['label']}: {s['why']}")
    w = result["winner"]
    lines.append("")
    lines.append(f"winner: {w['label']}, {w['speedup']:.2f}x (spread "
                 f"{_num(w['spread'], '.2f')}): {w['yaml']}" if w else "winner: none")
    lines += [f"note: {n}" for n in result["notes"]]
    return "\n".join(lines) + "\n"


def speedup_figure(result):
    """A bar per measured change: its speedup over the baseline, the spread as an error bar."""
    recs = [r for r in result["recommendations"] if r["speedup"] is not None]
    fig = _figure(height=max(2.5, 0.55 * len(recs) + 1.2))
    fig.subplots_adjust(left=0.36)
    ax = fig.add_subplot()
    labels = [textwrap.fill(r["label"], 44) for r in recs][::-1]
    values = [r["speedup"] for r in recs][::-1]
    errors = [r["spread"] or 0.0 for r in recs][::-1]
    colors = ["#2a7" if v - e > 1.0 else "#999" for v, e in zip(values, errors)]
    ax.barh(range(len(recs)), values, xerr=errors, color=colors, capsize=3)
    ax.axvline(1.0, color="#c33", linewidth=1)
    ax.set_yticks(range(len(recs)), labels, fontsize=8)
    ax.set_xlabel("speedup of the time per epoch over the baseline")
    _titles(ax, "Measured speedup per change", "green: faster beyond its spread")
    return _png(fig)


def _markdown(result, text_rows, png_name):
    return pages.render("advise.md", result=result, header=HEADER, rows=text_rows,
                        png_name=png_name, winner=result["winner"])


def _html(result, text_rows, png):
    return pages.render("advise.html", result=result, header=HEADER, rows=text_rows,
                        winner=result["winner"],
                        png_base64=base64.b64encode(png).decode("ascii") if png else None)


def write_advice(result, out_dir):
    """advise.json, advise.md, advise.html and speedup.png in ``out_dir``; returns the paths."""
    os.makedirs(out_dir, exist_ok=True)
    rows = _rows(result)
    png = speedup_figure(result) if any(r["speedup"] is not None
                                        for r in result["recommendations"]) else None
    paths = {k: os.path.join(out_dir, f"advise.{k}") for k in ("json", "md", "html")}
    if png:
        paths["png"] = os.path.join(out_dir, "speedup.png")
        write_whole(paths["png"], png, fsync=True)
    write_whole(paths["json"], json.dumps(result, indent=1, default=str), fsync=True)
    write_whole(paths["md"], _markdown(result, rows, "speedup.png" if png else None), fsync=True)
    write_whole(paths["html"], _html(result, rows, png), fsync=True)
    return paths


def summary_line(result):
    """One JSON object: the baseline's figures and each measured change (fastest first) with
    its evidence, speedup and spread."""
    base = {k: result["baseline"][k] for k in ("time_per_epoch_s", "au_pct",
                                               "bytes_moved_per_epoch", "rounds")}
    recs = [{"change": r["change"], "label": r["label"], "finding": r["finding"],
             "evidence": r["evidence"], "speedup": r["speedup"], "spread": r["spread"],
             "time_per_epoch_s": r["time_per_epoch_s"], "au_pct": r["au_pct"],
             "bytes_moved_per_epoch": r["bytes_moved_per_epoch"], "rounds": r["rounds"],
             "error": r["error"]}
            for r in result["recommendations"]]
    return json.dumps({"baseline": base, "recommendations": recs,
                       "winner": result["winner"]}, separators=(",", ":"), default=str)

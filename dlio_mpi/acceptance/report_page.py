"""The acceptance report as files: report.json (the gathered document), report.html (one
self-contained page: the figure embedded as a base64 PNG, no external reference) and the
figure as report_runs.png, every file written through safe_files."""
import base64
import html
import io
import json
import os

from dlio_mpi.files import safe_files
from dlio_mpi.display import units

JSON = "report.json"
HTML = "report.html"
FIGURE = "report_runs.png"
GIB = 2**30
ORDER = ("run", "search", "checkpoint", "datagen", "other")
COLORS = {"run": "#1f77b4", "search": "#ff7f0e", "other": "#7f7f7f"}


def _plotted(doc):
    return [r for r in doc["runs"] if r.get("au_percentage") is not None]


def figure(doc):
    """AU and throughput of every training run (one bar each, the procedure's colour; the
    thresholds as lines) as PNG bytes, or None when no run has an AU."""
    runs = _plotted(doc)
    if not runs:
        return None
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 6.5), dpi=100)
    FigureCanvasAgg(fig)
    fig.subplots_adjust(left=0.08, right=0.98, top=0.94, bottom=0.3, hspace=0.15)
    au_ax, tp_ax = fig.subplots(2, 1, sharex=True)
    x = range(len(runs))
    colors = [COLORS.get(r["procedure"], COLORS["other"]) for r in runs]
    au_ax.bar(x, [r["au_percentage"] for r in runs], color=colors)
    for t in sorted({p["au_threshold_percentage"] for p in doc["procedures"] + doc["searches"]
                     if p.get("au_threshold_percentage") is not None}):
        au_ax.axhline(t, color="#d62728", linestyle="--", linewidth=1)
        au_ax.text(len(runs) - 0.5, t, f"threshold {t:g} %", ha="right", va="bottom",
                   fontsize=8, color="#d62728")
    au_ax.set_ylabel("AU (%)")
    au_ax.set_ylim(0, 105)
    au_ax.set_title("accelerator utilization and throughput per run "
                    "(blue: procedure runs, orange: search runs)", loc="left", fontsize=10)
    tp_ax.bar(x, [r["throughput_samples_per_second"] or 0 for r in runs], color=colors)
    tp_ax.set_ylabel("samples/s")
    tp_ax.set_xticks(list(x))
    tp_ax.set_xticklabels([_short(r["folder"]) for r in runs], rotation=60, ha="right",
                          fontsize=7)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _short(folder):
    """A run's label: its folder from the step on, the step's time stamp as its time of day,
    the run's own time stamp left out (training/W/search/2026-12-06-20-05-37/accelerators_1/
    repeat_1/2026-12-06-20-05-39 -> search 20:05:37 accelerators_1/repeat_1)."""
    parts = folder.split(os.sep)[2:]
    if parts and parts[-1][:4].isdigit():
        parts = parts[:-1]
    if len(parts) > 1 and parts[1][:4].isdigit():
        parts = [f"{parts[0]} {parts[1][11:19].replace('-', ':')}"] + parts[2:]
    return "/".join(parts) or folder


def _e(value):
    return html.escape(str(value))


def _number(value, digits=2):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else _e(value)


def _table(header, rows):
    out = ["<table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in header) + "</tr>"]
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _system(s):
    rows = []
    for h in s["hosts"]:
        hosts = ", ".join(f"{x['cpus']} CPUs, {units.size_in(x['memory_GB'] * GIB, 'GiB', 1)}"
                          for x in h["hosts"])
        rows.append(("hosts", _e(f"{h['num_hosts']} (first: {h['first_host']}): {hosts}")))
    rows += [("MPI", _e(", ".join(s["mpi"]) or "-")),
             ("MPI-IO", _e(", ".join(s["mpiio"]) or "-")),
             ("file system of the data", _e(", ".join(s["filesystem"]) or "-")),
             ("CPUs per rank (fewest)", _e(", ".join(map(str, s["cpus_per_rank_min"])) or "-"))]
    for st in s["storage"]:
        m = st["mount"]
        rows.append((f"mount of {_e(st['folder'])}",
                     _e(f"{m['source']} on {m['mount_point']} ({m['type']}, {m['options']})")
                     if m else "not visible from the host that made this report"))
    for w in s["warnings"]:
        rows.append(("warning", _e(w)))
    return _table(("", ""), rows)


def _rules(p):
    title = (f"run {p['workload']}: {str(p['verdict']).upper()} (AU threshold "
             f"{p['au_threshold_percentage']:g} %)" if p["procedure"] == "run" else
             f"checkpoint {p['model']} ({p['mode']} mode, {p['processes']} processes)")
    title += f", {'compliant' if p['compliant'] else 'NOT COMPLIANT'}, division {p['division']}"
    rows = [(_e(r.get("rule")), "yes" if r.get("compliant") else "<b>no</b>",
             _e(r.get("evidence"))) for r in p["rules"]]
    return (f"<h3>{_e(title)}</h3><p>{_e(p['folder'])}</p>"
            + _table(("rule", "met", "evidence"), rows))


def _runs(doc):
    rows = []
    for r in sorted(doc["runs"], key=lambda r: (ORDER.index(r["procedure"])
                                                if r["procedure"] in ORDER else 9, r["folder"])):
        rows.append((_e(r["procedure"]), _e(r["folder"]), _number(r["accelerators"]),
                     _number(r["au_percentage"]), _number(r["throughput_samples_per_second"], 1),
                     _number(r["io_MB_per_second"], 1),
                     _number(r.get("save_checkpoint_io_mean_GB_per_second"), 3),
                     _number(r.get("load_checkpoint_io_mean_GB_per_second"), 3),
                     _e(r["start"])))
    return _table(("procedure", "run", "accelerators", "AU %", "samples/s", "MB/s",
                   "checkpoint write GB/s", "checkpoint read GB/s", "start (UTC)"), rows)


def _searches(doc):
    out = []
    for s in doc["searches"]:
        n = s["accelerators_per_host"]
        answer = ("not finished" if not s["complete"] else
                  f"{n} accelerators per host ({s['accelerators']} on {s['hosts']} hosts)"
                  + (" (the most tried)" if s["at_max"] else "") if n else
                  f"none: {s['min_accelerators_per_host']} per host is already under the "
                  "threshold")
        out.append(f"<h3>{_e(s['workload'])}: {_e(answer)}</h3><p>{_e(s['folder'])}, "
                   f"{_e(s['mode'])}, {s['repeats']} repeats, AU threshold "
                   f"{s['au_threshold_percentage']:g} %</p>")
        out.append(_table(("accelerators per host", "AU % of each repeat", "verdict"), [
            (_number(p["accelerators_per_host"]),
             _e(", ".join(f"{a:.2f}" for a in p["au_percentage"])),
             "pass" if p["pass"] else "fail") for p in s["points"]]))
    return "\n".join(out) or "<p>no search in this folder</p>"


def _checkpoints(doc):
    out = []
    for p in (p for p in doc["procedures"] if p["procedure"] == "checkpoint"):
        rows = []
        for op, f in p["figures"].items():
            rows.append((_e(op), _number(f.get("checkpoints")),
                         _number(f.get("duration_s", {}).get("mean"), 4),
                         _number(f.get("duration_s", {}).get("stdev"), 4),
                         _number(f.get("throughput_GiB_per_s", {}).get("mean"), 4),
                         _number(f.get("throughput_GiB_per_s", {}).get("stdev"), 4),
                         _number(f.get("slowest_rank_throughput_GiB_per_s", {}).get("mean"), 4)))
        cache = p.get("page_cache") or {}
        out.append(f"<h3>{_e(p['model'])}, {_e(p['mode'])} mode: {_e(p['num_checkpoints'])} "
                   f"checkpoints</h3><p>{_e(p['folder'])}; page cache cleared by "
                   f"{_e(cache.get('method', '-'))}</p>")
        out.append(_table(("operation", "checkpoints", "seconds (mean)", "seconds (stdev)",
                           "GiB/s total (mean)", "GiB/s total (stdev)",
                           "GiB/s slowest rank (mean)"), rows))
    return "\n".join(out) or "<p>no checkpointing procedure in this folder</p>"


def page(doc, png):
    """The HTML report."""
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>{_e(doc['report'])}: {_e(doc['results'])}</title>",
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;"
        "margin:0.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;"
        "vertical-align:top;font-size:90%}</style></head><body>",
        f"<h1>{_e(doc['report'])}</h1>",
        f"<p>{_e(doc['results'])} ({_e(doc['procedure'])} {_e(doc['workload'])}), "
        f"{_e(doc['generated'])}, {_e(doc['generator'])}</p>",
        "<h2>System</h2>", _system(doc["system"]),
        "<h2>Rules</h2>",
        "\n".join(_rules(p) for p in doc["procedures"]) or "<p>no procedure result</p>",
        "<h2>Runs</h2>", _runs(doc)]
    if png:
        parts.append("<img alt='AU and throughput per run' src='data:image/png;base64,"
                     + base64.b64encode(png).decode("ascii") + "'>")
    parts += ["<h2>Accelerators found</h2>", _searches(doc),
              "<h2>Checkpointing</h2>", _checkpoints(doc)]
    if doc["datagen"]:
        parts.append("<h2>Dataset generation</h2>")
        parts.append(_table(("folder", "files written", "already complete", "ranks",
                             "seconds", "data folder"), [
            (_e(d.get("folder")), _number(d.get("files_written")),
             _number(d.get("files_complete_before")), _number(d.get("ranks")),
             _number(d.get("seconds")), _e(d.get("data_folder"))) for d in doc["datagen"]]))
    parts.append("</body></html>\n")
    return "\n".join(parts)


def write(doc, out_dir):
    """report.json, report.html and, when a run has an AU, report_runs.png in out_dir;
    returns the paths written."""
    os.makedirs(out_dir, exist_ok=True)
    png = figure(doc)
    written = []
    if png:
        doc["figure"] = FIGURE
        path = os.path.join(out_dir, FIGURE)
        safe_files.write_whole(path, png, fsync=True)
        written.append(path)
    for name, text in ((JSON, json.dumps(doc, indent=1)), (HTML, page(doc, png))):
        path = os.path.join(out_dir, name)
        safe_files.write_whole(path, text, fsync=True)
        written.append(path)
    return written

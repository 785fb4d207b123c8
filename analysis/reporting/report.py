"""A report of one job for people: ``write_report(source, out_dir)`` writes ``report.md``,
a self-contained ``report.html`` (figures embedded as base64 PNG, no external references) and
the figures as PNG files (see :mod:`dlio_mpi_analysis.reporting.plots`), all into ``out_dir``.
"""

import base64
import os
from dataclasses import dataclass

from dlio_mpi.display import units
from dlio_mpi.files.safe_files import write_whole

from dlio_mpi_analysis.characterization.characterize import characterize, load_job
from dlio_mpi_analysis.reporting import pages
from dlio_mpi_analysis.characterization.text import MODULE_ROWS, _mib_per_s, _share, utc


@dataclass
class ReportFiles:
    """Paths written by :func:`write_report`."""

    markdown: str
    html: str
    figures: dict  # figure name -> PNG path


def write_report(source, out_dir, *, dxt=True, title=None):
    """Characterize ``source`` (a Darshan log, a directory of logs or a dlio_mpi run directory;
    DXT traces read when ``dxt``) and write the report files into ``out_dir``."""
    from dlio_mpi_analysis.reporting.plots import all_figures

    job = load_job(source, dxt=dxt)
    char = characterize(job)
    os.makedirs(out_dir, exist_ok=True)
    figures = all_figures(job, char)
    paths = {}
    for name, (_, png) in figures.items():
        paths[name] = os.path.join(out_dir, f"{name}.png")
        write_whole(paths[name], png, fsync=True)
    title = title or f"I/O report: {char.exe}"
    facts = summary_rows(char)
    markdown = _markdown(title, facts, char, figures)
    page = _html(title, facts, char, figures)
    md_path, html_path = os.path.join(out_dir, "report.md"), os.path.join(out_dir, "report.html")
    write_whole(md_path, markdown, fsync=True)
    write_whole(html_path, page, fsync=True)
    return ReportFiles(markdown=md_path, html=html_path, figures=paths)


def summary_rows(c):
    """(label, text) rows of the report's job summary."""
    t = c.totals
    rows = [
        ("source", "dlio_mpi op logs" if c.source == "oplog" else
         f"Darshan log format {', '.join(c.log_versions)}"),
        ("logs", c.logs[0] if len(c.logs) == 1 else f"{len(c.logs)}: {c.logs[0]} ..."),
        ("executable", c.exe),
        ("processes", str(c.nprocs)),
        ("run time", units.seconds(c.run_time)),
        ("interfaces", ", ".join(c.interfaces) or "-"),
        ("bytes read / written", f"{units.size(t.bytes_read)} / {units.size(t.bytes_written)} "
                                 f"({' + '.join(t.basis) or '-'})"),
        ("files", f"{t.files.total} ({t.files.shared} shared, {t.files.unique} unique)"),
        ("I/O time", f"slowest rank {units.seconds(t.io_time.slowest_rank)} "
                     f"({_share(t.io_time.slowest_rank_share)} of run time), mean per rank "
                     f"{units.seconds(t.io_time.mean_per_rank)}"),
    ]
    job = c.job
    if job is not None and (job.job_id or job.start_time):
        rows += [("job id / user id", f"{job.job_id} / {job.uid}"),
                 ("start, end (UTC)", f"{utc(job.start_time)}, {utc(job.end_time)}"),
                 ("Darshan version", ", ".join(job.darshan_versions) or "-")]
    if c.mounts:
        rows.append(("mount points", "; ".join(
            f"{m.mount_point} ({m.fs_type}): {m.files} files, {units.size(m.bytes_read)} read, "
            f"{units.size(m.bytes_written)} written" for m in c.mounts)))
    if "set_hints" in c.mpiio_hints:
        rows.append(("MPI-IO hints set", f"{c.mpiio_hints['set_hints']} times"))
    if c.mpiio_hints.get("log_hints"):
        rows.append(("MPI-IO hints of the log", "; ".join(c.mpiio_hints["log_hints"])))
    if c.data_formats:
        rows.append(("data formats", "; ".join(
            f"{fmt}: {v['files']} files, {units.size(v['bytes_read'])} read"
            for fmt, v in c.data_formats.items())))
    for name, d in c.dxt.items():
        if d.read_pattern is not None:
            rows.append((f"input read ({name})", f"{d.read_pattern} "
                         f"({_share(d.early_read_fraction)} of read bytes in the first 10%)"))
    if c.partial_modules:
        rows.append(("partial", ", ".join(c.partial_modules)))
    return rows


def _category(name):
    def cell(s):
        f = s.file_categories.get(name)
        if f is None:
            return "-"
        size = f", max size {units.size(f.max_size)}" if f.max_size is not None else ""
        return f"{f.files} ({units.size(f.bytes_read + f.bytes_written)}{size})"
    return cell


def _top(files):
    return f"{files[0].name} ({units.size(files[0].bytes_read + files[0].bytes_written)}, " \
        f"{units.seconds(files[0].io_time)})" if files else "-"


# (row label, value of a job_summary.ModuleSummary as text), the figures of Darshan's summary
SUMMARY_ROWS = (
    ("I/O cost: read / process", lambda s: units.seconds(s.io_cost.read)),
    ("I/O cost: write / process", lambda s: units.seconds(s.io_cost.write)),
    ("I/O cost: metadata / process", lambda s: units.seconds(s.io_cost.meta)),
    ("I/O performance estimate", lambda s: _mib_per_s(s.performance.mib_per_s)
     if s.performance else "-"),
    ("files", _category("all")),
    ("read-only files", _category("read_only")),
    ("write-only files", _category("write_only")),
    ("read-write files", _category("read_write")),
    ("common access sizes", lambda s: ", ".join(
        f"{size} B x {count}" for size, count in s.common_access_sizes) or "-"),
    ("top file by bytes", lambda s: _top(s.top_files_by_bytes)),
    ("top file by time", lambda s: _top(s.top_files_by_time)),
)


def _summary_rows(c):
    return [[label, *(cell(s) for s in c.summary.values())] for label, cell in SUMMARY_ROWS]


def _module_rows(c):
    return [[label, *(cell(m) for m in c.modules.values())] for label, cell in MODULE_ROWS]


def _page_values(title, facts, c, figures):
    """What report.md and report.html show, as the templates take it."""
    sections = []
    if c.modules:
        sections.append({"title": "Module metrics", "header": ["metric", *c.modules],
                         "rows": _module_rows(c)})
    if c.summary:
        sections.append({"title": "Job summary", "header": ["figure", *c.summary],
                         "rows": _summary_rows(c)})
    return {"title": title, "facts": facts, "sections": sections, "warnings": c.warnings,
            "figures": [{"name": name, "caption": caption,
                         "base64": base64.b64encode(png).decode("ascii")}
                        for name, (caption, png) in figures.items()]}


def _markdown(title, facts, c, figures):
    return pages.render("report.md", **_page_values(title, facts, c, figures))


def _html(title, facts, c, figures):
    return pages.render("report.html", **_page_values(title, facts, c, figures))

"""Render a Characterization as a plain-text report (for a terminal) or as JSON."""

import datetime
import json

from dlio_mpi.display import tables, units
from dlio_mpi_analysis.characterization.unseen_io import opened_without_io, unseen_io_line

MAX_LOGS_LISTED = 4  # a longer set of per-process logs is shown by count, first and last


def to_json(characterization, indent=2):
    """The characterization's :meth:`to_dict` as a JSON string."""
    return json.dumps(characterization.to_dict(), indent=indent)


def render_text(characterization):
    """A plain-text report: job header and totals, the data I/O alone (data and checkpoint
    files, with what is not data apart), a table of module metrics, DXT summaries and the
    warnings. Byte counts are shown in binary units; JSON has them exact."""
    c = characterization
    lines = ["dlio_mpi op-log I/O characterization" if c.source == "oplog"
             else "Darshan I/O characterization"]
    if len(c.logs) <= MAX_LOGS_LISTED:
        lines += [f"  log:         {path}" for path in c.logs]
    else:
        lines.append(f"  logs:        {len(c.logs)}, from {c.logs[0]} to {c.logs[-1]}")
    lines += job_lines(c.job)
    lines += [f"  format:      {', '.join(c.log_versions)}",
              f"  executable:  {c.exe}",
              f"  processes:   {c.nprocs}{_process_roles(c.process_roles)}",
              f"  run time:    {units.seconds(c.run_time)}",
              f"  interfaces:  {', '.join(c.interfaces) or '-'}"]
    if c.data_formats:
        lines.append("  data:        " + "; ".join(
            f"{fmt} ({v['files']} files, {units.size(v['bytes_read'])} read)"
            for fmt, v in c.data_formats.items()))
    if c.partial_modules:
        lines.append(f"  partial:     {', '.join(c.partial_modules)}")
    if c.no_io:
        unseen = unseen_io_line(opened_without_io(c.records, c.names, c.roles))
        lines += ["", f"No I/O recorded{': ' + unseen if unseen else ''}."]
    else:
        lines += ["", *_totals(c), "", *_data_io(c), "", *_module_table(c.modules)]
        for metrics in c.dxt.values():
            lines += ["", *_dxt_summary(metrics)]
        lines += ["", *summary_lines(c)]
    if c.warnings:
        lines += ["", "Warnings:"] + [f"  - {message}" for message in c.warnings]
    return "\n".join(lines) + "\n"


def job_lines(job):
    """The job as the runtime recorded it: id, user, start and end (UTC), Darshan version."""
    if job is None or not (job.job_id or job.start_time):
        return []
    return [f"  job id:      {job.job_id}",
            f"  user id:     {job.uid}",
            f"  start, end:  {utc(job.start_time)}, {utc(job.end_time)} (UTC)",
            f"  darshan:     {', '.join(job.darshan_versions) or '-'}"]


def utc(seconds):
    """Seconds since the epoch as 'YYYY-MM-DD HH:MM:SS' in UTC."""
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M:%S")


def summary_lines(c):
    """The job summary figures (Characterization.summary, mounts, mpiio_hints), module by
    module, as Darshan's job summary defines them (dlio_mpi_analysis.characterization.job_summary)."""
    lines = ["Job summary (as Darshan's job summary defines the figures)"]
    for module, s in c.summary.items():
        cost = s.io_cost
        lines.append(f"  {module}")
        lines.append(f"    I/O cost per process:     read {units.seconds(cost.read)} "
                     f"({_share(cost.read_share)}), write {units.seconds(cost.write)} "
                     f"({_share(cost.write_share)}), metadata {units.seconds(cost.meta)} "
                     f"({_share(cost.meta_share)})")
        if s.performance is not None:
            p = s.performance
            lines.append(f"    I/O performance estimate: {_mib_per_s(p.mib_per_s)} "
                         f"({units.size(p.bytes)} in {units.seconds(p.time)}: slowest rank "
                         f"{units.seconds(p.unique_time)} on its own files, "
                         f"{units.seconds(p.shared_time)} on shared files)")
        for category, f in s.file_categories.items():
            if category != "all" and not f.files:
                continue
            size = (f", mean size {units.size(f.mean_size)}, max size {units.size(f.max_size)}"
                    if f.max_size is not None else "")
            lines.append(f"    {category.replace('_', '-') + ' files:':<26}{f.files} "
                         f"({units.size(f.bytes_read)} read, {units.size(f.bytes_written)} written"
                         f"{size})")
        if s.common_access_sizes:
            lines.append("    common access sizes:      " + ", ".join(
                f"{size} B x {count:,}" for size, count in s.common_access_sizes))
        for label, files in (("top files by bytes", s.top_files_by_bytes),
                             ("top files by time", s.top_files_by_time)):
            if files:
                lines.append(f"    {label}:")
                lines += [f"      {f.name}: {units.size(f.bytes_read)} read, "
                          f"{units.size(f.bytes_written)} written, {units.seconds(f.io_time)}"
                          for f in files]
    if c.mounts:
        lines.append("  mount points:")
        lines += [f"    {m.mount_point} ({m.fs_type}): {m.files} files, "
                  f"{units.size(m.bytes_read)} read, {units.size(m.bytes_written)} written"
                  for m in c.mounts]
    hints = c.mpiio_hints
    if "set_hints" in hints:
        lines.append(f"  MPI-IO hints set by the job: {hints['set_hints']} times "
                     "(Darshan keeps no values)")
    if hints.get("log_hints"):
        lines.append(f"  MPI-IO hints of the log:     {'; '.join(hints['log_hints'])}")
    return lines


def _totals(c):
    t = c.totals
    files = t.files
    return [
        f"Job totals ({' + '.join(t.basis) or 'no POSIX or STDIO records'})",
        f"  bytes read:      {units.size(t.bytes_read)}",
        f"  bytes written:   {units.size(t.bytes_written)}",
        f"  files:           {files.total} ({files.shared} shared, {files.unique} unique; "
        f"{files.read} read, {files.written} written)",
        f"  I/O time:        slowest rank {units.seconds(t.io_time.slowest_rank)} "
        f"({_share(t.io_time.slowest_rank_share)} of run time), "
        f"mean per rank {units.seconds(t.io_time.mean_per_rank)} "
        f"({_share(t.io_time.mean_per_rank_share)})",
    ]


def _data_io(c):
    """The data and checkpoint files' figures (Characterization.data), then the files of the
    other roles, apart."""
    d = c.data
    if d is None:
        return []
    posix = d.modules.get("POSIX")
    trace = next((d.dxt[m] for m in ("DXT_POSIX", "DXT_STDIO", "DXT_MPIIO") if m in d.dxt),
                 None)
    lines = ["Data I/O (data and checkpoint files only)",
             f"  files:           {d.files} data, {d.checkpoint_files} checkpoint",
             f"  bytes read:      {units.size(d.bytes_read)} in {_count(d.reads)} reads"
             + (f" ({_pct(posix.sequential_read_pct)} sequential, "
                f"{_pct(posix.consecutive_read_pct)} consecutive)"
                if posix is not None and posix.sequential_read_pct is not None else ""),
             f"  bytes written:   {units.size(d.bytes_written)} in {_count(d.writes)} writes"]
    if trace is not None and trace.read_sizes is not None:
        lines.append(f"  read sizes:      median {units.size(trace.read_sizes.median)}, mean "
                     f"{units.size(trace.read_sizes.mean)} ({trace.module})")
    apart = [f"{role} {v['files']} files ({units.size(v['bytes_read'])} read, "
             f"{units.size(v['bytes_written'])} written)"
             for role, v in c.file_roles.items() if role not in ("data", "checkpoint")]
    if apart:
        lines.append("  not data:        " + "; ".join(apart))
    return lines


def _sizes(sizes):
    if sizes is None or not sizes.operations:
        return "-"
    return f"{sizes.min_bucket} / {sizes.median_bucket} / {sizes.max_bucket}"


def _balance(balance):
    if balance is None:
        return "-"
    # the bytes of records reduced over all ranks (shared files) belong to no one rank: said
    # apart, so that a job reading one shared file does not show 0 B per rank alone
    shared = f" + {units.size(balance.shared_bytes)} shared" if balance.shared_bytes else ""
    return (f"{units.size(balance.min_bytes)} / {units.size(balance.mean_bytes)} / "
            f"{units.size(balance.max_bytes)}{shared}")


# (row label, value of a ModuleMetrics as text)
MODULE_ROWS = (
    ("records", lambda m: str(m.records)),
    ("files", lambda m: str(m.files.total)),
    ("  shared / unique", lambda m: f"{m.files.shared} / {m.files.unique}"),
    ("bytes read", lambda m: units.size(m.bytes_read)),
    ("bytes written", lambda m: units.size(m.bytes_written)),
    *((op, lambda m, op=op: _count(m.ops.get(op)))
      for op in ("reads", "writes", "opens", "stats", "seeks", "syncs")),
    ("collective reads", lambda m: _count(m.ops.get("collective_reads"))),
    ("collective writes", lambda m: _count(m.ops.get("collective_writes"))),
    ("read size min/med/max", lambda m: _sizes(m.read_sizes)),
    ("mean read size", lambda m: units.size(m.read_sizes.mean) if m.read_sizes else "-"),
    ("write size min/med/max", lambda m: _sizes(m.write_sizes)),
    ("mean write size", lambda m: units.size(m.write_sizes.mean) if m.write_sizes else "-"),
    ("sequential reads", lambda m: _pct(m.sequential_read_pct)),
    ("consecutive reads", lambda m: _pct(m.consecutive_read_pct)),
    ("sequential writes", lambda m: _pct(m.sequential_write_pct)),
    ("consecutive writes", lambda m: _pct(m.consecutive_write_pct)),
    ("I/O time, slowest rank", lambda m: units.seconds(m.io_time.slowest_rank)),
    ("  share of run time", lambda m: _share(m.io_time.slowest_rank_share)),
    ("I/O time, mean per rank", lambda m: units.seconds(m.io_time.mean_per_rank)),
    ("  share of run time", lambda m: _share(m.io_time.mean_per_rank_share)),
    ("bytes/rank min/mean/max", lambda m: _balance(m.rank_balance)),
)


def _module_table(modules):
    if not modules:
        return ["No counter module records."]
    rows = [[label, *(cell(m) for m in modules.values())] for label, cell in MODULE_ROWS]
    return tables.table(rows, ["metric", *modules], align="lr")


def _dxt_summary(d):
    lines = [f"{d.module}{' (partial trace)' if d.partial else ''}: {d.operations} operations"]
    for op, sizes, bandwidth in (("read", d.read_sizes, d.read_bandwidth),
                                 ("write", d.write_sizes, d.write_bandwidth)):
        if sizes is None:
            continue
        lines.append(f"  {op + ' sizes:':<17}min {units.size(sizes.min)}, "
                     f"median {units.size(sizes.median)}, mean {units.size(sizes.mean)}, "
                     f"max {units.size(sizes.max)} "
                     f"({sizes.operations} ops, {sizes.zero_length} of zero length)")
        if bandwidth.operations:
            lines.append(f"  {op + ' bandwidth:':<17}min {units.size(bandwidth.min)}/s, median "
                         f"{units.size(bandwidth.median)}/s, max {units.size(bandwidth.max)}/s "
                         f"({bandwidth.zero_duration_excluded} zero-duration ops left out)")
    if d.read_pattern is not None:
        lines.append(f"  input read:      {d.read_pattern} ({_share(d.early_read_fraction)} "
                     f"of read bytes in the first 10% of run time)")
    if d.write_bursts:
        big = max(d.write_bursts, key=lambda b: b.bytes)
        bw = f", {units.size(big.bandwidth)}/s" if big.bandwidth else ""
        lines.append(f"  write bursts:    {len(d.write_bursts)}; largest {units.size(big.bytes)} "
                     f"by {big.ranks} ranks at {units.seconds(big.start)} in "
                     f"{units.seconds(big.end - big.start)}{bw}")
    if d.timeline:
        lines.append(f"  ranks:           {len(d.timeline)}, from "
                     f"{units.seconds(min(s.first_start for s in d.timeline))} to "
                     f"{units.seconds(max(s.last_end for s in d.timeline))}")
    return lines


def _mib_per_s(value):
    """Darshan's performance estimate, which its job summary gives in MiB/s."""
    return units.rate_in(value * units.UNIT_BYTES["MiB"], "MiB", 2)


def _count(value):
    return "-" if value is None else f"{value:,}"


def _pct(value):
    return "-" if value is None else f"{value:.1f}%"


def _share(value):
    return "-" if value is None else f"{100 * value:.1f}%"


def _process_roles(roles):
    """What else a set of per-process logs held besides the ranks' main processes."""
    others = [f"{n} {role}{'s' if n > 1 else ''}" for role, n in roles.items() if role != "main"]
    return f" ranks (main processes), {', '.join(others)}" if others else ""

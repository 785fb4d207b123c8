"""A run's figures across ranks: each phase's job-wide figures reduced from every rank's (never
gathered), the start-up figures, the summary, per_rank.csv's rows, and the summary's text."""
import os
import time

import numpy as np

from dlio_mpi.data import sampler
from dlio_mpi.display import units
from dlio_mpi.run import summary_layout
from dlio_mpi.run import sysinfo


def reduce_epochs(epochs, comm):
    """Job-wide figures of each epoch from every rank's numbers."""
    MPI = _mpi()
    out = []
    for e in epochs:
        wall = comm.allreduce(e["wall_s"], op=MPI.MAX)
        first_done = comm.allreduce(e["wall_s"], op=MPI.MIN)
        samples = comm.allreduce(e["samples"])
        moved = comm.allreduce(e["bytes_moved"])
        ops = comm.allreduce(e["read_ops"])
        # AU (MLPerf Storage): compute time over the training phase's wall time, first step's
        # I/O excluded, per rank; the job's is the mean over ranks
        denom = max(e["wall_s"] - e["first_step_io_s"], 1e-12)
        au = comm.allreduce(min(e["compute_s"] / denom, 1.0)) / comm.Get_size()
        hist = np.zeros_like(e["latency_hist"])
        comm.Allreduce(e["latency_hist"], hist, op=MPI.SUM)
        waits = np.zeros_like(e["step_wait_hist"])
        comm.Allreduce(e["step_wait_hist"], waits, op=MPI.SUM)
        out.append({
            # epochs numbered from 1, as the progress lines number them
            "phase": e["phase"], "epoch": e["epoch"] + 1 if e["epoch"] >= 0 else e["epoch"], "steps": e["steps"], "samples": samples,
            "duration_s": wall, "first_done_s": first_done, "last_done_s": wall,
            "au": au, "samples_per_s": samples / wall, "bytes_moved": moved,
            "bytes_per_s": moved / wall, "read_ops": ops,
            "io_wait_s_max": comm.allreduce(e["io_wait_s"], op=MPI.MAX),
            "latency_hist_read": hist.tolist(),
            "step_io_wait_hist": waits.tolist(),
            "compute_s_mean": comm.allreduce(e["compute_s"]) / comm.Get_size(),
            "io_wait_s_mean": comm.allreduce(e["io_wait_s"]) / comm.Get_size(),
        })
    return out


def _writes(wrote):
    """The write phases (io.write_first; one before every epoch with io.write_each_epoch)
    together: their time, bytes and bandwidth, and how many there were."""
    duration = sum(e["duration_s"] for e in wrote)
    moved = sum(e["bytes_moved"] for e in wrote)
    return {"duration_s": duration, "bytes_written": moved,
            "bandwidth_bytes_per_s": moved / duration if duration > 0 else 0.0,
            "times": len(wrote)}


def summary(cfg, size, everything, checkpoints, *, facts, startup, generated, not_emulated,
            read_threads, darshan_logs, bucket_bounds, started, hosts):
    """summary.json's content (dlio_mpi.run.summary_layout): the job-wide figures of every phase
    (everything, from reduce_epochs), the checkpoints, what the run ran on (facts, and hosts:
    a (name, CPUs, memory bytes) per host), start-up figures, and when the run started
    (seconds since the epoch)."""
    load = [e for e in everything if e["phase"] == "load"]
    wrote = [e for e in everything if e["phase"] == "write"]
    trained = [e for e in everything if e["phase"] == "train"]
    evals = [e for e in everything if e["phase"] == "eval"]
    unread = (cfg.num_samples - (trained[0]["steps"] if trained else 0) * cfg.reader.batch_size
              * size if cfg.reader.access == "stream" else
              sampler.unread_per_epoch(cfg.num_samples, size, cfg.reader.batch_size,
                                       cfg.io.remainder, cfg.io.layout, cfg.io.read_type))
    ended = time.time()
    own = {
        "config": cfg.to_dict(),
        "steps_per_epoch": trained[0]["steps"] if trained else 0,
        "samples_dropped_per_epoch": max(0, unread),
        "samples_padded_per_epoch": max(0, -unread),
        "load": load[0] if load else None,
        "write": _writes(wrote) if wrote else None,
        "evaluations": evals,
        "checkpoints": checkpoints,
        "not_emulated": not_emulated,
        "read_threads": read_threads,
        "files_generated": generated,
        "darshan_logs": darshan_logs,
        "au_threshold_percentage": 100 * cfg.metric.au,
        "bytes_moved": int(sum(e["bytes_moved"] for e in everything if e["phase"] != "write")),
        "epochs": trained,
        "histogram_bucket_lower_ns": bucket_bounds,
        "facts": facts,
        "startup": startup,
        "started": started,
        "duration_s": ended - started,
    }
    return summary_layout.layout(own, cfg, trained=trained, evaluations=evals,
                                 checkpoints=checkpoints, hosts=hosts, started=started,
                                 ended=ended)


# per_rank.csv's columns after the rank: when (seconds since the epoch) and after how long
# (seconds and CPU seconds) the rank had its first batch, and its peak RSS
STARTUP_COLUMNS = ("first_batch_unix_s", "first_batch_s", "first_batch_cpu_s", "peak_rss_mib")
PER_PHASE = ("wall_s", "io_wait_s", "compute_s", "bytes_moved")     # then per phase


def startup_figures(comm, first_batch):
    """Time and CPU until the first batch was read, and peak memory, worst over the ranks.
    Time counts from the process's start, or from DLIO_MPI_LAUNCH_TIME (seconds since the
    epoch) when the launcher's own start-up is to be included."""
    MPI = _mpi()
    origin = float(os.environ.get("DLIO_MPI_LAUNCH_TIME") or sysinfo.process_start_time())
    wall = (first_batch[0] - origin) if first_batch else 0.0
    cpu = first_batch[1] if first_batch else 0.0
    rss = sysinfo.peak_rss_mib()
    mine = {"first_batch_unix_s": first_batch[0] if first_batch else 0.0,
            "first_batch_s": wall, "first_batch_cpu_s": cpu, "peak_rss_mib": rss}
    return {"first_batch_s_max": comm.allreduce(wall, op=MPI.MAX),
            "first_batch_cpu_s_max": comm.allreduce(cpu, op=MPI.MAX),
            "first_batch_cpu_s_mean": comm.allreduce(cpu) / comm.Get_size(),
            "from_launch": "DLIO_MPI_LAUNCH_TIME" in os.environ,
            "peak_rss_mib_max": comm.allreduce(rss, op=MPI.MAX)}, mine


def per_rank_header(epochs):
    """per_rank.csv's header: the rank, its start-up figures, then each phase's figures."""
    return ["rank", *STARTUP_COLUMNS] + [
        f"{e['phase']}{'' if e['epoch'] < 0 else e['epoch'] + 1}_{k}" for e in epochs
        for k in PER_PHASE]


def per_rank_row(rank, startup, epochs):
    """This rank's row of per_rank.csv (its own figures, from startup_figures and its phases)."""
    return [rank] + [round(startup[k], 6) for k in STARTUP_COLUMNS] + [
        round(e[k], 6) for e in epochs for k in PER_PHASE]


def _mean(xs):
    return float(np.mean(xs)) if xs else None


def _mpi():
    from mpi4py import MPI
    return MPI


def _remainder_words(s):
    padded = s.get("samples_padded_per_epoch") or 0
    if padded:
        return f"{padded} samples padded per epoch"
    return f"{s['samples_dropped_per_epoch']} samples dropped per epoch"


def format_summary(summary):
    """The summary's text, as `run` prints it at the end."""
    s, m = summary_layout.own(summary), summary["metric"]
    ranks = summary["num_accelerators"]
    lines = [f"ranks {ranks}, {len(s['epochs'])} epochs of {s['steps_per_epoch']} steps"
             f" ({_remainder_words(s)})" if s["epochs"]
             else f"ranks {ranks}, checkpoints only"]
    for c in s.get("checkpoints") or []:
        published = f", published in {c['publish_s'] * 1e3:.1f} ms" \
            if c["op"] == "write" and "publish_s" in c else ""
        lines.append(f"checkpoint {c['index']} {c['op']}: {c['bytes']} bytes in "
                     f"{c['duration_s']:.3f} s ({units.rate_in(c['bandwidth_bytes_per_s'], 'MiB')}, "
                     f"{c['fsyncs']} fsyncs{published})")
    for e in s.get("evaluations") or []:
        lines.append(f"evaluation after epoch {e['epoch']}: {e['samples']} samples in "
                     f"{e['duration_s']:.3f} s, {units.rate_in(e['bytes_per_s'], 'MiB')} moved")
    if s.get("write"):
        w = s["write"]
        times = w.get("times", 1)
        lines.append(f"dataset written first (io.write_first"
                     + (f", {times} times: before every epoch" if times > 1 else "")
                     + f"): {w['bytes_written']} bytes in {w['duration_s']:.3f} s "
                     f"({units.rate_in(w['bandwidth_bytes_per_s'], 'MiB')})")
    if s.get("load"):
        ld = s["load"]
        lines.append(f"input read into memory at start: {ld['bytes_moved']} bytes in "
                     f"{ld['duration_s']:.3f} s")
    for e in s["epochs"]:
        lines.append(f"epoch {e['epoch']}: {e['samples']} samples in {e['duration_s']:.3f} s,"
                     f" {e['samples_per_s']:.1f} samples/s, {units.rate_in(e['bytes_per_s'], 'MiB')}"
                     f" moved, AU {100 * e['au']:.1f}%")
    if "train_au_mean_percentage" not in m:
        moved = sum(c["bytes"] for c in s["checkpoints"] if c.get("op") == "write")
        lines.append(f"no training epochs (checkpoints only): no AU or throughput; "
                     f"checkpoint bytes written {moved}")
        return "\n".join(lines)
    lines.append(f"train_au_mean_percentage {m['train_au_mean_percentage']:.2f} "
                 f"({m['train_au_meet_expectation']} against {s['au_threshold_percentage']:.0f}), "
                 f"train_throughput_mean_samples_per_second "
                 f"{m['train_throughput_mean_samples_per_second']:.1f}, "
                 f"train_io_mean_MB_per_second {m['train_io_mean_MB_per_second']:.1f}, "
                 f"bytes moved {s['bytes_moved']}")
    return "\n".join(lines)

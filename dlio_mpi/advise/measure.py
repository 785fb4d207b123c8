"""Measuring candidates: one run of a workload on every rank, rounds of runs in rotated order,
the time per epoch and the speedup with its spread, the budget, and --cold eviction (see
dlio_mpi.advise for the whole method)."""

import hashlib
import json
import os
import shutil
import statistics
import sys
import time
from dataclasses import dataclass, field

from dlio_mpi.config import loader as config
from dlio_mpi.run import summary_layout
from dlio_mpi.config.schema import SCHEMA

MIN_ROUNDS = 3
MAX_ROUNDS = 5
SETTLED = 0.03          # stop adding rounds once every spread is this small (relative)


class AdviseError(RuntimeError):
    """The starting point cannot be used (a missing log, a run directory without summary)."""


def minimal_doc(cfg):
    """A Config as a workload document holding only the keys that differ from the schema's
    defaults (what a person would write)."""
    out = {}
    for section, values in cfg.to_dict().items():
        body = {k: v for k, v in values.items() if v != SCHEMA[section][k].default}
        if body:
            out[section] = body
    return out


def merged(doc, change):
    """``doc`` with the partial workload ``change`` laid over it (a mapping value, such as
    io.mpiio_hints, merges key by key)."""
    out = json.loads(json.dumps(doc))
    for section, body in change.items():
        target = out.setdefault(section, {})
        for key, value in body.items():
            if isinstance(value, dict) and isinstance(target.get(key), dict):
                target[key] = {**target[key], **value}
            else:
                target[key] = value
    return out


def changes_dataset(change):
    return any(k != "data_folder" for k in change.get("dataset", {}))


@dataclass
class Candidate:
    """A workload to measure: ``name`` (a short slug), ``label`` (what changes, in words),
    ``finding`` (key of the finding it answers; "baseline", "combination"), ``evidence``,
    ``change`` (partial workload) and ``doc`` (the whole workload it runs)."""

    name: str
    label: str
    finding: str
    evidence: str
    change: dict
    doc: dict
    times: dict = field(default_factory=dict)      # round -> time per epoch (None: failed)
    runs: dict = field(default_factory=dict)       # round -> figures of the run
    error: str = None

    def to_dict(self):
        return {"name": self.name, "label": self.label, "finding": self.finding,
                "evidence": self.evidence, "change": self.change, "times": self.times,
                "runs": self.runs, "error": self.error}


def run_figures(full):
    """The figures advise keeps of a run: time per epoch (see the package docstring), AU,
    bytes moved per epoch (reads of the load, epochs and evaluations), samples/s."""
    summary, metric = summary_layout.own(full), full.get("metric") or {}
    epochs = summary.get("epochs") or []
    n = max(1, len(epochs))
    waited = sum(e["duration_s"] for e in epochs)
    waited += (summary.get("load") or {}).get("duration_s", 0.0)
    waited += sum(e["duration_s"] for e in summary.get("evaluations") or [])
    waited += sum(c["duration_s"] for c in summary.get("checkpoints") or [] if c["op"] == "write")
    return {"time_per_epoch_s": waited / n,
            "au_pct": metric.get("train_au_mean_percentage"),
            "bytes_moved_per_epoch": (summary.get("bytes_moved") or 0) / n,
            "samples_per_s": metric.get("train_throughput_mean_samples_per_second")}


def speedup(base, cand):
    """(median ratio, spread) over the rounds both measured (round -> time per epoch);
    spread None with one round."""
    ratios = [base[r] / cand[r] for r in sorted(set(base) & set(cand)) if base[r] and cand[r]]
    if not ratios:
        return None, None
    mid = statistics.median(ratios)
    return mid, (max(abs(r - mid) for r in ratios) if len(ratios) > 1 else None)


def _slug(text):
    keep = "".join(ch if ch.isalnum() else "_" for ch in text.lower())
    return "_".join(p for p in keep.split("_") if p)[:48] or "change"


class Advisor:
    """The measuring loop on every rank; rank 0 decides and tells the others."""

    def __init__(self, comm, out_dir, budget_s, cold=False, keep_data=False, echo=None):
        self.comm, self.rank = comm, comm.Get_rank()
        self.out = os.path.abspath(out_dir)
        self.budget, self.cold, self.keep_data = budget_s, cold, keep_data
        self.t0 = time.monotonic()
        self.longest = 0.0
        self.made_data = set()
        self.echo = echo or (lambda line: None)
        self.stopped_by_budget = False

    def left(self):
        return self.budget - (time.monotonic() - self.t0)

    def say(self, line):
        if self.rank == 0:
            self.echo(line)

    # -- one run -------------------------------------------------------------------------
    def data_folder(self, base_doc, doc):
        base = base_doc["dataset"]["data_folder"]
        if doc["dataset"] == base_doc["dataset"]:
            return base
        key = hashlib.sha1(json.dumps({k: v for k, v in doc["dataset"].items()
                                       if k != "data_folder"}, sort_keys=True).encode())
        return f"{base.rstrip('/')}_advise_{key.hexdigest()[:10]}"

    def run(self, doc, out, keep_oplog=False):
        """One run of ``doc`` into ``out``; returns its summary, or raises ConfigError or
        RankError (every rank raises it alike)."""
        from dlio_mpi.run import job as runner
        from dlio_mpi.run import status
        from dlio_mpi.run.exits import Interrupted

        extra = [f"output.folder={out}", "workflow.generate_data=true"]
        if keep_oplog:
            extra.append("io.keep_oplog=true")
        cfg = config.load(extra, doc=doc, doc_source="advise")
        if self.cold:
            self.evict(cfg.dataset.data_folder)
        t = time.monotonic()
        try:
            summary = runner.run(cfg, self.comm)
        except Interrupted as e:
            status.mark_stopped(cfg, "interrupted", str(e), rank=self.rank)
            raise
        except Exception as e:
            status.mark_stopped(cfg, "failed", str(e))
            raise
        self.longest = max(self.longest, time.monotonic() - t)
        return summary

    def evict(self, folder):
        """Drop the dataset's pages from the page cache of every host (one rank per host)
        before a run: reads go to the storage (--cold)."""
        from mpi4py import MPI
        local = self.comm.Split_type(MPI.COMM_TYPE_SHARED)
        try:
            if local.Get_rank() == 0 and os.path.isdir(folder):
                for root, _, files in os.walk(folder):
                    for name in files:
                        path = os.path.join(root, name)
                        try:
                            fd = os.open(path, os.O_RDONLY)
                        except OSError:
                            continue
                        try:
                            os.fdatasync(fd)
                            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                        finally:
                            os.close(fd)
        finally:
            local.Free()
        self.comm.Barrier()

    def measure(self, cand, rnd):
        """Run ``cand`` once (round ``rnd``); its time per epoch is appended (None when it
        failed or the budget would not hold it)."""
        from dlio_mpi.run import collective
        if cand.error:
            return True             # it failed once: not run again
        go = self.comm.bcast(self.left() >= self.longest * 1.1 if self.rank == 0 else None,
                             root=0)
        if not go:
            return False
        out = os.path.join(self.out, "runs", cand.name, f"round{rnd}" if rnd >= 0 else "warm")
        what = f"round {rnd + 1}" if rnd >= 0 else "warm-up"
        self.say(f"advise: {what}: {cand.label} ...")
        try:
            summary = self.run(cand.doc, out)
        except (config.ConfigError, collective.RankError) as e:
            cand.error = " ".join(str(e).split())
            cand.times[rnd] = None
            self.say(f"advise: {what}: {cand.label}: failed: {cand.error}")
            return True
        if self.rank == 0 and changes_dataset(cand.change):
            self.made_data.add(cand.doc["dataset"]["data_folder"])
        fig = run_figures(summary)
        cand.times[rnd] = fig["time_per_epoch_s"]
        cand.runs[rnd] = fig
        self.say(f"advise: {what}: {cand.label}: {fig['time_per_epoch_s']:.4g} s "
                 f"per epoch, AU {fig['au_pct'] or 0:.1f} %  ({self.left():.0f} s left)")
        return True

    def rounds(self, base, cands, first=0):
        """Measure ``base`` and ``cands`` in rounds ``first``, ``first + 1``, ... until
        MAX_ROUNDS of them, the budget, or every spread settled after MIN_ROUNDS; returns the
        next round's number."""
        everyone = [base] + cands
        for rnd in range(first, first + MAX_ROUNDS):
            shift = rnd % len(everyone)
            order = everyone[shift:] + everyone[:shift]
            for cand in order:
                if not self.measure(cand, rnd):
                    self.stopped_by_budget = True
                    return rnd
            settled = None
            if self.rank == 0 and rnd + 1 - first >= MIN_ROUNDS:
                spreads = [speedup(base.times, c.times) for c in cands if not c.error]
                settled = all(s is not None and m and s / m <= SETTLED for m, s in spreads)
            if self.comm.bcast(settled, root=0):
                return rnd + 1
        return first + MAX_ROUNDS

    def cleanup(self):
        if self.rank == 0 and not self.keep_data:
            for folder in sorted(self.made_data):
                shutil.rmtree(folder, ignore_errors=True)
        self.comm.Barrier()


def echo_progress(line):
    """A progress line on stderr (rank 0's): under mpiexec a rank cannot tell whether a person
    watches (Open MPI gives ranks a pseudo-terminal as stdout whatever mpiexec writes to, and a
    pipe as stderr), so advise, a study of minutes, always says what it is running."""
    print(line, file=sys.stderr, flush=True)

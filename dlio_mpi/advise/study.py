"""The advise flow on every rank: starting workload, diagnosis run, candidates within the
budget, rounds, the combination of the winning changes, and the result (rank 0)."""

import os
import time
import warnings

from dlio_mpi.config import loader as config
from dlio_mpi.run import summary_layout
from dlio_mpi.advise.measure import (MIN_ROUNDS, AdviseError, Advisor, Candidate, _slug,
                                     changes_dataset, merged, speedup)


def _agreed(comm, fn):
    """fn() on rank 0, its result (or its error, raised on every rank) broadcast."""
    result = error = None
    if comm.Get_rank() == 0:
        try:
            result = fn()
        except config.ConfigError as e:
            error = ("config", str(e))
        except Exception as e:      # noqa: BLE001 - a damaged log, a bad run directory, ...:
            # one line on every rank, none left waiting in the broadcast
            error = ("advise", " ".join(str(e).split()) or type(e).__name__)
    result, error = comm.bcast((result, error), root=0)
    if error:
        raise (config.ConfigError if error[0] == "config" else AdviseError)(error[1])
    return result


MEASURABLE_S = 1.0       # a run's epochs last this long at least, or it does more epochs
MAX_EPOCHS = 100


def _epochs_s(summary):
    return sum(e["duration_s"] for e in summary_layout.own(summary).get("epochs") or [])


def epochs_to_measure(summary):
    """The epochs a run needs for its epochs to last MEASURABLE_S (at most MAX_EPOCHS), or
    None when the workload's own epochs are long enough (or it trains no epochs)."""
    epochs = summary_layout.own(summary).get("epochs") or []
    total = _epochs_s(summary)
    if not epochs or total >= MEASURABLE_S or len(epochs) >= MAX_EPOCHS:
        return None
    if total <= 0:
        return MAX_EPOCHS
    return min(MAX_EPOCHS, int(len(epochs) * MEASURABLE_S / total) + 1)


def plan(findings, base_doc, adv, ranks, est_s):
    """Candidates of the findings, most severe first, those whose workload is invalid left out
    with the reason, and as many as the budget holds for MIN_ROUNDS rounds with the baseline
    (and a combination); returns (candidates, not measured)."""
    cands, skipped, seen = [], [], {}
    for f in findings:
        for label, change in f.changes.items():
            key = repr(sorted((s, sorted(b.items(), key=repr)) for s, b in change.items()))
            if key in seen:
                continue
            seen[key] = True
            doc = merged(base_doc, change)
            try:
                if changes_dataset(change):
                    doc["dataset"]["data_folder"] = adv.data_folder(base_doc, doc)
                cfg = config.load(["output.folder=/nonexistent"], doc=doc, doc_source=label)
                config.check_ranks(cfg, ranks)
            except config.ConfigError as e:
                skipped.append({"label": label, "finding": f.key, "change": change,
                                "why": f"not applicable: {e}"})
                continue
            cands.append(Candidate(name=f"{len(cands) + 1:02d}_{_slug(label)}", label=label,
                                   finding=f.key, evidence=f.evidence, change=change,
                                   doc=doc))
    fits = max(1, int(adv.left() / max(est_s, 1e-3) / MIN_ROUNDS) - 3)
    while len(cands) > 1 and len(cands) + 1 > fits:
        c = cands.pop()
        skipped.append({"label": c.label, "finding": c.finding, "change": c.change,
                        "why": f"budget: {MIN_ROUNDS} rounds of every candidate would not fit "
                               f"in {adv.budget:.0f} s (a run takes about {est_s:.1f} s)"})
    return cands, skipped


def combination(base_doc, cands, base, folder=None):
    """The best change of each finding that won beyond its spread, merged (a later change
    never overrides a key an earlier, faster one set); None when fewer than two won."""
    best = {}
    for c in cands:
        s, spread = speedup(base.times, c.times)
        if s is None or c.error or s - (spread or 0.0) <= 1.0:
            continue
        if c.finding not in best or s > best[c.finding][0]:
            best[c.finding] = (s, c)
    chosen = [c for _, c in sorted(best.values(), key=lambda x: -x[0])]
    if len(chosen) < 2:
        return None
    change, labels, taken = {}, [], set()
    for c in chosen:
        keys = {(sec, k) for sec, body in c.change.items() for k in body}
        if keys & taken:
            continue
        taken |= keys
        labels.append(c.label)
        for sec, body in c.change.items():
            change.setdefault(sec, {}).update(body)
    if len(labels) < 2:
        return None
    doc = merged(base_doc, change)
    if changes_dataset(change) and folder is not None:
        doc["dataset"]["data_folder"] = folder(base_doc, doc)
    return Candidate(name="combination", label=" + ".join(labels), finding="combination",
                     evidence="the winning change of each finding, together",
                     change=change, doc=doc)


def advise(comm, source, overrides, config_file, out_dir, budget_s, cold=False,
           keep_data=False, echo=None):
    """The whole flow (the package docstring); returns the result on rank 0, None elsewhere."""
    from dlio_mpi.advise.start import starting_point

    t0 = time.time()
    adv = Advisor(comm, out_dir, budget_s, cold=cold, keep_data=keep_data, echo=echo)
    kept = {}                   # rank 0's characterization of the source, not broadcast

    def start():
        doc, kept["char"], notes, kept["log"] = starting_point(source, overrides, config_file,
                                                                out_dir)
        return doc, notes

    base_doc, notes = _agreed(comm, start)
    adv.say("advise: baseline run with its op log, for the diagnosis")
    diag_dir = os.path.join(adv.out, "runs", "baseline", "diagnosis")
    summary = adv.run(base_doc, diag_dir, keep_oplog=True)
    more = epochs_to_measure(summary)
    if more:
        notes.append(f"the baseline's epochs took {_epochs_s(summary) * 1000:.1f} ms in all, "
                     f"too short to time against the noise: every run does {more} epochs "
                     f"(train.epochs) instead of {base_doc.get('train', {}).get('epochs', 1)}")
        base_doc = merged(base_doc, {"train": {"epochs": more}})

    def diagnosis():
        from dlio_mpi_analysis.characterization.characterize import characterize
        from dlio_mpi_analysis.diagnosis.diagnose import diagnose
        from dlio_mpi_analysis.errors import AnalysisWarning
        char = kept.get("char")
        if char is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", AnalysisWarning)
                char = characterize(diag_dir)
        from dlio_mpi.readers.prefetch import read_ahead_threads
        cfg = config.load([], doc=base_doc, doc_source="advise")
        # read threads are a change worth measuring only where they read ahead
        try:
            threaded = config.load([], doc=merged(base_doc, {"reader": {"read_threads": 1}}),
                                   doc_source="advise")
            ahead = (cfg.io.interface,) if read_ahead_threads(threaded) else ()
        except config.ConfigError:      # a workload that reads in its training loop
            ahead = ()
        # the findings of `analyze diagnose` on the source, with the changes of this workload
        findings = diagnose(char, cfg.to_dict(), summary, read_ahead=ahead, log=kept.get("log"))
        cands, skipped = plan(findings, base_doc, adv, comm.Get_size(), adv.longest)
        return [f.to_dict() for f in findings], cands, skipped

    findings, cands, skipped = _agreed(comm, diagnosis)
    for f in findings:
        adv.say(f"advise: finding: {f['title']}: {f['evidence']}")
    base = Candidate(name="baseline", label="baseline", finding="baseline", evidence="",
                     change={}, doc=base_doc)
    nxt = adv.rounds(base, cands)       # the baseline alone when nothing was found
    combo = _agreed(comm, lambda: combination(base_doc, cands, base, adv.data_folder)) \
        if cands else None
    if combo is not None and adv.left() > adv.longest * 2 * MIN_ROUNDS:
        adv.say(f"advise: the winning changes together: {combo.label}")
        adv.rounds(base, [combo], first=nxt)
        cands.append(combo)
    elif combo is not None:
        skipped.append({"label": combo.label, "finding": "combination", "change": combo.change,
                        "why": "budget: no time left to measure the winning changes together"})
    adv.cleanup()
    if comm.Get_rank() != 0:
        return None
    from dlio_mpi.advise.result import result
    return result(base, cands, findings, skipped, notes, summary, adv,
                  source=source or config_file or _workload_named(overrides), started=t0)


def _workload_named(overrides):
    names = [o.split("=", 1)[1] for o in overrides
             if o.split("=", 1)[0].lstrip("+") == "workload"]
    return f"workload={names[-1] if names else 'default'}"


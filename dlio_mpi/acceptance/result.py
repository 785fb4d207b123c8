"""result.json of a procedure: each run's figures (from its summary.json, DLIO's names), their
mean and standard deviation over the measured runs, the AU threshold and pass or fail, and
the compliance rules with their evidence."""
import statistics

from dlio_mpi.run import summary_layout

# result.json's name of a run's figure -> the summary's `metric` key it comes from
FIGURES = {"au_percentage": "train_au_mean_percentage",
           "throughput_samples_per_second": "train_throughput_mean_samples_per_second",
           "io_MB_per_second": "train_io_mean_MB_per_second"}


def run_record(name, seed, folder, summary):
    """One run as result.json lists it; folder: the run's own folder, relative to the
    procedure's."""
    metric = summary.get("metric", {})
    own = summary_layout.own(summary)
    record = {"run": name, "seed": seed, "folder": folder}
    record.update({k: metric.get(v) for k, v in FIGURES.items()})
    record.update({
        "accelerators": summary_layout.ranks(summary),
        "hostname": summary.get("hostname"), "num_hosts": summary.get("num_hosts"),
        "steps_per_epoch": own.get("steps_per_epoch", 0),
        "files_generated": own.get("files_generated", 0),
        "start": summary.get("start"), "end": summary.get("end")})
    return record


def figures(runs):
    """{figure: {"mean", "stdev"}} over the runs (the population standard deviation, as DLIO
    gives its figures' spread)."""
    out = {}
    for name in FIGURES:
        values = [float(r[name]) for r in runs if r[name] is not None]
        out[name] = {"mean": statistics.fmean(values) if values else None,
                     "stdev": statistics.pstdev(values) if values else None}
    return out


def result(*, workload, threshold, warmup, runs, compliance, division, datasize):
    """The whole of result.json."""
    stats = figures(runs)
    au = stats["au_percentage"]["mean"]
    passed = au is not None and au >= threshold
    reasons = [c["rule"] + ": " + c["evidence"] for c in compliance if not c["compliant"]]
    return {
        "procedure": "MLPerf Storage training",
        "workload": workload,
        "au_threshold_percentage": threshold,
        "pass": passed,
        "verdict": "pass" if passed else "fail",
        "compliant": not reasons,
        "division": division,
        "not_compliant_because": reasons,
        "figures": stats,
        "warmup": warmup,
        "runs": runs,
        "compliance": compliance,
        "datasize": datasize,
    }


def lines(doc):
    """The result as lines for the console."""
    out = [f"{r['run']:>7}: seed {r['seed']}, AU {r['au_percentage']:.2f} %, "
           f"{r['throughput_samples_per_second']:.1f} samples/s, "
           f"{r['io_MB_per_second']:.1f} MB/s  ({r['folder']})"
           for r in ([doc["warmup"]] if doc["warmup"] else []) + doc["runs"]]
    f = doc["figures"]
    out.append(f"   mean: AU {f['au_percentage']['mean']:.2f} % (stdev "
               f"{f['au_percentage']['stdev']:.2f}), "
               f"{f['throughput_samples_per_second']['mean']:.1f} samples/s (stdev "
               f"{f['throughput_samples_per_second']['stdev']:.1f}), "
               f"{f['io_MB_per_second']['mean']:.1f} MB/s")
    out.append(f"{doc['workload']}: {doc['verdict'].upper()} (AU threshold "
               f"{doc['au_threshold_percentage']:g} %), "
               + ("compliant" if doc["compliant"] else
                  f"NOT COMPLIANT ({len(doc['not_compliant_because'])} rules broken: "
                  + "; ".join(r.split(":")[0] for r in doc["not_compliant_because"]) + ")"))
    return out

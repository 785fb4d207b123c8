"""Expected characterization values, computed in plain Python straight from PyDarshan's raw
records (dict records, read separately from analysis/), following the definitions the
analysis documents. Negative counters (-1: not recorded by an old log format) count as 0."""

import statistics
from collections import defaultdict

import darshan

BUCKETS = ["0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M",
           "1M_4M", "4M_10M", "10M_100M", "100M_1G", "1G_PLUS"]

PREFIX = {"POSIX": "POSIX", "MPI-IO": "MPIIO", "STDIO": "STDIO", "H5F": "H5F", "H5D": "H5D"}


def job(path):
    report = darshan.DarshanReport(path, read_all=False)
    meta = report.metadata["job"]
    return {"nprocs": meta["nprocs"], "run_time": meta["run_time"]}


def records(path, module):
    """The module's records as flat dicts: rank, id and every counter by name."""
    report = darshan.DarshanReport(path, read_all=False)
    report.mod_read_all_records(module, dtype="numpy")
    return [{"rank": rec["rank"], "id": rec["id"], **rec["counters"], **rec["fcounters"]}
            for rec in report.records[module].to_dict()]


def relabel(recs, prefix, to="T"):
    """The records with the module prefix of their counter names replaced by ``to``, so that
    records of several modules can be pooled."""
    return [{(to + key[len(prefix):] if key.startswith(prefix + "_") else key): value
             for key, value in rec.items()} for rec in recs]


def total(recs, *names):
    return sum(max(rec[name], 0) for rec in recs for name in names)


def files(recs, nprocs, bytes_read=None, bytes_written=None):
    ranks = defaultdict(set)
    read = defaultdict(int)
    written = defaultdict(int)
    for rec in recs:
        ranks[rec["id"]].add(0 if nprocs == 1 else rec["rank"])
        if bytes_read:
            read[rec["id"]] += max(rec[bytes_read], 0)
            written[rec["id"]] += max(rec[bytes_written], 0)
    shared = sum(1 for r in ranks.values() if len(r) > 1 or -1 in r)
    return {"total": len(ranks), "shared": shared, "unique": len(ranks) - shared,
            "read": sum(1 for v in read.values() if v > 0) if bytes_read else None,
            "written": sum(1 for v in written.values() if v > 0) if bytes_read else None}


def histogram(recs, prefix):
    hist = {bucket: total(recs, prefix + bucket) for bucket in BUCKETS}
    n = sum(hist.values())
    used = [b for b in BUCKETS if hist[b]]
    median, seen = None, 0
    for bucket in BUCKETS:
        seen += hist[bucket]
        if n and median is None and 2 * seen >= n:
            median = bucket
    return {"histogram": hist, "operations": n, "min_bucket": used[0] if used else None,
            "median_bucket": median, "max_bucket": used[-1] if used else None}


def io_times(recs, prefix, nprocs, kinds=("READ", "WRITE", "META"), slowest=True):
    """(slowest-rank time, mean per-rank time) as the analysis defines them."""
    per_rank = defaultdict(float)
    reduced = 0.0
    everything = 0.0
    for rec in recs:
        t = sum(max(rec[f"{prefix}_F_{kind}_TIME"], 0.0) for kind in kinds)
        everything += t
        rank = 0 if nprocs == 1 else rec["rank"]
        if rank >= 0:
            per_rank[rank] += t
        elif slowest:
            reduced += max(rec[f"{prefix}_F_SLOWEST_RANK_TIME"], 0.0)
        else:
            reduced += t / nprocs
    return max(per_rank.values(), default=0.0) + reduced, everything / nprocs


def balance(recs, prefix, nprocs):
    per_rank = [0] * nprocs
    shared = 0
    own = False
    for rec in recs:
        moved = max(rec[f"{prefix}_BYTES_READ"], 0) + max(rec[f"{prefix}_BYTES_WRITTEN"], 0)
        rank = 0 if nprocs == 1 else rec["rank"]
        if rank >= 0:
            own = True
            per_rank[rank] += moved
        else:
            shared += moved
    if not own:
        return None
    return {"ranks": nprocs, "ranks_with_io": sum(1 for b in per_rank if b > 0),
            "min_bytes": min(per_rank), "mean_bytes": sum(per_rank) / nprocs,
            "max_bytes": max(per_rank), "shared_bytes": shared}


def dxt_segments(path, module):
    """(rank, op, length, start, end) of every traced operation."""
    report = darshan.DarshanReport(path, read_all=False)
    report.mod_read_all_dxt_records(module)
    nprocs = report.metadata["job"]["nprocs"]
    out = []
    for rec in report.records[module]:
        rank = 0 if nprocs == 1 else rec["rank"]
        for op in ("read", "write"):
            for seg in rec[f"{op}_segments"]:
                out.append((rank, op, seg["length"], seg["start_time"], seg["end_time"]))
    return out


def dxt_sizes(segments, op):
    lengths = [s[2] for s in segments if s[1] == op]
    if not lengths:
        return None
    return {"operations": len(lengths), "zero_length": lengths.count(0), "min": min(lengths),
            "mean": sum(lengths) / len(lengths), "median": statistics.median(lengths),
            "max": max(lengths)}


def dxt_bandwidth(segments, op):
    ops = [s for s in segments if s[1] == op]
    if not ops:
        return None
    zero_length = sum(1 for s in ops if s[2] == 0)
    zero_duration = sum(1 for s in ops if s[2] > 0 and s[4] <= s[3])
    bw = [s[2] / (s[4] - s[3]) for s in ops if s[2] > 0 and s[4] > s[3]]
    return {"operations": len(bw), "zero_length_excluded": zero_length,
            "zero_duration_excluded": zero_duration,
            "min": min(bw, default=None), "max": max(bw, default=None),
            "median": statistics.median(bw) if bw else None,
            "mean": sum(bw) / len(bw) if bw else None}

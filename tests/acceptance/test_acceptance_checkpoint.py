"""python -m dlio_mpi acceptance checkpoint: MLPerf Storage's checkpointing procedure at tiny
scale (2 ranks, a shrunk llama3 8B): the write run, the page cache dropped, the read run that
then reads from the file system (its op log holds the reads, the kernel counts the bytes
fetched from storage), result.json with each checkpoint's figures and the rules, each file its
rank's share; subset mode writes the first ranks' shares of the whole layout; bad input is one
line and exit 2 with nothing started."""
import csv
import glob
import json
import os

import numpy as np
import pytest

from mpirun import run_mpi

from dlio_mpi.config import loader as config
from dlio_mpi.run import oplog_format
from dlio_mpi.checkpoint import schedule

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

SHRINK = ["model.num_layers=1", "model.transformer.hidden_size=256",
          "model.transformer.ffn_hidden_size=512", "model.transformer.vocab_size=1024"]
N = 2


def acceptance(*args, check=True):
    return run_mpi(2, "run_cli.py", "acceptance", *args, timeout=240, check=check)


def refused(p):
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("dlio_mpi: ")]
    assert p.returncode == 2, p.stdout[-3000:]
    assert "Traceback" not in p.stdout
    assert len(lines) == 1, p.stdout[-3000:]
    return lines[0]


def shares(mode, ranks):
    """Each rank's bytes as the configuration sizes them."""
    extra = ["checkpoint.mode=subset", "model.parallelism.data=8"] if mode == "subset" else []
    size = schedule.size_of(config.load(["workload=llama3_8b", *SHRINK, *extra]), ranks)
    return [size.rank_bytes(r) for r in range(ranks)]


def procedure(tmp_path_factory, mode, *extra):
    results = tmp_path_factory.mktemp(mode) / "R"
    p = acceptance("checkpoint", "llama3_8b", "--mode", mode, "--results", results,
                   "--num-checkpoints", N, *SHRINK, *extra)
    folder = results / "checkpointing" / "llama3_8b" / "latest"
    return results, folder, json.loads((folder / "result.json").read_text()), p


@pytest.fixture(scope="module")
def default(tmp_path_factory):
    return procedure(tmp_path_factory, "default", "io.keep_oplog=true")


def test_result_holds_each_checkpoint_per_rank_and_in_total(default):
    results, folder, doc, p = default
    want = shares("default", 2)
    assert doc["model"] == "llama3_8b" and doc["mode"] == "default"
    assert doc["processes"] == 2 and doc["num_checkpoints"] == N
    assert doc["parallelism"] == {"tp": 1, "pp": 1, "dp": 8, "zero_stage": 3}
    records = doc["checkpoints"]
    assert [(r["op"], r["index"]) for r in records] == [
        ("write", 0), ("write", 1), ("read", 0), ("read", 1)]
    for r in records:
        assert r["bytes"] == sum(want)
        assert r["duration_s"] == pytest.approx(r["rank_seconds"]["max"])
        assert r["throughput_bytes_per_s"] == pytest.approx(r["bytes"] / r["duration_s"])
        assert r["rank_throughput_bytes_per_s"]["min"] <= r["throughput_bytes_per_s"]
        assert r["files"] == 2 and r["fsyncs"] == (2 if r["op"] == "write" else 0)
    for op in ("write", "read"):
        f = doc["figures"][op]
        durations = [r["duration_s"] for r in records if r["op"] == op]
        assert f["checkpoints"] == N
        assert f["duration_s"]["mean"] == pytest.approx(np.mean(durations))
        assert f["duration_s"]["stdev"] == pytest.approx(np.std(durations))
    with open(folder / "ranks.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * N * 2
    assert sorted({int(r["bytes"]) for r in rows}) == sorted(set(want))
    assert f"result: {folder.parent / os.readlink(folder)}/result.json" in p.stdout


def test_rules_listed_with_their_evidence(default):
    _, _, doc, _ = default
    rules = {r["rule"]: r for r in doc["compliance"]}
    assert not rules["the process count fits the model's parallelism"]["compliant"]
    assert "a CLOSED result runs 8 processes" in \
        rules["the process count fits the model's parallelism"]["evidence"]
    assert not rules["10 checkpoints written"]["compliant"]
    assert not rules["10 checkpoints read back after the writes"]["compliant"]
    assert rules["every checkpoint file fsynced when written"]["compliant"]
    assert rules["every checkpoint file fsynced when written"]["evidence"] == \
        "4 fsyncs for 4 files written"
    cache = rules["the page cache cleared between the writes and the reads"]
    assert cache["compliant"] and cache["evidence"].startswith(
        "fadvise: POSIX_FADV_DONTNEED on 4 files")
    changed = rules["only the parameters a CLOSED submission may change were changed"]
    assert not changed["compliant"] and "model.num_layers=1 (not allowed)" in changed["evidence"]
    assert doc["compliant"] is False and doc["division"] == "invalid"
    assert len(doc["not_compliant_because"]) == sum(not r["compliant"] for r in rules.values())


def test_each_file_holds_its_ranks_share(default):
    results, _, _, _ = default
    want = shares("default", 2)
    for i in range(N):
        for r in range(2):
            path = results / "checkpoints" / "llama3_8b" / f"ckpt-{i:06d}-r{r:06d}.bin"
            assert path.stat().st_size == want[r]


def test_the_reads_after_the_cache_is_dropped_come_from_the_file_system(default):
    """The read run's op logs hold every byte of every checkpoint read, and the kernel counts
    at least as many bytes fetched from storage by the read run's ranks: the page cache did
    not serve them."""
    _, folder, doc, _ = default
    read_run = folder / doc["runs"]["read"]
    logs = sorted(glob.glob(str(read_run / "oplog_rank*.npz")))
    assert len(logs) == 2
    total = 0
    for path in logs:
        with np.load(path) as z:
            phases = list(z["phases"])
            i = phases.index("checkpoint")
            ops = z[oplog_format.column_key(i, "op")]
            nbytes = z[oplog_format.column_key(i, "bytes")]
            total += int(nbytes[ops == oplog_format.OP["read"]].sum())
            assert not (ops == oplog_format.OP["write"]).any()
    read = sum(r["bytes"] for r in doc["checkpoints"] if r["op"] == "read")
    assert total == read
    assert doc["page_cache"]["method"] == "fadvise"
    assert doc["page_cache"]["files"] == 4
    assert doc["page_cache"]["read_run_storage_bytes"] >= read


def test_each_run_is_a_run_mlpstorage_finds(default):
    """The write run and the read run each hold summary.json and one *_metadata.json, whose
    benchmark type is the one mlpstorage derives from the run's workflow."""
    _, folder, doc, _ = default
    for phase, (writes, reads) in (("write", (N, 0)), ("read", (0, N))):
        run = folder / doc["runs"][phase]
        meta = glob.glob(str(run / "*_metadata.json"))
        assert len(meta) == 1 and (run / "summary.json").is_file()
        with open(meta[0]) as f:
            m = json.load(f)
        assert os.path.basename(meta[0]) == f"checkpointing_{m['run_datetime']}_metadata.json"
        assert m["benchmark_type"] == "checkpointing" and m["args"]["num_processes"] == 2
        assert (m["args"]["num_checkpoints_write"], m["args"]["num_checkpoints_read"]) == \
            (writes, reads)


def test_subset_mode_writes_the_first_ranks_shares(tmp_path_factory):
    results, _, doc, _ = procedure(tmp_path_factory, "subset")
    whole = shares("default", 8)
    assert shares("subset", 2) == whole[:2]
    assert doc["mode"] == "subset"
    assert [r["bytes"] for r in doc["checkpoints"]] == [sum(whole[:2])] * (2 * N)
    for r in range(2):
        path = results / "checkpoints" / "llama3_8b" / f"ckpt-000000-r{r:06d}.bin"
        assert path.stat().st_size == whole[r]
    rule = doc["compliance"][0]
    assert "playing ranks 0 .. 1 of its 8" in rule["evidence"]


@pytest.mark.parametrize("args, line", [
    (["llama3_9b"], "model 'llama3_9b': MLPerf Storage's checkpointing rules define "
     "llama3_8b, llama3_70b, llama3_405b, llama3_1t"),
    (["llama3_70b"], "2 processes do not fit llama3_70b's parallelism (TP 8 x PP 1 x DP 8): "
     "default mode runs a multiple of TP x PP = 8 processes (64 for a CLOSED result)"),
    (["llama3_8b", "checkpoint.num_checkpoints_write=3"],
     "'checkpoint.num_checkpoints_write=3': the procedure sets "
     "checkpoint.num_checkpoints_write (--num-checkpoints)"),
    (["llama3_8b", "--num-checkpoints", "0"], "--num-checkpoints 0: at least 1"),
])
def test_bad_input_refused_before_anything_starts(tmp_path, args, line):
    results = tmp_path / "R"
    p = acceptance("checkpoint", *args, "--results", results, check=False)
    assert refused(p) == f"dlio_mpi: acceptance: {line}"
    assert not results.exists()

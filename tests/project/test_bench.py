"""The benchmark scripts run end to end on tiny sizes and end with their JSON line."""
import json
import os
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

SCRIPTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "scripts", "benchmarks")


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed (scripts/setup.sh "
                    "installs it)")
def test_bench_checkpoint_tiny(tmp_path):
    """One round of 8 MiB checkpoints: a table, then JSON with every ratio key; without IOR
    (none on PATH) its ratios are null and one line says so."""
    env = dict(os.environ, PATH=os.pathsep.join(
        d for d in os.environ.get("PATH", "").split(os.pathsep)
        if not os.path.exists(os.path.join(d, "ior"))))
    p = subprocess.run([sys.executable, os.path.join(SCRIPTS, "bench_checkpoint.py"),
                        "--rounds", "1", "--size", "8m", "--dir", str(tmp_path),
                        "--settle", "0.1"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    lines = p.stdout.strip().splitlines()
    out = json.loads(lines[-1])
    for fmt, tool in (("file_per_rank", "fio"), ("mpiio", "ior"), ("hdf5", "ior")):
        for pre in ("", "read_"):
            assert f"{pre}ratio_{fmt}_vs_{tool}" in out
            assert out[f"emulator_{'write' if not pre else 'read'}_gb_per_s_{fmt}"] > 0
    assert out["ratio_file_per_rank_vs_fio"] > 0 and out["read_ratio_file_per_rank_vs_fio"] > 0
    assert out["ratio_mpiio_vs_ior"] is None and out["ior"] is None
    assert sum("IOR not found" in x for x in lines) == 1
    assert out["rounds"] == 1 and out["size_bytes"] == 8 << 20 and out["settle_s"] == 0.1
    assert out["free_page_reporting"] in (True, False, None)
    # memory written then freed before each side starts: twice the checkpoint by default
    assert out["back_memory_bytes"] == 2 * (8 << 20) and out["back_memory_s"] > 0
    # the tools start their I/O when the emulator would: launched later by its start-up
    assert out["emulator_startup_s"] > 0
    assert out["tool_delay_s"] == pytest.approx(max(0.0, out["emulator_startup_s"] - 0.3),
                                                abs=0.011)
    for fmt in ("file_per_rank", "mpiio", "hdf5"):     # publishing measured apart
        assert out[f"emulator_publish_ms_{fmt}"] > 0
        assert 0 < out[f"emulator_publish_share_{fmt}"] < 1
        assert sum(x.startswith(f"{fmt}: publishing the write") for x in lines) == 1
    assert not os.listdir(tmp_path)         # its files are gone


def test_bench_checkpoint_formats(tmp_path):
    """--formats runs only those formats; an unknown one is one line and exit status 1."""
    cmd = [sys.executable, os.path.join(SCRIPTS, "bench_checkpoint.py"), "--rounds", "1",
           "--size", "4m", "--dir", str(tmp_path), "--settle", "0"]
    p = subprocess.run(cmd + ["--formats", "mpiio"], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ))   # (see test_bench_read_threads_tiny)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["emulator_write_gb_per_s_mpiio"] > 0
    assert not any("file_per_rank" in k or "hdf5" in k for k in out if k != "hdf5_baseline")
    p = subprocess.run(cmd + ["--formats", "mpiio,tar"], capture_output=True, text=True,
                       timeout=60, env=dict(os.environ))
    assert p.returncode == 1 and p.stderr.strip().splitlines() == [
        "bench-checkpoint: --formats mpiio,tar: use some of file_per_rank, mpiio, hdf5"]
    p = subprocess.run(cmd + ["--back-memory", "-1"], capture_output=True, text=True,
                       timeout=60, env=dict(os.environ))
    assert p.returncode == 1 and p.stderr.strip().splitlines() == [
        "bench-checkpoint: --back-memory -1.0: must be at least 0"]
    p = subprocess.run(cmd + ["--back-memory", "1e9"], capture_output=True, text=True,
                       timeout=60, env=dict(os.environ))     # checked before any run
    err = p.stderr.strip().splitlines()
    assert p.returncode == 1 and len(err) == 1 and err[0].startswith(
        "bench-checkpoint: --back-memory 1000000000.0 x --size 4m: ") \
        and "more than half the free memory" in err[0]
    assert not os.listdir(tmp_path)


@pytest.mark.parametrize("extra", [[], ["--stream"]])
def test_bench_read_threads_tiny(tmp_path, extra):
    """One round on 8 files: a row per thread count, then JSON with the AU of each and the
    ratios to no threads; its files are gone. --stream: the files read as a stream."""
    p = subprocess.run([sys.executable, os.path.join(SCRIPTS, "bench_read_threads.py"),
                        "--rounds", "1", "--threads", "0,2", "--files", "8", "--epochs", "2",
                        "--interface", "stdio", "--dir", str(tmp_path), *extra],
                       capture_output=True, text=True, timeout=120,
                       # explicit: a test process that initialized MPI carries Open MPI's
                       # variables in its C environment, which would confuse the child mpiexec
                       env=dict(os.environ))
    assert p.returncode == 0, p.stderr[-3000:]
    lines = p.stdout.strip().splitlines()
    out = json.loads(lines[-1])
    assert [ln.split()[0] for ln in lines[1:-1]] == ["0", "2"]
    assert 0 < out["au_percent_0_read_threads"] <= 100
    assert 0 < out["au_percent_2_read_threads"] <= 100
    assert out["au_vs_no_threads_min"] == out["au_vs_no_threads_2_read_threads"] > 0
    assert out["interface"] == "stdio" and out["rounds"] == 1
    assert out["stream"] == bool(extra)
    assert not os.listdir(tmp_path)


def test_readahead_step_tiny():
    """The engine-alone loop: a row per thread count, then JSON with each one's step parts."""
    p = subprocess.run([sys.executable, os.path.join(SCRIPTS, "readahead_step.py"),
                        "--threads", "1,2", "--steps", "20", "--mib", "1", "--compute", "0.001"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    lines = p.stdout.strip().splitlines()
    out = json.loads(lines[-1])
    assert [ln.split()[0] for ln in lines[1:-1]] == ["1", "2"]
    for t in ("1", "2"):
        r = out["threads"][t]
        assert r["step_ms"] >= 1.0 and r["queue_ms"] > 0 and r["wait_ms"] >= 0

"""A replay is sized before it makes anything: one that does not fit the free space of its
folder is refused with the numbers (exit 2), and ``--scale`` shrinks it while keeping the
pattern, which a fit of the scaled run's op logs finds again. The small folder is a tmpfs
mounted for the test (root only)."""
import json
import os
import subprocess
import sys

import pytest

import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.replays import replay_size
from dlio_mpi_analysis.replays.replay import replay

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                    "darshan")
ROOT = os.path.dirname(os.path.dirname(HERE))
# the DLIO benchmark's HDF5 job: 16 files of 8 samples of 256 KiB (32 MiB), 2 ranks, batch 4
LOG = os.path.join(HERE, "dlio_hdf5.darshan")


@pytest.fixture
def small_folder(tmp_path):
    """A 16 MiB tmpfs: half the dataset of LOG."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    where = tmp_path / "small"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


def test_a_replay_larger_than_its_folder_is_refused(small_folder):
    out = small_folder / "replay"
    done = subprocess.run([sys.executable, "-m", "dlio_mpi_analysis", "replay", LOG, "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("analyze: replay: needs 33.1 MiB (")
    assert f"in {small_folder}, which has 16 MiB (16777216 bytes) free: give --scale " \
        in last
    assert "Traceback" not in done.stderr
    # the estimate came first, as a progress line: the dataset, its reads, a time
    assert any(line.startswith("replay: dataset 32.1 MiB, reads ") and " to run (" in line
               for line in done.stderr.splitlines())
    assert not out.exists()         # nothing made
    suggested = float(last.split("--scale ")[1].split()[0])
    assert 0.25 <= suggested < 0.5


def test_a_scaled_replay_keeps_the_pattern(small_folder, monkeypatch):
    """A quarter of the files (4 of 16, 4 steps a rank), everything else as fitted: a fit of
    the scaled run is the fit of the real job but for the file count."""
    monkeypatch.setattr("dlio_mpi_analysis.replays.replay.PROGRESS_EVERY_S", 0.2)
    said = []
    r = replay(LOG, small_folder / "replay", scale=0.25, progress=said.append)
    kept = json.loads((small_folder / "replay" / "replay.json").read_text())["scale"]
    assert kept["changed"] == {"dataset.num_files_train": [16, 4]}
    assert kept["dataset_ratio"] == kept["read_ratio"] == 0.25
    assert any(m.startswith("scaled by 0.25: dataset.num_files_train 16 -> 4") for m in said)
    assert any(m.startswith(("writing the dataset: ", "running: ")) for m in said), said
    assert r.emulated["bytes_read"] == pytest.approx(r.real["bytes_read"] / 4, rel=0.02)
    real = analysis.fit(LOG).workload
    scaled = analysis.fit(r.run_dir).workload
    assert scaled["dataset"] == {**real["dataset"], "num_files_train": 4}
    assert scaled["reader"] == real["reader"]
    assert scaled["io"] == real["io"]
    assert scaled["train"]["epochs"] == real["train"]["epochs"]
    # the compute a fit sees is the gap between a step's reads: on a busy machine the scaled
    # run's gaps also hold the waits for a core, which only lengthen them
    assert 0.75 <= scaled["train"]["computation_time"] / real["train"]["computation_time"] <= 1.6


def test_a_pattern_at_its_least_is_not_shrunk():
    """One shared file of 4 KiB samples, read once (IOR -z): nothing can go, and the scaling
    says so."""
    f = analysis.fit(os.path.join(HERE, "ior_random.darshan"))
    scaled, s = replay_size.scale(f.workload, 0.1, f.ranks)
    assert scaled == f.workload and s.changed == {}
    assert "no smaller replay keeps the pattern" in s.text()

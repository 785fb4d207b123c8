"""The processes of a job without MPI, one Darshan log each, told apart: main processes (the
ranks), data-loader workers (forked, or spawned with multiprocessing's spawn start method),
resource trackers and launcher helpers. Real logs of tests/fixtures/darshan (truth.json)."""
import json
import os

import pytest

import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.loading.loader import load
from dlio_mpi_analysis.loading.process_roles import SPAWNED, TRACKER, exe_role
from dlio_mpi_analysis.characterization.text import render_text

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                    "darshan")
with open(os.path.join(HERE, "truth.json")) as _f:
    TRUTH = json.load(_f)
SPAWN = os.path.join(HERE, "spawn_npy_workers")


def test_command_lines_name_spawned_workers_and_trackers():
    assert exe_role("/usr/bin/python3 -B -c from multiprocessing.spawn import spawn_main; "
                    "spawn_main(tracker_fd=6, pipe_handle=8) --multiprocessing-fork") == SPAWNED
    assert exe_role("/usr/bin/python3 -B -c from multiprocessing.resource_tracker import "
                    "main;main(5)") == TRACKER
    assert exe_role("/usr/bin/python3 train.py --spawn_main") is None


def test_spawned_workers_take_their_main_process_rank():
    """16 logs of one job id: 2 main processes are the ranks; each one's 6 workers (2 per
    epoch) read its shard, and the resource trackers are no process of the job."""
    t = TRUTH["spawn_npy_workers"]
    job = load(SPAWN, dxt=True)
    assert len(job.paths) == 16 and job.nprocs == t["ranks"] == 2
    assert job.process_roles == t["processes"]
    assert {r: len(spans) for r, spans in job.workers.items()} == {0: 6, 1: 6}
    posix = job.records["POSIX"].frame()
    assert posix.groupby("id")["rank"].nunique().max() == 1     # each file read by one rank
    assert posix.groupby("rank")["id"].nunique().to_dict() == {0: t["files_per_rank"],
                                                              1: t["files_per_rank"]}
    assert set(job.dxt_segments["DXT_POSIX"]["rank"]) == {0, 1}
    assert "spawn_loader.py" in job.exe


def test_spawned_workers_are_read_threads():
    t = TRUTH["spawn_npy_workers"]
    f = analysis.fit(SPAWN)
    ds, rd = f.workload["dataset"], f.workload["reader"]
    assert f.ranks == t["ranks"] and rd["read_threads"] == t["read_threads"]
    assert (ds["format"], ds["num_files_train"], ds["num_samples_per_file"]) \
        == (t["format"], t["num_files"], t["samples_per_file"])
    assert ds["record_length"] == pytest.approx(t["sample_bytes"], rel=0.05)
    assert (rd["batch_size"], f.workload["train"]["epochs"]) == (t["batch_size"], t["epochs"])
    assert any("spawned worker processes" in n for n in f.notes), f.notes


def test_characterization_names_the_roles():
    c = analysis.characterize(SPAWN)
    assert c.nprocs == 2 and c.to_dict()["process_roles"] == TRUTH["spawn_npy_workers"][
        "processes"]
    assert "processes:   2 ranks (main processes), 12 spawned workers, 2 resource trackers" \
        in render_text(c)


@pytest.mark.parametrize("name,roles", [
    ("dlio_npz_workers", {"main": 1, "forked worker": 2, "helper": 2}),
    ("torch_npy_workers", {"main": 1, "forked worker": 4})])
def test_forked_workers_load_as_before(name, roles):
    job = load(os.path.join(HERE, name))
    assert job.nprocs == 1 and job.process_roles == roles
    assert list(job.workers) == [0] and len(job.workers[0]) == roles["forked worker"]
    assert set(job.records["POSIX"]["rank"]) == {0}



def test_a_python_launcher_that_starts_its_ranks_as_new_programs_is_a_helper():
    """torchrun (a Python program) starts 2 ranks as new Python programs (their own job ids: no
    fork parentage), with no I/O of its own; the same interpreter, another program: a helper,
    not a third rank (the replay spread the 64 files over 3 ranks and dropped 4 an epoch)."""
    from dlio_mpi_analysis.loading.process_roles import _program

    assert _program("/v/bin/python3 /v/bin/torchrun --nproc_per_node=2 t.py") \
        == "/v/bin/python3 /v/bin/torchrun"
    assert _program("/v/bin/python3 -u t.py d") == "/v/bin/python3 t.py"
    assert _program("python -m torch.distributed.run t.py") == "python -m torch.distributed.run"
    assert _program("python -W ignore t.py") == "python t.py"
    assert _program("uname -p") == "uname"
    job = load(os.path.join(HERE, "torchrun_ddp"))
    assert job.nprocs == 2 and job.process_roles == {"main": 2, "helper": 1}
    f = analysis.fit(os.path.join(HERE, "torchrun_ddp"))
    t = TRUTH["torchrun_ddp"]
    assert f.ranks == 2
    assert (f.workload["dataset"]["num_files_train"], f.workload["reader"]["batch_size"]) \
        == (t["num_files"], t["batch_size"])


def test_a_resource_tracker_that_outlives_its_main_process_is_no_rank():
    """The DLIO benchmark run alone (no launcher), 2 spawned workers: multiprocessing's tracker
    ends 1.27 s after the main process (it cleans up after it), which no spawned worker may do:
    it is the main's all the same, 1 rank (2 before: the tracker, reading Python's modules,
    a rank of its own with no data)."""
    name = "dlio_npy_spawn_tracker_outlives"
    job = load(os.path.join(HERE, name))
    assert job.nprocs == TRUTH[name]["ranks"] == 1
    assert job.process_roles["main"] == 1 and job.process_roles["spawned worker"] == 2
    assert job.process_roles["resource tracker"] == 1
    f = analysis.fit(os.path.join(HERE, name))
    assert f.ranks == 1 and f.workload["reader"]["read_threads"] == 2


def test_a_launcher_beside_ranks_with_forked_workers_is_a_helper():
    """torchrun starts 2 ranks as new Python programs, each with 2 forked DataLoader workers
    that make all the reads; the launcher reads its modules (and Python's tempfile probe)
    only, no file of a data role: a helper, 2 ranks (3 before: the launcher a rank, the 64
    files spread over 3 in the replay, 6 % fewer bytes)."""
    name = "torchrun_fork_workers_2r"
    job = load(os.path.join(HERE, name))
    assert job.nprocs == TRUTH[name]["ranks"] == 2
    assert job.process_roles == {"main": 2, "forked worker": 8, "helper": 1}
    f = analysis.fit(os.path.join(HERE, name))
    ds, rd = f.workload["dataset"], f.workload["reader"]
    assert f.ranks == 2 and (ds["num_files_train"], rd["read_threads"]) == (64, 2)

"""What a run says while it runs, as a batch job's log gets it: rank 0's lines reach a pipe as
each is written (each epoch's line as the epoch ends, a line every few seconds within one),
timestamped; warnings on stderr; -q and -v; the same lines in the run's log file."""
import os
import re
import subprocess
import sys
import threading
import time

from mpirun import mpiexec_cmd
import pytest

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINE = re.compile(r"^\[(INFO|DEBUG)\] \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d ")


def run_reading_lines(n, *args, env=None, timeout=120):
    """Run `python -m dlio_mpi` on n ranks with stdout and stderr pipes; returns (stdout
    lines, each with the monotonic time it arrived, stderr, exit status, when the job
    ended)."""
    cmd = mpiexec_cmd(n) + [sys.executable, os.path.join(HERE, "mpi", "run_cli.py"), *args]
    full_env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1", **(env or {}))
    lines, err = [], []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=full_env, start_new_session=True) as p:
        reader = threading.Thread(target=lambda: err.append(p.stderr.read()), daemon=True)
        reader.start()
        killer = threading.Timer(timeout, p.kill)
        killer.start()
        try:
            for line in p.stdout:
                lines.append((time.monotonic(), line.rstrip("\n")))
            p.wait()
            ended = time.monotonic()
        finally:
            killer.cancel()
        reader.join()
    return lines, err[0], p.returncode, ended


def common(tmp_path, epochs, compute):
    # 2 ranks, 8 files of 4 samples, batches of 2: 8 steps an epoch
    return [f"dataset.data_folder={tmp_path / 'data'}", f"output.folder={tmp_path / 'out'}",
            "dataset.num_files_train=8", "dataset.num_samples_per_file=4",
            "dataset.record_length=4096", "reader.batch_size=2", f"train.epochs={epochs}",
            f"train.computation_time={compute}", "workflow.generate_data=true"]


def test_each_epoch_reaches_a_pipe_as_it_ends(tmp_path):
    """A 5 s run of 5 epochs: the first epoch's line arrives a second or more before the job
    ends, lines within an epoch arrive before its end (DLIO_MPI_PROGRESS_EVERY), each line
    timestamped; the dataset's generation is said; the warning goes to stderr."""
    lines, err, rc, ended = run_reading_lines(
        2, "run", *common(tmp_path, 5, 0.125), env={"DLIO_MPI_PROGRESS_EVERY": "0.3"})
    text = "\n".join(line for _, line in lines)
    assert rc == 0, text + err
    said = [(t, line) for t, line in lines if LINE.match(line)]
    first = [t for t, line in said if "Ending epoch 1 of 5 - 8 steps completed in" in line]
    assert first and ended - first[0] >= 1.0, text
    within = [t for t, line in said
              if re.search(r"epoch 1/5: \d of 8 steps, [\d.,]+ samples/s, \d+ s left", line)]
    assert within and within[0] < first[0], text
    assert any("generating the dataset in" in line for _, line in said), text
    assert "fits in the memory of one host" in err and "fits in the memory" not in text
    log = (tmp_path / "out" / "latest" / "dlio_mpi.log").read_text()
    assert "Ending epoch 5 of 5" in log and "fits in the memory of one host" in log


def test_quiet_and_verbose(tmp_path):
    lines, err, rc, _ = run_reading_lines(1, "run", "-q", *common(tmp_path, 1, 0))
    text = "\n".join(line for _, line in lines)
    assert rc == 0, text + err
    assert not any(LINE.match(line) for _, line in lines), text
    assert "train_au_mean_percentage" in text          # the results still
    lines, err, rc, _ = run_reading_lines(1, "run", "-v", *common(tmp_path, 1, 0))
    text = "\n".join(line for _, line in lines)
    assert rc == 0, text + err
    assert "[DEBUG]" in text and "epoch 1 of 1: 16 steps expected" in text


def test_generate_says_how_far_it_is(tmp_path):
    lines, err, rc, _ = run_reading_lines(
        2, "generate", *common(tmp_path, 1, 0), env={"DLIO_MPI_PROGRESS_EVERY": "0"})
    text = "\n".join(line for _, line in lines)
    assert rc == 0, text + err
    assert re.search(r"generating: \d of 8 files, [\d.,]+ files/s", text), text
    assert "8 files written" in text

"""The `analyze` command group: through click's CliRunner and as `python -m dlio_mpi_analysis.cli`."""

import json
import os
import subprocess
import sys

import yaml
from click.testing import CliRunner

import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.cli import analyze
from dlio_mpi.config import loader as config
from oplog_fixtures import call, write_run

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MPI_IO_TEST = "release_logs__mpi-io-test-x86_64-3.5.0"


def _invoke(*args):
    return CliRunner().invoke(analyze, [str(a) for a in args])


def _run(tmp_path):
    calls = [call("open", 0, 100)] + [call("read", 1000 + i * 1000, 500, offset=i * 4096,
                                           nbytes=4096) for i in range(8)]
    return write_run(tmp_path / "run", {0: [calls], 1: [calls]}, phase_s=0.01)


def test_characterize_text_and_json(log, tmp_path):
    path = log(MPI_IO_TEST)
    text = _invoke("characterize", path)
    assert text.exit_code == 0
    assert text.output == analysis.render_text(analysis.characterize(path, dxt=True))
    data = json.loads(_invoke("characterize", "--json", path).output)
    assert data == analysis.characterize(path, dxt=True).to_dict()
    both = json.loads(_invoke("characterize", "--json", path, _run(tmp_path)).output)
    assert [d["source"] for d in both] == ["darshan", "oplog"]


def test_compare(log, tmp_path):
    run = _run(tmp_path)
    same = json.loads(_invoke("compare", "--json", run, run, "--label", "a",
                              "--label", "b").output)
    assert same["scores"] == {"a": 1.0, "b": 1.0} and same["labels"] == ["a", "b"]
    text = _invoke("compare", log(MPI_IO_TEST), run)
    assert text.exit_code == 0
    # the score's line, then what cost it most
    assert any(line.startswith(f"similarity of run to {MPI_IO_TEST}")
               for line in text.output.splitlines()), text.output
    assert _invoke("compare", run).exit_code == 2


def test_fit_writes_a_loadable_workload(log, tmp_path):
    out = tmp_path / "w.yaml"
    result = _invoke("fit", log(MPI_IO_TEST), "-o", out, "--data-folder", "/scratch/d")
    assert result.exit_code == 0
    assert result.output.endswith(f"# written to {out}\n")
    cfg = config.load([], config_file=str(out))
    assert (cfg.io.interface, cfg.io.layout, cfg.dataset.data_folder) \
        == ("mpiio", "shared", "/scratch/d")
    data = json.loads(_invoke("fit", "--json", log(MPI_IO_TEST), "-o", out).output)
    assert data["ranks"] == 4 and data["workload"] == yaml.safe_load(out.read_text())


def test_fit_of_a_log_without_reads_is_one_line_and_exit_1(log, tmp_path):
    result = _invoke("fit", log("empty_log__empty_log"), "-o", tmp_path / "w.yaml")
    assert result.exit_code == 1
    assert result.output.startswith("analyze: ") and "no data file was read" in result.output
    assert len(result.output.splitlines()) == 1


def test_report(tmp_path):
    out = tmp_path / "r"
    result = _invoke("report", _run(tmp_path), "-o", out, "--json")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["html"] == str(out / "report.html") and set(data["figures"]) == {
        "transfer_sizes", "timeline", "rank_balance", "bandwidth"}
    assert all(os.path.isfile(p) for p in data["figures"].values())


def test_a_folder_of_two_jobs_is_one_line_unless_merged(log, tmp_path):
    """characterize, fit, compare and report refuse it alike; --merge-jobs reads one job."""
    import shutil
    for prefix in ("release_logs__mpi-io-test-ppc64-3.0.0",
                   "release_logs__mpi-io-test-ppc64-3.0.1"):
        shutil.copy(log(prefix), tmp_path / f"{prefix}.darshan")
    folder = tmp_path
    for args in (["characterize", folder], ["fit", folder, "-o", tmp_path / "w.yaml"],
                 ["compare", folder, log(MPI_IO_TEST)], ["report", folder, "-o", tmp_path / "r"]):
        result = _invoke(*args)
        assert result.exit_code == 1, (args, result.output)
        assert result.output.startswith(f"analyze: {folder} holds the logs of 2 jobs, not "
                                        "one: job 770702 (mpi-io-test"), result.output
        assert len(result.output.splitlines()) == 1, result.output
    merged = _invoke("characterize", "--json", "--merge-jobs", folder)
    assert merged.exit_code == 0, merged.output
    assert json.loads(merged.stdout)["nprocs"] == 8


def test_unreadable_log_is_one_line_and_exit_1(tmp_path):
    bad = tmp_path / "bad.darshan"
    bad.write_bytes(b"not a log at all" * 10)
    result = _invoke("characterize", bad)
    assert result.exit_code == 1
    assert result.output.startswith(f"analyze: {bad}: not a readable Darshan log")


def test_warnings_go_to_stderr_as_lines(log):
    result = CliRunner().invoke(analyze, ["characterize", log("partial_data_stdio__")])
    assert result.exit_code == 0
    assert "analyze: warning: " in result.stderr and "module STDIO is marked partial" \
        in result.stderr
    assert "analyze: warning" not in result.stdout


def test_python_dash_m(log):
    for module in ("dlio_mpi_analysis.cli", "dlio_mpi_analysis"):
        done = subprocess.run([sys.executable, "-m", module, "characterize", "--no-dxt",
                               log(MPI_IO_TEST)], cwd=REPO, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("Darshan I/O characterization\n")
    done = subprocess.run([sys.executable, "-m", "dlio_mpi_analysis.cli", "--help"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert all(cmd in done.stdout for cmd in ("characterize", "compare", "fit", "report",
                                              "paper"))


def test_bytes_per_rank_name_the_bytes_of_shared_files():
    """A shared file's records are reduced over the ranks: its bytes belong to no one rank, and
    the module table gives them apart instead of a bare 0 B per rank (mpiio_shuffled_writes:
    12 MiB written and read through one shared file, truth.json)."""
    path = os.path.join(REPO, "tests", "fixtures", "darshan", "mpiio_shuffled_writes.darshan")
    row = next(line for line in _invoke("characterize", path).output.splitlines()
               if line.startswith("bytes/rank"))
    assert "0 B / 0 B / 0 B + 12 MiB shared" in row

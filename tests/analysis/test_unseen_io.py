"""I/O that no Darshan record shows, and fio's forked jobs, on real logs (truth.json):
fio's libaio engine (io_submit) and a numpy.memmap loader leave data files opened and never
read in their logs, numpy.load with mmap_mode a header's read and nothing more; fio's psync engine with 2 jobs is 1 process with 2 forked readers."""
import subprocess
import sys

import pytest

from dlio_mpi_analysis.characterization.characterize import characterize
from dlio_mpi_analysis.characterization.text import render_text
from dlio_mpi_analysis.errors import FitError
from dlio_mpi_analysis.fitting.fit import fit
from dlio_mpi_analysis.replays.replay import replay

from fitted_runs import TRUTH, log, run_changed

pytestmark = pytest.mark.mpi      # the replays launch ranks under mpiexec


@pytest.mark.parametrize("name,file", [("fio_libaio", "prep.0.0"),
                                       ("memmap_reads", "prep.1.0")])
def test_files_opened_and_never_read_are_named_with_why(name, file, tmp_path):
    """The fit refuses in one line that names the file and the calls Darshan does not
    record; characterize says the same instead of a bare "No I/O recorded"."""
    with pytest.raises(FitError) as refused:
        fit(log(name))
    message = str(refused.value)
    assert file in message and "Darshan does not record" in message
    assert "numpy.memmap" in message and "io_uring" in message
    text = render_text(characterize(log(name), dxt=True))
    assert f"No I/O recorded: 1 data file opened with no read or write" in text
    cli = subprocess.run([sys.executable, "-m", "dlio_mpi", "analyze", "fit", log(name),
                          "-o", str(tmp_path / "w.yaml")], capture_output=True, text=True)
    assert cli.returncode != 0 and len(cli.stderr.strip().splitlines()) == 1, cli.stderr
    assert file in cli.stderr and "Traceback" not in cli.stderr
    assert not (tmp_path / "w.yaml").exists()


def test_a_file_mapped_after_its_header_was_read(tmp_path):
    """numpy.load(mmap_mode="r"): the header's buffer fill at offset 0 (read whole, nothing
    past it), then the rows copied out of the mapping unseen: the fit refuses in one line
    naming the file (fitted before as one 4 KiB sample a file, 0.48)."""
    with pytest.raises(FitError) as refused:
        fit(log("memmap_after_header"))
    message = str(refused.value)
    assert "big.npy" in message and "before the file was mapped" in message
    assert "numpy.memmap" in message and "\n" not in message


def test_fio_jobs_are_one_process_with_forked_readers(tmp_path):
    """fio's 2 jobs are forked processes of fio's main one, each reading its own file at
    random 16 KiB offsets: 1 rank, 2 read threads, 2 files of 1024 samples of 16 KiB read in
    a shuffled order; the replay scores >= 0.95 and reading in order is held under 0.6."""
    truth = TRUTH["fio_randread"]
    fitted = fit(log("fio_randread"), data_folder=str(tmp_path / "d"),
                 output_folder=str(tmp_path / "o"))
    w = fitted.workload
    assert fitted.ranks == truth["ranks"]
    assert w["reader"]["read_threads"] == truth["read_threads"]
    assert w["dataset"]["num_files_train"] == truth["num_files"]
    assert w["dataset"]["num_samples_per_file"] * w["dataset"]["record_length"] \
        * truth["num_files"] == truth["files_bytes_total"]
    assert w["reader"]["transfer_size"] == truth["transfer_bytes"]
    assert w["reader"]["sample_shuffle"] != "off"
    assert (w["io"]["interface"], w["io"]["layout"]) == ("posix", "multi")
    r = replay(log("fio_randread"), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.emulated["read_ops"] == r.real["read_ops"] == truth["posix"]["POSIX_READS"]
    (tmp_path / "in_order").mkdir()

    def in_order(w):
        w["reader"]["sample_shuffle"] = "off"
    wrong = run_changed("fio_randread", tmp_path / "in_order", in_order)
    assert wrong.score < 0.6, wrong.table


@pytest.mark.parametrize("name,file", [("fio_libaio", "prep.0.0"), ("memmap_reads", "prep.1.0"),
                                       ("ior_mmap.darshan", "test")])
def test_diagnose_names_the_files_darshan_saw_opened_and_nothing_more(name, file):
    from dlio_mpi_analysis.diagnosis.diagnosis_report import diagnose_path
    path = log(name) if not name.endswith(".darshan") else log(name[:-len(".darshan")])
    found = {f["id"]: f for f in diagnose_path(path)["findings"]}
    assert "io_not_recorded" in found
    assert [f.rsplit("/", 1)[-1] for f in found["io_not_recorded"]["files"]] == [file]
    assert found["io_not_recorded"]["advise"] == ""

"""O_DIRECT is not in a Darshan log: IOR POSIX written then read back with --posix.odirect and
without gives the same counters (every access aligned); the fit chooses posix_direct only on
strong evidence (the rank's own writes read back slower than the page cache) and says why."""
import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.replays.replay import replay

from fitted_runs import TRUTH, log
import pytest

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec


def _alignment_note(f):
    notes = [n for n in f.notes if "does not record O_DIRECT" in n]
    assert len(notes) == 1, f.notes
    return notes[0]


def test_direct_reads_are_fitted_as_posix_direct_with_the_reason():
    assert TRUTH["ior_posix_odirect"]["o_direct"] is True
    f = analysis.fit(log("ior_posix_odirect"))
    assert f.workload["io"]["interface"] == "posix_direct"
    assert "slower than a copy from the page cache" in _alignment_note(f)
    assert f.evidence["readback_rate"] < 2 << 30


def test_buffered_reads_of_the_same_shape_stay_posix():
    assert TRUTH["ior_posix_buffered"]["o_direct"] is False
    f = analysis.fit(log("ior_posix_buffered"))
    assert f.workload["io"]["interface"] == "posix"
    assert "from the page cache: io.interface posix" in _alignment_note(f)


def test_aligned_reads_alone_are_no_evidence():
    """Aligned reads of data the job did not write: O_DIRECT possible, not chosen."""
    f = analysis.fit(log("checkpoint_train"))
    assert f.workload["io"]["interface"] == "posix"
    assert "nothing shows the page cache bypassed" in _alignment_note(f)


def test_replay_of_the_direct_job(tmp_path):
    r = replay(log("ior_posix_odirect"), tmp_path / "replay")
    assert r.fit.workload["io"]["interface"] == "posix_direct"
    assert r.score >= 0.95, r.comparison.table
    assert r.emulated["bytes_read"] == r.real["bytes_read"]
    assert r.emulated["bytes_written"] == r.real["bytes_written"]


def test_npy_files_read_whole_through_o_direct(tmp_path):
    """The DLIO benchmark's O_DIRECT NPY reader on 2 ranks: each file (a 128-byte header and
    1 MiB of array) read whole in one call from offset 0. The sample is the array inside
    and the emulator reads its files whole too (reader.whole_file): 1.00 (0.090 before: the
    replay read the array past its header, read_order 0.5 for 1, the structure gate 0.1)."""
    name = "dlio_npy_odirect_whole_files_2r"
    f = analysis.fit(log(name))
    w = f.workload
    t = TRUTH[name]
    assert (w["dataset"]["format"], w["dataset"]["record_length"]) == ("npy", t["sample_bytes"])
    assert w["reader"]["whole_file"] is True
    assert f.evidence["whole_file_reads"]["file_bytes"] == t["sample_bytes"] + 128
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.emulated["bytes_read"] == r.real["bytes_read"]
    assert r.comparison.row("read_order")[1] == r.comparison.row("read_order")[0]


def test_a_file_of_two_samples_read_whole_for_each(tmp_path):
    """The DLIO benchmark's O_DIRECT NPY reader on 4 ranks, files of 2 samples: each sample's
    load reads the file whole, twice in a row. 2 samples a file of half the array, batch 2, 2
    epochs (fitted before as 1 sample a file of the whole array, 4 epochs)."""
    name = "dlio_npy_odirect_two_samples_4r"
    f = analysis.fit(log(name))
    w = f.workload
    t = TRUTH[name]
    assert (w["dataset"]["num_samples_per_file"], w["dataset"]["record_length"]) \
        == (t["samples_per_file"], t["sample_bytes"])
    assert (w["reader"]["batch_size"], w["train"]["epochs"]) == (t["batch_size"], t["epochs"])
    assert w["reader"]["whole_file"] is True
    assert f.evidence["whole_file_reads"]["loads_in_a_row"] == 2
    r = replay(log(name), tmp_path / "replay")
    assert r.score >= 0.95, r.comparison.table
    assert r.emulated["bytes_read"] == r.real["bytes_read"]

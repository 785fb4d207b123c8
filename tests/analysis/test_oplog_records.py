"""The op-log characterization on run directories written by hand: every counter the Darshan
runtime would have counted, exactly, from chosen calls."""

import numpy as np
import pytest

import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.loading.oplog import file_name, is_run_dir, load_run, record_id
from dlio_mpi_analysis.loading.oplog_records import size_buckets
from oplog_fixtures import ORIGIN, call, write_run

FILE0 = "/data/train/img_0000000_of_2.bin"
FILE1 = "/data/train/img_0000001_of_2.bin"


def _record(job, module, rank, name):
    frame = job.records[module].frame()
    rows = frame[(frame["rank"] == rank) & (frame["id"] == np.uint64(record_id(name)))]
    assert len(rows) == 1, (module, rank, name)
    return rows.iloc[0]


@pytest.fixture
def posix_run(tmp_path):
    rank0 = [call("open", 0, 1000), call("read", 1000, 500, offset=0, nbytes=100),
             call("read", 2000, 500, offset=100, nbytes=100),  # consecutive
             call("read", 3000, 500, offset=50, nbytes=10),  # backwards
             call("read", 4000, 1000, offset=300, nbytes=1000),  # forward, not consecutive
             call("close", 6000, 100)]
    rank1 = [call("open", 0, 2000, file=1),
             call("read", 3000, 10_000, file=1, offset=4096, nbytes=2_000_000),
             call("read", 20_000, 50, file=1, offset=2_004_096, nbytes=0),  # end of file
             call("stat", 30_000, 10, file=0),
             call("close", 40_000, 100, file=1)]
    # rank 1's log starts one second after rank 0's
    return write_run(tmp_path / "run", {0: [rank0], 1: [rank1]},
                     origins={0: ORIGIN, 1: ORIGIN + 10**9}, phase_s=0.5)


def test_posix_counters_as_darshan_counts_them(posix_run):
    job = load_run(posix_run)
    assert job.source == "oplog" and job.nprocs == 2
    assert set(job.records) == {"POSIX"} and set(job.dxt_segments) == {"DXT_POSIX"}
    r = _record(job, "POSIX", 0, FILE0)
    assert (r.POSIX_OPENS, r.POSIX_READS, r.POSIX_BYTES_READ) == (1, 4, 1210)
    assert (r.POSIX_SEQ_READS, r.POSIX_CONSEC_READS) == (2, 1)
    assert r.POSIX_MAX_BYTE_READ == 1299
    assert (r.POSIX_SIZE_READ_0_100, r.POSIX_SIZE_READ_100_1K) == (3, 1)
    assert [(r[f"POSIX_ACCESS{k}_ACCESS"], r[f"POSIX_ACCESS{k}_COUNT"]) for k in (1, 2, 3, 4)] \
        == [(100, 2), (1000, 1), (10, 1), (0, 0)]
    assert r.POSIX_F_READ_TIME == pytest.approx(2.5e-6, abs=1e-15)
    assert r.POSIX_F_META_TIME == pytest.approx(1.1e-6, abs=1e-15)
    assert r.POSIX_F_READ_START_TIMESTAMP == pytest.approx(1e-6)
    assert r.POSIX_F_READ_END_TIMESTAMP == pytest.approx(5e-6)
    assert r.POSIX_F_MAX_READ_TIME == pytest.approx(1e-6) and r.POSIX_MAX_READ_TIME_SIZE == 1000
    r = _record(job, "POSIX", 1, FILE1)
    # first read at 4096 > 0 is sequential; the zero-byte read at the end is consecutive
    assert (r.POSIX_READS, r.POSIX_SEQ_READS, r.POSIX_CONSEC_READS) == (2, 2, 1)
    assert (r.POSIX_SIZE_READ_0_100, r.POSIX_SIZE_READ_1M_4M) == (1, 1)
    assert r.POSIX_MAX_BYTE_READ == 2_004_095
    assert r.POSIX_F_OPEN_START_TIMESTAMP == pytest.approx(1.0)  # on rank 0's clock
    assert _record(job, "POSIX", 1, FILE0).POSIX_STATS == 1
    assert job.names[record_id(FILE0)] == FILE0
    assert job.run_time == pytest.approx(1.0 + 40_100e-9)


def test_characterization_of_a_handmade_run(posix_run):
    c = analysis.characterize(posix_run)
    assert c.source == "oplog" and c.interfaces == ["POSIX"]
    assert c.totals.bytes_read == 2_001_210
    assert c.totals.files.__dict__ == {"total": 2, "shared": 1, "unique": 1, "read": 2,
                                       "written": 0}
    assert c.modules["POSIX"].sequential_read_pct == pytest.approx(100 * 4 / 6)
    assert c.data_formats == {"raw": {"files": 2, "bytes_read": 2_001_210, "bytes_written": 0,
                                      "shared_files": 1}}
    trace = c.dxt["DXT_POSIX"]
    assert trace.operations == 6 and trace.read_sizes.zero_length == 1
    assert [s.rank for s in trace.timeline] == [0, 1]
    assert trace.timeline[1].first_start == pytest.approx(1.000003)
    assert analysis.render_text(c).startswith("dlio_mpi op-log I/O characterization\n")


def test_overlapping_reads_are_timed_without_overlap(tmp_path):
    """Darshan's no-overlap timer, calls in completion order: B ends inside A's span."""
    calls = [call("read", 1500, 300, offset=0, nbytes=10),  # B: 1.5-1.8 us
             call("read", 1000, 1000, offset=10, nbytes=10)]  # A: 1.0-2.0 us, ended later
    job = load_run(write_run(tmp_path / "run", {0: [calls]}))
    assert _record(job, "POSIX", 0, FILE0).POSIX_F_READ_TIME == pytest.approx(0.5e-6)


def test_collective_mpiio_claims_no_posix_calls_beneath(tmp_path):
    """The op log sees a collective call, not the aggregators' POSIX reads beneath it: the file
    has MPI-IO records only, and the job says it was observed from MPI-IO down."""
    calls = [call("open", 0, 100, iface="mpiio_ind"),  # the engine logs every open this way
             call("view", 150, 50, iface="mpiio_coll"),
             call("read", 200, 100, offset=0, nbytes=1000, iface="mpiio_coll"),
             call("view", 300, 20, iface="mpiio_coll"),
             call("read", 400, 100, offset=-1, nbytes=0, iface="mpiio_coll"),  # joins, empty
             call("fsync", 600, 10, iface="mpiio_coll"),
             call("close", 700, 10, iface="mpiio_ind")]
    run = write_run(tmp_path / "run", {0: [calls], 1: [calls]}, files=1, layout="shared")
    c = analysis.characterize(run)
    assert c.interfaces == ["MPI-IO collective"]
    job = load_run(run)
    name = "/data/train/img_0000000_of_1.bin"
    m = _record(job, "MPI-IO", 1, name)
    assert (m.MPIIO_COLL_OPENS, m.MPIIO_INDEP_OPENS, m.MPIIO_COLL_READS,
            m.MPIIO_INDEP_READS, m.MPIIO_BYTES_READ, m.MPIIO_SYNCS) == (1, 0, 2, 0, 1000, 1)
    assert m.MPIIO_SIZE_READ_AGG_0_100 == 1 and m.MPIIO_SIZE_READ_AGG_100_1K == 1
    # the views set around a collective call are counted, and untimed as Darshan has them
    # without hints
    assert m.MPIIO_VIEWS == 2 and m.MPIIO_F_META_TIME == pytest.approx(110e-9)
    assert m.MPIIO_F_READ_TIME == pytest.approx(200e-9)
    assert "POSIX" not in job.records and set(job.dxt_segments) == {"DXT_MPIIO"}
    assert job.layers == {record_id(name): "MPI-IO"}
    assert len(job.dxt_segments["DXT_MPIIO"]) == 4
    assert c.modules["MPI-IO"].ops["collective_reads"] == 4
    # the totals count the file at MPI-IO, the layer observed
    assert c.totals.basis == ["MPI-IO"] and c.totals.bytes_read == 2000
    assert c.data_formats == {"raw": {"files": 1, "bytes_read": 2000, "bytes_written": 0,
                                      "shared_files": 1}}


def test_hdf5_through_mpiio_claims_neither_mpiio_nor_posix(tmp_path):
    """Through libhdf5's MPI-IO driver the op log sees the H5Dread calls, not libhdf5's metadata
    reads nor how it splits a selection into MPI-IO calls: H5F and H5D records only, counted at
    HDF5; the file's open (H5Fopen and H5Dopen in one entry) is H5F time. Its one trace is
    of the H5Dread calls (DXT_H5D, no Darshan trace), for their order."""
    calls = [call("open", 0, 1000, iface="hdf5_coll"),
             call("read", 2000, 100, offset=0, nbytes=4096, iface="hdf5_coll"),
             call("read", 3000, 100, offset=4096, nbytes=4096, iface="hdf5_coll"),
             call("close", 4000, 10, iface="hdf5_coll")]
    run = write_run(tmp_path / "run", {0: [calls], 1: [calls]}, files=1, layout="shared",
                    fmt="hdf5")
    job = load_run(run)
    name = "/data/train/img_0000000_of_1.h5"
    assert set(job.records) == {"H5F", "H5D"} and set(job.dxt_segments) == {"DXT_H5D"}
    assert job.dxt_segments["DXT_H5D"]["offset"].tolist() == [0, 4096, 0, 4096]
    assert job.layers == {record_id(name): "HDF5"}
    f = _record(job, "H5F", 0, name)
    assert (f.H5F_OPENS, f.H5F_USE_MPIIO) == (1, 1)
    assert f.H5F_F_META_TIME == pytest.approx(1010e-9)
    d = _record(job, "H5D", 0, name + ":/records")
    assert (d.H5D_READS, d.H5D_BYTES_READ, d.H5D_USE_MPIIO_COLLECTIVE) == (2, 8192, 1)
    assert d.H5D_F_META_TIME == 0 and d.H5D_F_READ_TIME == pytest.approx(200e-9)
    c = analysis.characterize(run)
    assert c.interfaces == ["MPI-IO collective", "HDF5"]
    assert c.totals.basis == ["H5D"] and c.totals.bytes_read == 4 * 4096
    assert c.data_formats == {"hdf5": {"files": 1, "bytes_read": 4 * 4096, "bytes_written": 0,
                                       "shared_files": 1}}
    assert c.totals.io_time.slowest_rank == pytest.approx(1010e-9 + 200e-9)


def test_jobs_are_compared_at_the_layer_both_observed(tmp_path):
    """The same H5Dread calls through sec2 (POSIX observed through the logging driver) and
    through the MPI-IO driver (observed from HDF5 down): compared at HDF5, the counts agree and
    the driver tells them apart (structure gate 0.5); the same MPI-IO run against itself
    scores 1."""
    def calls(iface):
        meta = [call("read", 10, 5, offset=0, nbytes=96)] if iface == "hdf5_sec2" else []
        return [call("open", 0, 100, iface=iface), *meta] + [
            call("read", 1000 * (i + 1), 100, offset=4096 * i, nbytes=4096, iface=iface)
            for i in range(4)] + (
            [call("read", 1000 * (i + 1) + 10, 50, offset=4096 * i + 2048, nbytes=4096)
             for i in range(4)] if iface == "hdf5_sec2" else [])
    sec2 = write_run(tmp_path / "sec2", {0: [calls("hdf5_sec2")]}, fmt="hdf5")
    mpio = write_run(tmp_path / "mpio", {0: [calls("hdf5_ind")]}, fmt="hdf5")
    result = analysis.compare([sec2, mpio], labels=["sec2", "mpio"])
    assert result.layer == "HDF5"
    assert result.row("read_ops") == (4, 4) and result.row("bytes_read") == (16384, 16384)
    assert result.row("interfaces") == (["HDF5"], ["HDF5", "HDF5 through MPI-IO"])
    assert result.row("structure_gate") == (1.0, 0.5) and result.score <= 0.5
    assert "counted at: HDF5" in analysis.render_comparison(result)
    assert analysis.compare([mpio, mpio]).score == 1.0
    # at POSIX (both observed it) the sec2 run's own reads count: libhdf5's metadata read too
    assert analysis.compare([sec2, sec2]).row("read_ops") == (5, 5)


def test_independent_mpiio_opens_on_per_rank_files(tmp_path):
    calls = [call("open", 0, 100, iface="mpiio_ind"),
             call("read", 200, 100, offset=0, nbytes=64, iface="mpiio_ind")]
    job = load_run(write_run(tmp_path / "run", {0: [calls]}, layout="multi"))
    m = _record(job, "MPI-IO", 0, FILE0)
    assert (m.MPIIO_INDEP_OPENS, m.MPIIO_COLL_OPENS, m.MPIIO_INDEP_READS) == (1, 0, 1)
    assert analysis.characterize(job).interfaces == ["POSIX", "MPI-IO independent"]


def test_hdf5_through_sec2(tmp_path):
    """H5D/H5F from the HDF5 calls; POSIX from the calls libhdf5 made through the logging
    driver (metadata and chunk reads), not derived from the HDF5 calls."""
    calls = [call("open", 0, 100, iface="hdf5_sec2"), call("open", 10, 10),
             call("read", 30, 10, offset=0, nbytes=96),           # superblock
             call("read", 50, 10, offset=96, nbytes=544),         # object header
             call("read", 200, 100, offset=8192, nbytes=4096, iface="hdf5_sec2"),
             call("read", 210, 10, offset=8192, nbytes=2048),     # two chunks
             call("read", 230, 10, offset=10240, nbytes=2048),
             call("read", 400, 100, offset=0, nbytes=4096, iface="hdf5_sec2"),
             call("read", 410, 10, offset=4096, nbytes=4096),
             call("fsync", 600, 10, iface="hdf5_sec2"),
             call("close", 700, 10, iface="hdf5_sec2"), call("close", 705, 3)]
    run = write_run(tmp_path / "run", {0: [calls]}, fmt="hdf5", bytes_moved=96 + 544 + 8192)
    job = load_run(run)
    name = "/data/train/img_0000000_of_2.h5"
    assert set(job.records) == {"POSIX", "H5F", "H5D"}
    f = _record(job, "H5F", 0, name)
    assert (f.H5F_OPENS, f.H5F_FLUSHES, f.H5F_USE_MPIIO) == (1, 1, 0)
    d = _record(job, "H5D", 0, name + ":/records")
    assert (d.H5D_OPENS, d.H5D_READS, d.H5D_BYTES_READ, d.H5D_SIZE_READ_AGG_1K_10K) \
        == (1, 2, 8192, 2)
    p = _record(job, "POSIX", 0, name)
    assert (p.POSIX_OPENS, p.POSIX_READS, p.POSIX_BYTES_READ, p.POSIX_SEQ_READS,
            p.POSIX_CONSEC_READS, p.POSIX_FSYNCS) == (1, 5, 96 + 544 + 8192, 3, 2, 0)
    assert (p.POSIX_SIZE_READ_0_100, p.POSIX_SIZE_READ_100_1K, p.POSIX_SIZE_READ_1K_10K) \
        == (1, 1, 3)
    c = analysis.characterize(run)
    assert c.interfaces == ["POSIX", "HDF5"]
    assert c.data_formats["hdf5"]["bytes_read"] == 96 + 544 + 8192


def test_stdio_and_mmap(tmp_path):
    calls = [call("open", 0, 100, iface="stdio"), call("seek", 150, 10, offset=512, iface="stdio"),
             call("read", 200, 100, offset=512, nbytes=4096, iface="stdio"),
             call("read", 300, 100, offset=4608, nbytes=4096, iface="stdio"),
             call("open", 500, 10, file=1, iface="mmap"),
             call("mmap", 510, 10, file=1, offset=0, iface="mmap"),
             call("read", 600, 10, file=1, offset=0, nbytes=300, iface="mmap")]
    job = load_run(write_run(tmp_path / "run", {0: [calls]}))
    s = _record(job, "STDIO", 0, FILE0)
    assert (s.STDIO_OPENS, s.STDIO_SEEKS, s.STDIO_READS, s.STDIO_BYTES_READ,
            s.STDIO_MAX_BYTE_READ) == (1, 1, 2, 8192, 8703)
    # as Darshan records an mmap run: the open, no mmap counter, no reads or bytes
    p = _record(job, "POSIX", 0, FILE1)
    assert (p.POSIX_OPENS, p.POSIX_MMAPS, p.POSIX_READS, p.POSIX_BYTES_READ) == (1, -1, 0, 0)
    assert set(job.dxt_segments) == {"DXT_STDIO"}
    note = ("300 bytes in 1 reads through mmap (copies out of the mapping) are left out of the "
            "POSIX counters, as Darshan leaves them out")
    assert [w for w in job.warnings if w.startswith(note)]
    c = analysis.characterize(job)
    assert c.interfaces == ["POSIX", "STDIO"]
    assert c.totals.bytes_read == 8192
    assert [w for w in c.warnings if w.startswith(note)]
    assert c.dxt["DXT_STDIO"].read_sizes.median == 4096


def test_compare_says_what_an_mmap_run_leaves_out(tmp_path):
    """An mmap run against the same reads through read(): the mmap side has no read bytes, as
    under Darshan, and the comparison's notes say what it left out."""
    def calls(iface):
        return [call("open", 0, 10, iface=iface)] + (
            [call("mmap", 10, 10, offset=0, iface=iface)] if iface == "mmap" else []) + [
            call("read", 100 + 10 * i, 10, offset=4096 * i, nbytes=4096, iface=iface)
            for i in range(4)]
    posix = write_run(tmp_path / "posix", {0: [calls("posix")]})
    mmap = write_run(tmp_path / "mmap", {0: [calls("mmap")]})
    result = analysis.compare([posix, mmap], labels=["read", "mapped"])
    assert result.row("bytes_read") == (16384, 0)
    assert result.notes == ["mapped: 16384 bytes in 4 reads through mmap (copies out of the "
                            "mapping) are left out of the POSIX counters, as Darshan leaves "
                            "them out: it cannot see memory accesses (and keeps no mmap "
                            "counter: POSIX_MMAPS -1)"]
    assert "note: mapped: 16384 bytes" in analysis.render_comparison(result)
    assert result.to_dict()["notes"] == result.notes


def test_overflowed_log_is_partial(tmp_path):
    calls = [call("read", 0, 10, offset=0, nbytes=100)]
    run = write_run(tmp_path / "run", {0: [calls]}, bytes_moved=1000)
    with pytest.warns(analysis.PartialLogWarning, match="hold 100 of the 1000 bytes"):
        c = analysis.characterize(run)
    assert c.partial_modules == ["POSIX", "DXT_POSIX"]


def test_a_missing_rank_log_is_named(tmp_path):
    """Before: the missing rank's bytes were blamed on io.oplog_capacity."""
    calls = [call("read", 0, 10, offset=0, nbytes=100)]
    run = write_run(tmp_path / "run", {0: [calls], 1: [calls], 2: [calls]})
    (run / "oplog_rank00001.npz").unlink()
    with pytest.warns(analysis.PartialLogWarning) as caught:
        c = analysis.characterize(run)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1, messages
    assert "the run had 3 ranks but 1 op log is missing (oplog_rank00001.npz)" in messages[0]
    assert "oplog_capacity" not in messages[0]
    assert c.partial_modules == ["POSIX", "DXT_POSIX"]


def test_ranks_on_several_hosts_keep_their_own_origin(tmp_path):
    calls = [call("read", 1000, 10, offset=0, nbytes=100)]
    run = write_run(tmp_path / "run", {0: [calls], 1: [calls]}, hosts=2,
                    origins={0: ORIGIN, 1: ORIGIN + 10**9})
    segments = load_run(run).dxt_segments["DXT_POSIX"]
    assert segments["start"].tolist() == [1e-6, 1e-6]


def test_run_directory_detection(tmp_path, posix_run, log):
    assert is_run_dir(posix_run) and not is_run_dir(tmp_path) and not is_run_dir(log("empty"))
    (tmp_path / "summary.json").write_text("{}")
    assert not is_run_dir(tmp_path)
    (tmp_path / "oplog_rank00000.npz").write_bytes(b"not a zip")
    with pytest.raises(analysis.LogError, match="not a readable dlio_mpi op log"):
        analysis.characterize(tmp_path)


def test_file_names_follow_the_dataset():
    config = {"dataset": {"data_folder": "/d", "format": "tfrecord", "num_files_train": 3,
                          "num_files_eval": 2, "file_prefix": "x", "num_subfolders_train": 2}}
    assert [file_name(config, i) for i in range(6)] == [
        "/d/train/0/x_0000000_of_3.tfrecord", "/d/train/1/x_0000001_of_3.tfrecord",
        "/d/train/0/x_0000002_of_3.tfrecord", "/d/valid/x_0000000_of_2.tfrecord",
        "/d/valid/x_0000001_of_2.tfrecord", "<file 5>"]


def test_index_file_names_follow_their_data_file():
    """indexed_binary's companion ids are its .off.idx and .sz.idx beside the .bin."""
    from dlio_mpi.run.oplog_format import companion_id
    config = {"dataset": {"data_folder": "/d", "format": "indexed_binary",
                          "num_files_train": 2, "file_prefix": "x"}}
    assert [file_name(config, companion_id(k, 1)) for k in (1, 2, 3)] == [
        "/d/train/x_0000001_of_2.bin.off.idx", "/d/train/x_0000001_of_2.bin.sz.idx",
        f"<file {companion_id(3, 1)}>"]


def test_extensions_are_the_emulators():
    from dlio_mpi import formats
    from dlio_mpi_analysis.characterization.files import EMULATOR_EXTENSIONS, file_format

    assert EMULATOR_EXTENSIONS == {name: module.EXTENSION
                                   for name, module in formats.MODULES.items()}
    assert {file_format("a" + ext) for ext in EMULATOR_EXTENSIONS.values()} \
        == set(EMULATOR_EXTENSIONS) - {"indexed_binary", "mmap_indexed_binary"}
    assert file_format("a.bin") == "raw"
    # beneath a whole file's compression suffix, the name's own; no extension: raw
    assert file_format("/d/part-000.tfrecord.gz") == "tfrecord"
    assert file_format("/d/x.npz.zst") == "npz"
    assert file_format("/d/train-00000-of-01024") == file_format("/d/a.gz") == "raw"


def test_size_buckets_match_darshans_bounds():
    sizes = np.array([0, 100, 101, 1024, 1025, 10240, 10241, 102400, 102401, 2**20, 2**20 + 1,
                      4 * 2**20 + 1, 10 * 2**20 + 1, 100 * 2**20 + 1, 2**30, 2**30 + 1])
    assert size_buckets(sizes).tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 6, 7, 8, 8, 9]

"""dlio_mpi_analysis.diagnosis.diagnose on jobs of known shape: each rule fires at its threshold and not below, with
its evidence and valid changes; severity orders the findings. And advise's pure parts: merging
a change into a workload, the minimal workload, speedup and spread, the combination."""
from types import SimpleNamespace as NS

import pytest

from dlio_mpi_analysis.diagnosis import diagnose as dg
from dlio_mpi.config import loader as config
from dlio_mpi.advise.measure import Candidate, merged, minimal_doc, speedup
from dlio_mpi.advise.study import combination


def job(reads=10_000, opens=20, median=4096, seq=95.0, files=16, bytes_read=16 << 20,
        io_share=0.5, h5d_reads=None, balance=None):
    posix = NS(ops={"reads": reads, "opens": opens}, sequential_read_pct=seq,
               rank_balance=balance)
    modules = {"POSIX": posix}
    if h5d_reads is not None:
        modules["H5D"] = NS(ops={"reads": h5d_reads}, rank_balance=None)
    return NS(totals=NS(basis=["POSIX"], bytes_read=bytes_read, bytes_written=0,
                        files=NS(total=files),
                        io_time=NS(slowest_rank_share=io_share)),
              modules=modules, nprocs=2, data_formats={},
              dxt={"DXT_POSIX": NS(read_sizes=NS(median=median))})


BASE = {"dataset": {"format": "raw", "num_files_train": 16, "num_samples_per_file": 4,
                    "record_length": 1 << 20},
        "reader": {"transfer_size": 4096, "read_threads": 0},
        "train": {"computation_time": 0.01}}


def keys(findings):
    return [f.key for f in findings]


def valid(doc):
    config.load(["output.folder=/nonexistent"], doc=doc)


def test_small_reads_at_the_threshold():
    found = dg.diagnose(job(median=4096), BASE)
    assert keys(found) == ["small_reads"]
    f = found[0]
    assert f.value == 4096 and f.threshold == dg.SMALL_READ_BYTES
    assert "median read 4 KiB over 10,000 reads" in f.evidence
    # samples of 1 MiB: a whole sample per read (a 1 MiB transfer would be the same)
    assert f.changes == {"transfer size: a whole sample": {"reader": {"transfer_size": 0}}}
    big = merged(BASE, {"dataset": {"record_length": 8 << 20}})
    changes = dg.diagnose(job(median=4096), big)[0].changes
    assert changes == {"transfer size 1 MiB": {"reader": {"transfer_size": "1m"}},
                       "transfer size 4 MiB": {"reader": {"transfer_size": "4m"}},
                       "transfer size: a whole sample": {"reader": {"transfer_size": 0}}}
    for change in changes.values():
        valid(merged(big, change))
    assert dg.diagnose(job(median=dg.SMALL_READ_BYTES), BASE) == []
    assert dg.diagnose(job(median=4096, reads=dg.MIN_READS - 1), BASE) == []


def test_random_access_and_its_changes():
    doc = merged(BASE, {"reader": {"transfer_size": 0, "sample_shuffle": "random"}})
    found = dg.diagnose(job(median=1 << 20, seq=20.0), doc)
    assert keys(found) == ["random_access"]
    assert found[0].changes["shuffle files, not samples"] == {
        "reader": {"sample_shuffle": "off", "file_shuffle": "seed"}}
    assert dg.diagnose(job(median=1 << 20, seq=dg.RANDOM_SEQ_PCT), doc) == []


def test_an_open_per_h5dread_is_metadata_heavy():
    doc = {"dataset": {"format": "hdf5", "num_files_train": 16, "num_samples_per_file": 8,
                       "record_length": 262144}, "reader": {"reopen": True}}
    found = dg.diagnose(job(reads=1536, opens=256, median=1 << 20, h5d_reads=256), doc)
    assert "metadata_heavy" in keys(found)
    f = next(f for f in found if f.key == "metadata_heavy")
    assert f.value == 1.0 and "256 opens for 256 H5Dread calls" in f.evidence
    assert f.changes == {"open each file once (no open per sample)": {"reader": {
        "reopen": False}}}


def test_many_small_files_merge_into_fewer_holding_the_same_samples():
    doc = merged(BASE, {"dataset": {"num_files_train": 256, "num_samples_per_file": 1,
                                    "record_length": 65536}, "reader": {"transfer_size": 0}})
    found = dg.diagnose(job(files=256, opens=256, reads=256, median=65536,
                            bytes_read=256 * 65536), doc)
    f = next(f for f in found if f.key == "many_small_files")
    (change,) = f.changes.values()
    ds = change["dataset"]
    assert ds["num_files_train"] * ds["num_samples_per_file"] == 256
    assert ds["num_files_train"] >= 2 and ds["num_files_train"] < 256


def test_no_overlap_needs_compute_and_waiting():
    summary = {"epochs": [{"duration_s": 1.0, "io_wait_s_mean": 0.6, "compute_s_mean": 0.3,
                           "au": 0.3}]}
    doc = merged(BASE, {"reader": {"transfer_size": 0}})
    found = dg.diagnose(job(median=1 << 20), doc, summary)
    f = next(f for f in found if f.key == "no_overlap")
    assert f.severity == pytest.approx(0.3)        # the smaller of I/O wait and compute
    assert {"reader": {"read_threads": 1, "prefetch_size": 2}} in f.changes.values()
    no_compute = {"epochs": [dict(summary["epochs"][0], compute_s_mean=0.0)]}
    assert "no_overlap" not in keys(dg.diagnose(job(median=1 << 20), doc, no_compute))


def test_findings_are_ordered_by_severity():
    summary = {"epochs": [{"duration_s": 1.0, "io_wait_s_mean": 0.9, "compute_s_mean": 0.05}]}
    found = dg.diagnose(job(median=4096), BASE, summary)
    assert keys(found) == ["small_reads", "no_overlap"]
    assert found[0].severity > found[1].severity


def test_rank_imbalance_is_evidence_only():
    bal = NS(max_bytes=300, mean_bytes=200)
    found = dg.diagnose(job(median=1 << 20, balance=bal), merged(BASE, {"reader": {
        "transfer_size": 0}}))
    assert keys(found) == ["rank_imbalance"] and found[0].value == 1.5
    assert found[0].changes == {}


def test_merged_and_minimal_doc():
    doc = {"io": {"interface": "mpiio", "mpiio_hints": {"cb_nodes": 2}}}
    out = merged(doc, {"io": {"mpiio_hints": {"romio_cb_read": "enable"}}})
    assert out["io"]["mpiio_hints"] == {"cb_nodes": 2, "romio_cb_read": "enable"}
    assert doc["io"]["mpiio_hints"] == {"cb_nodes": 2}          # not changed in place
    cfg = config.load(["workload=default", "reader.batch_size=3"])
    mini = minimal_doc(cfg)
    assert mini["reader"]["batch_size"] == 3
    assert "pin_memory" not in mini.get("reader", {})
    again = config.load([], doc=mini)
    assert again.to_dict() == cfg.to_dict()


def test_speedup_pairs_rounds_and_gives_the_spread():
    assert speedup({0: 2.0, 1: 2.0, 2: 2.2}, {0: 1.0, 1: 0.8, 2: 1.1}) == (2.0, 0.5)
    assert speedup({0: 1.0}, {0: 0.5}) == (2.0, None)
    assert speedup({0: 1.0, 1: 1.0}, {1: 0.5, 2: 0.25}) == (2.0, None)   # round 1 only
    assert speedup({0: 1.0}, {0: None}) == (None, None)


def test_the_combination_takes_each_findings_best_winner():
    base = Candidate("baseline", "baseline", "baseline", "", {}, BASE,
                     times={0: 1.0, 1: 1.0, 2: 1.0})

    def cand(label, finding, change, t):
        return Candidate(label, label, finding, "", change, merged(BASE, change),
                         times={0: t, 1: t, 2: t})

    cands = [cand("a", "small_reads", {"reader": {"transfer_size": 0}}, 0.2),
             cand("b", "small_reads", {"reader": {"transfer_size": "1m"}}, 0.3),
             cand("c", "no_overlap", {"reader": {"read_threads": 2}}, 0.5),
             cand("d", "random_access", {"io": {"fadvise": "random"}}, 1.1)]
    combo = combination(BASE, cands, base)
    assert combo.change == {"reader": {"transfer_size": 0, "read_threads": 2}}
    assert combo.label == "a + c"
    assert combination(BASE, cands[:2], base) is None       # one finding only


def test_a_real_logs_misaligned_accesses():
    """The DLIO benchmark's JPEG log (PIL through Python's buffered file): Darshan counted
    25 % of the reads off the 4 KiB alignment and 21 % of the buffers off 8 bytes."""
    import os
    from dlio_mpi_analysis.characterization.characterize import characterize
    log = os.path.join(os.path.dirname(__file__), "..", "fixtures", "darshan",
                       "dlio_jpeg.darshan")
    found = dg.diagnose(characterize(log), {"dataset": {"format": "raw"}})
    f = next(f for f in found if f.key == "misaligned")
    assert f.value == 25.0 and "4 KiB file alignment" in f.evidence
    assert "21 % of their buffers off the 8 B memory alignment" in f.evidence
    ior = os.path.join(os.path.dirname(__file__), "..", "fixtures", "darshan", "ior_fpp.darshan")
    assert "misaligned" not in keys(dg.diagnose(characterize(ior), {}))


def test_hdf5_chunks_smaller_than_a_sample_are_small_reads():
    """Through HDF5's MPI-IO driver the op log sees H5Dread calls, not libhdf5's chunk reads:
    chunks of 4 KiB for samples of 64 KiB are found from the workload."""
    doc = {"dataset": {"format": "hdf5", "enable_chunking": True, "chunk_size": 4096,
                       "record_length": 65536, "num_files_train": 1,
                       "num_samples_per_file": 256}, "io": {"layout": "shared"}}
    found = dg.diagnose(job(median=65536 * 8), doc)
    f = found[0]
    assert f.key == "small_reads" and f.value == 4096
    assert "16 chunks at a time" in f.evidence
    assert f.changes["HDF5 chunk of a whole sample (64 KiB)"] == {
        "dataset": {"chunk_size": "64k"}}


def test_read_threads_are_not_proposed_where_they_do_nothing():
    summary = {"epochs": [{"duration_s": 1.0, "io_wait_s_mean": 0.6, "compute_s_mean": 0.3}],
               "read_threads": 0}
    doc = merged(BASE, {"reader": {"transfer_size": 0}, "io": {"interface": "mpiio"}})
    assert "no_overlap" in keys(dg.diagnose(job(median=1 << 20), doc, summary))
    assert "no_overlap" not in keys(dg.diagnose(job(median=1 << 20), doc, summary,
                                                read_ahead=("posix", "posix_direct")))


def test_a_dataset_beyond_the_page_cache_is_read_with_o_direct():
    summary = {"facts": {"dataset_bytes": 64 << 30, "host_memory_bytes": 16 << 30},
               "epochs": [{"duration_s": 1.0, "io_wait_s_mean": 0.8, "compute_s_mean": 0.0}]}
    doc = merged(BASE, {"reader": {"transfer_size": "1m"}})
    found = dg.diagnose(job(median=1 << 20), doc, summary)
    f = next(f for f in found if f.key == "beyond_page_cache")
    assert f.value == 4.0
    assert f.changes == {"O_DIRECT reads": {"io": {"interface": "posix_direct"}}}
    valid(merged(doc, f.changes["O_DIRECT reads"]))
    small = dict(summary, facts={"dataset_bytes": 1 << 30, "host_memory_bytes": 16 << 30})
    assert "beyond_page_cache" not in keys(dg.diagnose(job(median=1 << 20), doc, small))

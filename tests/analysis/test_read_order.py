"""The order of collective reads (dlio_mpi_analysis.characterization.read_order), on real IOR logs made with -c under
Darshan 3.5.0 with DXT (tests/fixtures/darshan, truth.json) and on the op logs of the
emulator's replays of them, in order and shuffled (tests/fixtures/runs, truth.json): the fit
finds IOR's in-order reads behind the aggregators' POSIX reads, and compare parts a shuffled
replay from an in-order job at MPI-IO and at HDF5."""

import os
import warnings

import numpy as np
import pytest

import dlio_mpi_analysis as analysis
from dlio_mpi_analysis.loading.loader import load
from dlio_mpi_analysis.characterization.read_order import continuity, read_order

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "fixtures")
DARSHAN = os.path.join(FIXTURES, "darshan")
RUNS = os.path.join(FIXTURES, "runs")


def darshan(name):
    return os.path.join(DARSHAN, name + ".darshan")


@pytest.fixture(autouse=True)
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def test_lanes_in_order_and_shuffled():
    # two ranks each reading its block in order, the second segment a jump forward
    calls = [([0, 100], [10, 10]), ([10, 110], [10, 10]), ([200, 300], [10, 10])]
    assert continuity(calls) == (4, 4)
    # the same pieces taken out of order: the second call moves both lanes back
    assert continuity([calls[2], calls[0], calls[1]]) == (2, 4)
    # pieces that touch are one piece: a call reading ranks' adjacent pieces
    assert continuity([([0, 10], [10, 10]), ([20, 30], [10, 10])]) == (1, 1)


def test_collective_order_seen_through_the_aggregator():
    """ompio's one aggregator reads a piece of every rank's block per call: its POSIX trace
    jumps back and forth, the calls taken one by one move every rank forward."""
    job = load(darshan("ior_mpiio_coll_4ranks"), dxt=True).frames()
    posix = job.dxt_segments["DXT_POSIX"]
    reads = posix[(posix["op"] == "read") & (posix["length"] == 65536)]
    assert (np.diff(reads[reads["rank"] == 0]["offset"].to_numpy()) < 0).mean() > 0.2
    assert read_order(job.dxt_segments, "MPI-IO") == 1.0


def test_hdf5_collective_order_without_any_offset():
    """Darshan 3.5's DXT_MPIIO gives -1 for libhdf5's metadata reads too: the data calls are
    the ones of the size that moves the most bytes."""
    job = load(darshan("ior_hdf5_coll_segments"), dxt=True)
    mpiio = job.dxt_segments["DXT_MPIIO"]
    assert (mpiio["offset"] < 0).all()
    assert read_order(job.dxt_segments, "HDF5") == 1.0


def test_no_trace_no_order():
    assert read_order({}, "MPI-IO") is None
    job = load(darshan("ior_mpiio_coll_4ranks"), dxt=True)
    blind = {"DXT_MPIIO": job.dxt_segments["DXT_MPIIO"]}
    assert read_order(blind, "MPI-IO") is None


@pytest.mark.parametrize("name,block", [("ior_mpiio_coll_4ranks", 16),
                                        ("ior_hdf5_coll_segments", 4)])
def test_fit_reads_collective_in_order(name, block):
    """IOR's collective segments: each call's pieces, in file order, are the ranks' in rank
    order (the aggregators' reads within the call), every rank's blocks of -b over -t
    transfers in turn and in order: block-cyclic, not shuffled."""
    fitted = analysis.fit(darshan(name))
    rd = fitted.workload["reader"]
    assert (rd["sample_shuffle"], rd["sharding"], rd["sharding_block"]) \
        == ("off", "round_robin", block)
    assert any("block-cyclic" in n for n in fitted.notes)


def test_fit_reads_collective_contiguous_shares_in_order():
    """IOR -c without segments, each rank its contiguous block: no turns, the calls' order
    measured."""
    fitted = analysis.fit(darshan("ior_mpiio_fsync"))
    assert fitted.workload["reader"]["sample_shuffle"] == "off"
    assert "sharding" not in fitted.workload["reader"]
    assert fitted.evidence["collective_read_order"] >= 0.95


def test_fit_says_when_the_collective_order_cannot_be_seen():
    """The same IOR run without DXT: no trace shows the order, and the fit says so."""
    fitted = analysis.fit(darshan("ior_mpiio_coll_4ranks_nodxt"))
    assert fitted.workload["io"]["interface"] == "mpiio_coll"
    assert fitted.evidence["collective_read_order"] is None
    assert any("order of the collective reads cannot be seen" in n for n in fitted.notes)


@pytest.mark.parametrize("log_name, run", [("ior_mpiio_coll_4ranks", "replay_mpiio_coll"),
                                           ("ior_hdf5_coll_segments", "replay_hdf5_coll")])
def test_compare_parts_a_shuffled_replay_from_an_in_order_collective_job(log_name, run):
    right = analysis.compare([darshan(log_name), os.path.join(RUNS, run + "_in_order")])
    wrong = analysis.compare([darshan(log_name), os.path.join(RUNS, run + "_shuffled")])
    assert right.layer == wrong.layer != "POSIX"
    assert right.row("read_order")[1] == 1.0
    assert wrong.row("read_order")[1] < 0.6
    assert right.score >= 0.95
    assert wrong.score < 0.6

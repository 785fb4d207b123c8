"""The readers, one rank in this process: each keeps the reader protocol; a batch's reads cover
exactly its samples' byte ranges (in transfer-size pieces), through read-ahead threads as
without them; io.read_type=memory loads; preprocessing is the rank's or the threads'."""
import inspect

import numpy as np
import pytest
from mpi4py import MPI

from dlio_mpi import engines
from dlio_mpi.config import loader as config
from dlio_mpi.data import generation as datagen
from dlio_mpi.readers import choice as reader_choice
from dlio_mpi.data.dataset import Dataset
from dlio_mpi.readers.pattern_reader import PatternReader
from dlio_mpi.readers.prefetch import PrefetchReader
from dlio_mpi.readers.protocol import BatchReader
from dlio_mpi.readers.reader import H5Reader, MPIReader, Reader
from dlio_mpi.readers.volume_reader import VolumeReader

SPF, REC, XFER = 4, 40_000, 16_384


def _cfg(tmp_path, *extra):
    return config.load(("workload=default", f"dataset.data_folder={tmp_path}/d",
                        "dataset.num_files_train=5", f"dataset.num_samples_per_file={SPF}",
                        f"dataset.record_length={REC}", "reader.batch_size=3",
                        f"reader.transfer_size={XFER}", "train.computation_time=0") + extra)


def _reader(tmp_path, *extra):
    cfg = _cfg(tmp_path, *extra)
    datagen.generate(cfg, MPI.COMM_WORLD)
    log = engines.OpLog(100_000)
    return cfg, reader_choice.make_reader(cfg, MPI.COMM_WORLD, log), log


def _protocol_members():
    return {n for n in dir(BatchReader) if not n.startswith("_")} \
        | set(BatchReader.__annotations__)


@pytest.mark.parametrize("cls", [Reader, MPIReader, H5Reader, PatternReader, VolumeReader,
                                 PrefetchReader])
def test_every_reader_keeps_the_protocol(cls):
    missing = [m for m in _protocol_members() if not hasattr(cls, m)
               and m not in ("data",)]      # set per instance
    assert not missing, (cls.__name__, missing)
    for m in ("plan_epoch", "start_epoch"):
        params = inspect.signature(getattr(cls, m)).parameters
        assert list(params)[1:3] == ["plan", "files"], (cls.__name__, m)


def _reads(log):
    a = log.arrays()
    r = a["op"] == engines.OP["read"]
    return sorted(zip(a["file"][r].tolist(), a["offset"][r].tolist(), a["bytes"][r].tolist()))


def _expected(data, batches):
    """Each sample's byte range, in XFER pieces, as (file id, offset, bytes)."""
    out = []
    for batch in batches:
        files, local = data.locate(np.asarray(batch))
        for f, k in zip(files.tolist(), local.tolist()):
            o, n = data.index(f).ranges(np.array([k]))
            o, n = int(o[0]), int(n[0])
            for at in range(o, o + n, XFER):
                out.append((data.first_id + f, at, min(XFER, o + n - at)))
    return sorted(out)


@pytest.mark.parametrize("threads", [0, 1, 3])
def test_a_batch_reads_exactly_its_samples(tmp_path, threads):
    cfg, reader, log = _reader(tmp_path, f"reader.read_threads={threads}")
    assert isinstance(reader, PrefetchReader) == (threads > 0)
    plan = np.array([[0, 7, 13], [19, 2, 5], [11, 12, 4]])
    reader.plan_epoch(plan)
    reader.start_epoch(plan)
    got = []
    for batch in plan:
        got.append(reader.read_batch(batch))
        reader.refill()
    reader.close()
    assert got == [3 * REC] * 3
    assert _reads(log) == _expected(reader.data, plan)


def test_a_short_file_is_one_error_naming_it(tmp_path):
    cfg, reader, log = _reader(tmp_path, "reader.read_threads=2")
    data = reader.data
    with open(data.path(1), "r+b") as f:
        f.truncate(data.index(1).file_size - 100)
    plan = np.array([[5, 6, 7]])
    reader.plan_epoch(plan)
    reader.start_epoch(plan)
    with pytest.raises(engines.EngineError, match=data.path(1).split("/")[-1]):
        reader.read_batch(plan[0])
    reader.close()


@pytest.mark.parametrize("threads", [0, 2])
def test_load_reads_the_extent_of_the_samples(tmp_path, threads):
    cfg, reader, log = _reader(tmp_path, f"reader.read_threads={threads}")
    data = Dataset(cfg)
    reader.load(2, np.array([1, 2]))
    o, n = data.index(2).ranges(np.array([1, 2]))
    reads = _reads(log)
    assert reads[0][1] == int(o[0]) and sum(b for _, _, b in reads) == int(n.sum())
    reader.close()


def test_preprocessing_is_the_rank_s_own_without_threads(tmp_path):
    _, plain, _ = _reader(tmp_path, "reader.preprocess_time=0.001", "reader.read_threads=0")
    assert plain.preprocess_inline(4) == pytest.approx(0.004)
    plain.close()
    _, ahead, _ = _reader(tmp_path, "reader.preprocess_time=0.001", "reader.read_threads=1")
    assert ahead.preprocess_inline(4) == 0.0
    ahead.close()


def test_only_a_built_epoch_is_prepared(tmp_path):
    for threads in (0, 1):
        _, reader, _ = _reader(tmp_path, f"reader.read_threads={threads}")
        assert reader.ep is None
        with pytest.raises(RuntimeError, match="no epoch of requests"):
            reader.prepare(0)
        reader.close()

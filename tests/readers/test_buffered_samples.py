"""reader.access=buffered: the reads Python's buffered file issues for samples read by seek and
read (dlio_mpi.readers.numpy_reads.BufferedSamples) are those a real file's buffered reader
issues, the buffer kept from one sample to the next."""
import io

import numpy as np
import pytest

from dlio_mpi.config import loader as config
from dlio_mpi.readers.numpy_reads import BufferedSamples


class _Recording(io.FileIO):
    """A real file that records each read the buffered file makes of it."""

    def __init__(self, path):
        super().__init__(path, "r")
        self.reads = []

    def readinto(self, b):
        at = self.tell()
        self.reads.append((at, len(b)))
        return super().readinto(b)


@pytest.mark.parametrize("record,blksize", [(3000, 4096), (10000, 4096), (512, 8192)])
def test_reads_are_those_of_a_real_buffered_file(tmp_path, record, blksize):
    path = tmp_path / "shard.bin"
    count = 64
    path.write_bytes(bytes(count * record))
    order = np.random.default_rng(1).permutation(count)
    order = np.concatenate([order, [5, 6, 7, count - 1]])      # neighbours, and the last
    raw = _Recording(str(path))
    with io.BufferedReader(raw, buffer_size=blksize) as f:
        for k in order.tolist():
            f.seek(k * record)
            assert len(f.read(record)) == record
    model = BufferedSamples(count * record, blksize)
    offs, lens = model.reads(order * record, np.full(len(order), record))
    assert list(zip(offs.tolist(), lens.tolist())) == raw.reads


@pytest.mark.parametrize("overrides,message", [
    (["reader.transfer_size=4096"], "the buffered file chooses the reads' sizes"),
    (["io.interface=mpiio"], "reads samples' byte ranges through a buffered file"),
])
def test_bad_buffered_settings_are_one_line(overrides, message):
    base = ["workload=default", "dataset.format=raw", "reader.access=buffered",
            "reader.transfer_size=0"]
    with pytest.raises(config.ConfigError) as ei:
        config.load(base + overrides)
    assert message in str(ei.value) and "\n" not in str(ei.value)

"""reader.access=buffered and file: the reads Python's buffered file issues for samples read by
seek and read (dlio_mpi.readers.numpy_reads.BufferedSamples, the buffer kept from one sample to
the next) and for a whole file read by f.read() (whole_file_reads) are those a real file's
buffered reader issues."""
import io
import shutil
import subprocess
import sys

import numpy as np
import pytest

from dlio_mpi.config import loader as config
from dlio_mpi.readers.numpy_reads import BufferedSamples, whole_file_reads


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


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
@pytest.mark.parametrize("size", [1, 4096, 123457])
def test_whole_file_reads_are_those_of_pythons_read(tmp_path, size):
    """The read calls of open(path, "rb").read() (FileIO.readall reads below the buffered
    file, out of a Python subclass's sight), as strace sees them: bytes asked for each."""
    path = tmp_path / "item.bin"
    path.write_bytes(bytes(size))
    trace = tmp_path / "strace.txt"
    subprocess.run(["strace", "-o", str(trace), "-e", "trace=openat,read", sys.executable,
                    "-c", f"open({str(path)!r}, 'rb').read()"], check=True)
    fd, asked = None, []
    for line in trace.read_text().splitlines():
        if fd is None and str(path) in line and line.startswith("openat("):
            fd = line.rsplit("=", 1)[1].strip()
        elif fd is not None and line.startswith(f"read({fd},"):
            asked.append(int(line.rsplit(",", 1)[1].split(")")[0]))
    offs, lens = whole_file_reads(size)
    assert asked == lens.tolist() and offs.tolist() == [0, size]


@pytest.mark.parametrize("overrides,message", [
    (["reader.transfer_size=4096"], "the buffered file chooses the reads' sizes"),
    (["io.interface=mpiio"], "reads samples' byte ranges through a buffered file"),
    (["reader.access=pickle", "dataset.num_samples_per_file=4"],
     "reads a sample's file whole through Python's file"),
])
def test_bad_buffered_settings_are_one_line(overrides, message):
    base = ["workload=default", "dataset.format=raw", "reader.access=buffered",
            "reader.transfer_size=0"]
    with pytest.raises(config.ConfigError) as ei:
        config.load(base + overrides)
    assert message in str(ei.value) and "\n" not in str(ei.value)


def test_a_pickle_in_frames_read_through_a_buffer():
    """pickle.load of a pickle of many objects in 64 KiB frames through a 4 KiB buffer: a
    fill, then each frame's rest straight in whole buffers, the next frame's start a fill,
    the last a fill of the tail (as strace and Darshan show pickle.load of a list of 64 arrays
    of 8 KiB)."""
    from dlio_mpi.readers.numpy_reads import pickle_reads
    o, n = pickle_reads(526130, 4096, frame=65536)
    reads = list(zip(o.tolist(), n.tolist()))
    assert reads[:4] == [(0, 4096), (4096, 61440), (65536, 4096), (69632, 61440)]
    assert reads[-1] == (524288, 4096) and len(reads) == 17


def test_pickle_frames_need_the_pickle_access():
    from dlio_mpi.config import loader as config
    base = ["workload=default", "dataset.format=raw", "dataset.num_samples_per_file=1",
            "reader.pickle_frame=65536"]
    for extra in (["reader.access=sample"], ["reader.access=pickle", "reader.pickle_tail=100"]):
        try:
            config.load(base + extra)
        except config.ConfigError as e:
            assert "reader.pickle_frame=65536" in str(e) and "\n" not in str(e)
        else:
            raise AssertionError(f"accepted {extra}")

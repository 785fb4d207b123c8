"""Access patterns (dlio_mpi.readers.access, dlio_mpi.readers.numpy_reads): the reads a rank plans, checked
against what the libraries they stand in for do on real files."""
import io
import os

import numpy as np
import pytest

from dlio_mpi.readers import access
from dlio_mpi.config import loader as config
from dlio_mpi.readers import numpy_reads


def test_stream_files_split_among_ranks():
    for shuffle in (False, True):
        for epoch in range(3):
            parts = [access.stream_files(10, 3, r, epoch, 7, shuffle) for r in range(3)]
            allf = np.concatenate(parts)
            assert sorted(allf.tolist()) == list(range(10))      # each file to one rank
            assert [len(p) for p in parts] == [4, 3, 3]
    same = access.stream_files(10, 1, 0, 0, 7, True)
    assert not np.array_equal(same, access.stream_files(10, 1, 0, 1, 7, True))
    assert np.array_equal(same, access.stream_files(10, 1, 0, 0, 7, True))
    assert np.array_equal(access.stream_files(10, 1, 0, 0, 7, False), np.arange(10))


def test_stream_steps_and_plan():
    assert access.stream_steps(10, 4, 3, 2) == 6        # 3 files of 4 samples, batches of 2
    plan = access.stream_plan([5, 2, 9], 4, 6, 2)
    assert plan.tolist() == [[20, 21], [22, 23], [8, 9], [10, 11], [36, 37], [38, 39]]


def _reference_stream(sizes, ends, steps, batch, lead, xfer):
    """A buffered record reader refilling xfer bytes at a time (TensorFlow's
    BufferedInputStream over the file), that reads just enough to hand over sample
    (k+1)*batch+lead-1 by the end of step k, then moves on to the next file only when that
    file's bytes are all consumed: (step, file, offset, length) of each refill."""
    out = []
    samples = [(i, e) for i, es in enumerate(ends) for e in es]
    f, pos = 0, 0                 # file being read, bytes of it read so far
    for k in range(steps):
        last = min((k + 1) * batch + lead, len(samples)) - 1
        fi, end = samples[last]
        while (f, pos) < (fi, end):
            if pos >= sizes[f]:
                f, pos = f + 1, 0
                continue
            n = min(xfer, sizes[f] - pos)
            out.append((k, f, pos, n))
            pos += n
    return out


@pytest.mark.parametrize("xfer,lead,batch", [(256, 0, 1), (100, 3, 2), (1000, 5, 3),
                                             (64, 0, 4)])
def test_stream_reads_are_a_buffered_reader(xfer, lead, batch):
    rng = np.random.default_rng(xfer)
    sizes, ends = [], []
    for _ in range(5):
        lens = rng.integers(20, 400, size=6) + 16        # framed records
        e = np.cumsum(lens)
        ends.append(e)
        sizes.append(int(e[-1]))
    files = np.array([4, 0, 3, 1, 2])
    steps = 30 // batch
    plan = access.stream_reads(files, sizes, ends, steps, batch, lead, xfer)
    got = [(k, int(f), int(o), int(n)) for k in range(steps)
           for f, o, n in zip(*plan.step(k))]
    want = [(k, int(files[f]), o, n) for k, f, o, n in
            _reference_stream(sizes, ends, steps, batch, lead, xfer)]
    assert got == want
    # each file front to back, blocks once, never past its end
    for f, size in zip(files, sizes):
        o = plan.offset[plan.file == f]
        n = plan.length[plan.file == f]
        assert np.array_equal(o, np.arange(0, len(o)) * xfer)
        assert (o + n <= size).all()


def test_stream_reads_direct_alignment_and_whole_file():
    plan = access.stream_reads([0], [10000], [np.array([5000, 10000])], 2, 1, 0, 4096,
                               align=4096)
    assert plan.offset.tolist() == [0, 4096, 8192]
    assert plan.length.tolist() == [4096, 4096, 4096]        # the tail rounded up
    assert plan.first.tolist() == [0, 2, 3]
    whole = access.stream_reads([0], [10000], [np.array([5000, 10000])], 2, 1, 0, 0)
    assert whole.length.tolist() == [10000] and whole.first.tolist() == [0, 1, 1]


def test_stream_reads_at_the_end_of_each_file():
    """eof reads follow each file's last block, in the step of that block, at the file's end."""
    plan = access.stream_reads([1, 0], [10000, 5000], [np.array([5000, 10000]),
                                                       np.array([5000])], 3, 1, 0, 4096, eof=2)
    got = [(k, int(f), int(o), int(n)) for k in range(3) for f, o, n in zip(*plan.step(k))]
    assert got == [(0, 1, 0, 4096), (0, 1, 4096, 4096),
                   (1, 1, 8192, 1808), (1, 1, 10000, 4096), (1, 1, 10000, 4096),
                   (2, 0, 0, 4096), (2, 0, 4096, 904), (2, 0, 5000, 4096),
                   (2, 0, 5000, 4096)]


def returned(offs, lens, size):
    """What reads of (offsets, lengths) return from a file of size bytes."""
    return np.clip(np.minimum(offs + lens, size) - offs, 0, None)


def _with_probe(log, size):
    """The recorded reads with the end-of-file probe FileIO.readall makes after reading to the
    end (the read-to-end of the zip end record: os.read returns 0 once more)."""
    out = []
    for o, n in log:
        out.append((o, n))
        if o + n == size and n == 22:
            out.append((size, 0))
    return out


class _Recorder(io.FileIO):
    """A file that notes (offset, bytes) of every read that returns data (with empty=True,
    of those returning nothing too)."""

    def __init__(self, path, log, empty=False):
        super().__init__(path)
        self.log, self.empty = log, empty

    def readinto(self, b):
        pos = self.tell()
        n = super().readinto(b)
        if n or self.empty:
            self.log.append((pos, n))
        return n

    def readall(self):
        pos = self.tell()
        b = super().readall()
        if b:
            self.log.append((pos, len(b)))
        return b


@pytest.mark.parametrize("sizes", [[100000], [3_000_000], [2048, 2048, 5000],
                                   [300, 70000, 1], [1 << 20, 17]])
@pytest.mark.parametrize("blksize", [4096, 8192, 1 << 20])
def test_numpy_reads_are_numpys(tmp_path, sizes, blksize):
    """np.load(path)[member] on the real file, through a buffered file of blksize: the same
    reads, in the same order, as dlio_mpi.readers.numpy_reads plans."""
    rng = np.random.default_rng(len(sizes))
    path = tmp_path / "f.npz"
    np.savez(path, **{f"x_{i}": rng.integers(0, 255, n, dtype=np.uint8)
                      for i, n in enumerate(sizes)})
    size, _, _ = numpy_reads.npz_reads(tuple(sizes), "uint8", blksize)
    assert size == os.path.getsize(path)
    for i in range(len(sizes)):
        log = []
        with io.BufferedReader(_Recorder(path, log), buffer_size=blksize) as f, \
                np.load(f) as d:
            d[f"x_{i}"]
        offs, lens = numpy_reads.sample_reads(tuple(sizes), i, "uint8", blksize)
        assert list(zip(offs.tolist(), returned(offs, lens, size).tolist())) \
            == _with_probe(log, size)


def test_numpy_reads_wider_dtype(tmp_path):
    path = tmp_path / "f.npz"
    np.savez(path, x_0=np.arange(70001, dtype=np.float32), x_1=np.arange(5, dtype=np.float32))
    log = []
    with io.BufferedReader(_Recorder(path, log), buffer_size=4096) as f, np.load(f) as d:
        d["x_0"]
    offs, lens = numpy_reads.sample_reads((280004, 20), 0, "float32", 4096)
    size = os.path.getsize(path)
    assert list(zip(offs.tolist(), returned(offs, lens, size).tolist())) == _with_probe(log, size)


@pytest.mark.parametrize("overrides,words", [
    (["reader.access=stream", "dataset.format=hdf5", "io.interface=hdf5"], "libhdf5"),
    (["reader.access=stream", "reader.sample_shuffle=seed"], "reader.shuffle_size"),
    (["reader.access=stream", "reader.sample_shuffle=off", "reader.shuffle_size=8"],
     "sample_shuffle=off"),
    (["reader.access=stream", "io.interface=mpiio_coll", "io.layout=shared",
      "dataset.num_files_train=1"], "io.interface must be"),
    (["reader.access=stream", "io.read_type=memory"], "io.read_type=memory"),
    (["reader.access=numpy", "dataset.format=raw"], "dataset.format must be npy or npz"),
    (["reader.access=numpy", "dataset.format=npz", "dataset.compression=zip"], "stored"),
    (["reader.access=numpy", "dataset.format=npz", "io.interface=mmap"], "buffered file"),
    (["reader.access=numpy", "dataset.format=npy", "io.interface=stdio"],
     "io.interface must be posix"),
    (["reader.shuffle_size=4"], "reader.access=stream"),
    (["reader.eof_reads=2"], "reader.access=stream"),
    (["reader.interleave=4"], "it needs reader.access=stream"),
    (["reader.access=stream", "reader.interleave=0"], "reader.interleave=0"),
    (["reader.stream_pass=sample"], "it needs reader.access=stream"),
    (["reader.access=pickle", "dataset.num_samples_per_file=2"], "num_samples_per_file=1"),
    (["reader.access=torch", "dataset.num_samples_per_file=2"], "num_samples_per_file=1"),
    (["reader.torch_tensors=3"], "it needs reader.access=torch"),
    (["reader.pickle_tail=21"], "it needs reader.access=pickle"),
    (["reader.access=pickle", "dataset.num_samples_per_file=1", "reader.transfer_size=64k"],
     "reader.transfer_size=0"),
    (["reader.access=stream", "reader.stream_pass=sample", "reader.interleave=2"],
     "reader.interleave 1"),
    (["reader.access=image", "dataset.num_samples_per_file=2"], "an image per file"),
    (["reader.access=image", "dataset.num_samples_per_file=1", "io.interface=mmap"],
     "buffered file"),
    (["reader.access=image", "dataset.num_samples_per_file=1", "reader.transfer_size=0"],
     "request size"),
    (["dataset.format=hdf5", "io.interface=hdf5", "dataset.enable_chunking=true",
      "dataset.record_length=4096", "dataset.chunk_size=6000"], "neither a whole number"),
    (["dataset.format=hdf5", "io.interface=hdf5", "dataset.chunk_size=1024"],
     "enable_chunking"),
    (["dataset.format=hdf5", "io.interface=hdf5", "dataset.enable_chunking=true",
      "dataset.chunk_size=1024", "dataset.record_length_stdev=100"], "vary in size"),
])
def test_access_config_errors(overrides, words):
    with pytest.raises(config.ConfigError) as e:
        config.load(["workload=default", *overrides])
    assert words in str(e.value) and "\n" not in str(e.value)


def test_stream_needs_a_file_per_rank():
    cfg = config.load(["workload=default", "reader.access=stream", "reader.shuffle_size=4",
                       "dataset.num_files_train=3"])
    config.check_ranks(cfg, 3)
    with pytest.raises(config.ConfigError, match="fewer than the 4 ranks") as e:
        config.check_ranks(cfg, 4)
    assert "data_loader" not in str(e.value)
    tf = config.load(["workload=default", "reader.data_loader=tensorflow",
                      "dataset.format=tfrecord", "dataset.num_files_train=3"])
    with pytest.raises(config.ConfigError, match="fewer than the 4 ranks") as e:
        config.check_ranks(tf, 4)
    assert "reader.data_loader=tensorflow reads TFRecord files as a stream" in str(e.value)


def test_hdf5_chunk_shape_is_honoured(tmp_path):
    import h5py

    from dlio_mpi import formats
    from dlio_mpi.data.dataset import format_spec
    for chunk, rec, want in [(4096, 40960, (1, 4096)), (1000, 4000, (1, 1000)),
                             (8192, 4096, (2, 4096)), (0, 4096, (1, 4096))]:
        cfg = config.load(["workload=default", "dataset.format=hdf5", "io.interface=hdf5",
                           "dataset.enable_chunking=true", f"dataset.chunk_size={chunk}",
                           f"dataset.record_length={rec}", "dataset.num_samples_per_file=4"])
        spec = format_spec(cfg)
        path = tmp_path / f"c{chunk}.h5"
        formats.write_file(path, 0, spec)
        with h5py.File(path) as f:
            assert f["records"].chunks == want
        other = spec.replace(chunk_elems=0 if spec.chunk_elems else 7, chunk_rows=1)
        if other.chunk_elems or spec.chunk_elems:
            with pytest.raises(formats.FormatError, match="chunks"):
                formats.index_file(path, other)


def test_hdf5_file_format_is_checked(tmp_path):
    """dataset.hdf5_libver: the file format h5py writes (superblock 0 or 3); a file of the
    other format is not this dataset's (it is rewritten)."""
    import h5py

    from dlio_mpi import formats
    from dlio_mpi.data.dataset import format_spec
    for libver, superblock in (("earliest", 0), ("latest", 3)):
        cfg = config.load(["workload=default", "dataset.format=hdf5", "io.interface=hdf5",
                           f"dataset.hdf5_libver={libver}", "dataset.num_samples_per_file=2",
                           "dataset.record_length=1024"])
        spec = format_spec(cfg)
        path = tmp_path / f"{libver}.h5"
        formats.write_file(path, 0, spec)
        with h5py.File(path) as f:
            assert f.id.get_create_plist().get_version()[0] == superblock
        other = spec.replace(libver="latest" if libver == "earliest" else "earliest")
        with pytest.raises(formats.FormatError, match="superblock"):
            formats.index_file(path, other)


def test_image_reads_are_a_buffered_decoders():
    """PIL through Python's buffered file (4 KiB): the header fill, the rest of the first
    64 KiB request, then 64 KiB requests until a short one, and the probe that finds the end
    (the DLIO benchmark's JPEG files under Darshan show exactly these)."""
    offs, lens = numpy_reads.image_reads(74941, 4096, 65536)
    got = returned(offs, lens, 74941)
    assert list(zip(offs.tolist(), got.tolist())) == [(0, 4096), (4096, 61440),
                                                      (65536, 9405), (74941, 0)]
    offs, lens = numpy_reads.image_reads(200000, 8192, 65536)
    got = returned(offs, lens, 200000)
    assert offs.tolist()[:3] == [0, 8192, 65536] and got.sum() == 200000 and got[-1] == 0


@pytest.mark.parametrize("nbytes", [2000, 30000, 36465, 60000])
@pytest.mark.parametrize("blksize", [4096, 8192])
def test_pickle_reads_are_pickle_loads(tmp_path, nbytes, blksize):
    """pickle.load of a dict of a numpy array (as a loader's per-sample pickle, within
    pickle's 64 KiB frame) on the real file, through a buffered file of blksize: the same
    reads, in the same order, as dlio_mpi.readers.numpy_reads.pickle_reads plans for a file
    of its size."""
    import pickle
    path = tmp_path / "sample.pkl"
    with open(path, "wb") as f:
        pickle.dump({"x": np.arange(nbytes, dtype=np.uint8), "y": 3}, f, protocol=4)
    size = path.stat().st_size
    log = []
    with io.BufferedReader(_Recorder(path, log), buffer_size=blksize) as fh:
        pickle.load(fh)
    offs, lens = numpy_reads.pickle_reads(size, blksize)
    assert list(zip(offs.tolist(), returned(offs, lens, size).tolist())) == log


@pytest.mark.parametrize("nbytes", [100000, 1 << 20])
def test_pickle_reads_of_an_object_outside_the_frames(tmp_path, nbytes):
    """A pickle's large object is written outside its frames: pickle.load reads it straight
    in after the buffer's fill, then its last frame through a buffer fill (pickle_reads with
    tail, the last frame's bytes)."""
    import pickle
    path = tmp_path / "sample.pkl"
    with open(path, "wb") as f:
        pickle.dump({"x": np.arange(nbytes, dtype=np.uint8), "y": 3}, f, protocol=4)
    size = path.stat().st_size
    log = []
    with io.BufferedReader(_Recorder(path, log), buffer_size=4096) as fh:
        pickle.load(fh)
    tail = size - log[-1][0]
    offs, lens = numpy_reads.pickle_reads(size, 4096, tail=tail)
    assert list(zip(offs.tolist(), returned(offs, lens, size).tolist())) == log
    assert len(log) == 3 and 0 < tail < 4096


def test_stacked_npz_reads_are_numpys(tmp_path):
    """dataset.npz_layout=stacked (x: the file's samples side by side, y: labels, as the DLIO
    benchmark writes NPZ): np.load(path)['x'] reads as planned, and the file is what the
    generator writes and its index reads."""
    from dlio_mpi import formats
    from dlio_mpi.data.dataset import format_spec
    cfg = config.load(["workload=default", "dataset.format=npz", "reader.access=numpy",
                       "dataset.npz_layout=stacked", "dataset.num_samples_per_file=3",
                       "dataset.record_length=300000"])
    spec = format_spec(cfg)
    path = tmp_path / "s.npz"
    idx = formats.write_file(path, 0, spec)
    assert idx.num_samples == 3 and (idx.sizes == 300000).all()
    with np.load(path) as z:
        assert z["x"].shape == (300000, 3) and z["y"].shape == (3,)
        assert np.array_equal(z["x"][:, 1], formats.sample_bytes(spec, 0, 1))
    size, offs, lens = numpy_reads.stacked_reads(300000, 3)
    assert size == os.path.getsize(path)
    log = []
    with io.BufferedReader(_Recorder(path, log), buffer_size=4096) as f, np.load(f) as d:
        d["x"]
    assert list(zip(offs.tolist(), returned(offs, lens, size).tolist())) \
        == _with_probe(log, size)
    with pytest.raises(config.ConfigError, match="reader.access=numpy"):
        config.load(["workload=default", "dataset.format=npz", "dataset.npz_layout=stacked"])


def test_stacked_npz_of_one_sample_a_file_takes_a_size_spread(tmp_path):
    """The DLIO benchmark's unet3d: one sample a file (x and y) of sizes with a spread: each
    file's x its own sample's size; with several samples a file, one size a file drawn (its
    samples the columns of one array), the files' sizes spread."""
    from dlio_mpi import formats
    from dlio_mpi.data.dataset import format_spec
    keys = ["workload=default", "dataset.format=npz", "reader.access=numpy",
            "dataset.npz_layout=stacked", "dataset.record_length=100000",
            "dataset.record_length_stdev=30000"]
    spec = format_spec(config.load(keys + ["dataset.num_samples_per_file=1"]))
    sizes = []
    for f in range(4):
        idx = formats.write_file(tmp_path / f"{f}.npz", f, spec)
        with np.load(tmp_path / f"{f}.npz") as z:
            assert z["x"].shape == (int(idx.sizes[0]), 1) and z["y"].shape == (1,)
        assert idx.sizes[0] == formats.sample_sizes(spec, f)[0]
        sizes.append(int(idx.sizes[0]))
    assert len(set(sizes)) == 4
    spec = format_spec(config.load(keys + ["dataset.num_samples_per_file=3"]))
    sizes = []
    for f in range(4):
        drawn = formats.sample_sizes(spec, f)
        assert len(set(drawn.tolist())) == 1
        idx = formats.write_file(tmp_path / f"s{f}.npz", f, spec)
        with np.load(tmp_path / f"s{f}.npz") as z:
            assert z["x"].shape == (int(drawn[0]), 3) and z["y"].shape == (3,)
        assert idx.sizes.tolist() == drawn.tolist()
        sizes.append(int(drawn[0]))
    assert len(set(sizes)) == 4


@pytest.mark.parametrize("sample,blksize", [(300000, 4096), (2_000_000, 4 << 20),
                                            (5_000_000, 4 << 20)])
def test_shot_npz_reads_are_numpys(tmp_path, sample, blksize):
    """dataset.npz_layout=shot (one FRNN shot per file, as plasma-python saves it): loading
    its four members with np.load(path, allow_pickle=True) reads as planned, through buffers
    smaller and larger than the file, and the file holds the sample's bytes as its signals."""
    from dlio_mpi import formats
    from dlio_mpi.data.dataset import format_spec
    cfg = config.load(["workload=default", "dataset.format=npz", "reader.access=numpy",
                       "dataset.npz_layout=shot", "dataset.num_samples_per_file=1",
                       f"dataset.record_length={sample}"])
    spec = format_spec(cfg)
    path = tmp_path / "shot.npz"
    idx = formats.write_file(path, 3, spec)
    assert idx.num_samples == 1 and idx.sizes.tolist() == [sample]
    log = []
    with io.BufferedReader(_Recorder(path, log), buffer_size=blksize) as f, \
            np.load(f, allow_pickle=True) as d:
        got = [d[m] for m in numpy_reads.SHOT_MEMBERS]
    assert bool(got[0][()]) and not bool(got[1][()])
    assert np.array_equal(got[2][()]["signals"], formats.sample_bytes(spec, 3, 0))
    assert got[3].dtype == np.float32 and len(got[3]) == sample // 64
    size, offs, lens = numpy_reads.shot_reads(sample, blksize)
    assert size == os.path.getsize(path)
    assert list(zip(offs.tolist(), returned(offs, lens, size).tolist())) \
        == _with_probe(log, size)


def test_shot_layout_needs_one_sample_and_numpy():
    with pytest.raises(config.ConfigError, match="npz_layout=shot"):
        config.load(["workload=default", "dataset.format=npz", "reader.access=numpy",
                     "dataset.npz_layout=shot", "dataset.num_samples_per_file=2"])
    with pytest.raises(config.ConfigError, match="npz_layout=shot"):
        config.load(["workload=default", "dataset.format=npz", "dataset.npz_layout=shot",
                     "dataset.num_samples_per_file=1"])


def _tf_interleave(counts, cycle):
    """tf.data's interleave (block length 1) told as its loop runs: per turn of the cycle, an
    empty place takes the next file (and gives its first sample at once), a file with samples
    left gives one, an ended file leaves its place; the turn moves on. Returns the files of
    the samples in the order they come out."""
    places, left, nxt, at, out = [None] * cycle, list(counts), 0, 0, []
    while nxt < len(counts) or any(p is not None for p in places):
        if places[at] is None and nxt < len(counts):
            places[at], nxt = nxt, nxt + 1
        f = places[at]
        if f is not None and left[f]:
            out.append(f)
            left[f] -= 1
        elif f is not None:
            places[at] = None
        at = (at + 1) % cycle
    return out


@pytest.mark.parametrize("counts,cycle", [([4, 4, 4, 4, 4], 2), ([3, 3, 3], 8), ([5] * 9, 4),
                                          ([2, 5, 1, 4, 3], 2), ([3, 0, 2, 6], 3),
                                          ([6, 1, 1, 1, 6], 4), ([4, 4], 1)])
def test_interleave_is_tf_data_interleave(counts, cycle):
    pos = access.interleave(counts, cycle)
    order = [None] * sum(counts)
    for f, p in enumerate(pos):
        assert len(p) == counts[f] and (np.diff(p) > 0).all()    # a file's samples in order
        for x in p.tolist():
            order[x] = f
    assert order == _tf_interleave(counts, cycle)


def test_stream_plan_interleaves_files():
    plan = access.stream_plan([5, 2, 9], 4, 6, 2, cycle=2)
    assert plan.tolist() == [[20, 8], [21, 9], [22, 10], [23, 11], [36, 37], [38, 39]]


def _reference_interleaved(sizes, ends, steps, batch, lead, xfer, cycle):
    """Buffered readers (xfer bytes a refill) of `cycle` files at a time whose samples are
    taken in turn (tf.data's interleave): by the end of step k the first (k+1)*batch+lead
    samples are handed over; a reader refills when its next sample needs bytes it has not
    read, and reads the rest of its file once the sample after its last one is taken.
    Returns {(step, file): [(offset, length), ...]}."""
    order = _tf_interleave([len(e) for e in ends], cycle)
    taken = [0] * len(ends)
    pos = [0] * len(ends)
    done = [False] * len(ends)
    out = {}

    def fill(k, f, upto):
        while pos[f] < upto:
            n = min(xfer, sizes[f] - pos[f])
            out.setdefault((k, f), []).append((pos[f], n))
            pos[f] += n

    last = -1
    for k in range(steps):
        upto = min((k + 1) * batch + lead, len(order)) - 1
        for i in range(last + 1, upto + 1):
            f = order[i]
            for g in range(len(ends)):      # files whose last sample came before this one
                if taken[g] == len(ends[g]) and not done[g] and g != f:
                    fill(k, g, sizes[g])
                    done[g] = True
            fill(k, f, int(ends[f][taken[f]]))
            taken[f] += 1
        last = upto
    return out


@pytest.mark.parametrize("xfer,lead,batch,cycle", [(256, 0, 1, 2), (100, 3, 2, 3),
                                                   (1000, 5, 3, 4), (64, 0, 4, 8)])
def test_interleaved_stream_reads_are_buffered_readers(xfer, lead, batch, cycle):
    rng = np.random.default_rng(xfer + cycle)
    sizes, ends = [], []
    for _ in range(5):
        lens = rng.integers(20, 400, size=6) + 16
        e = np.cumsum(lens)
        ends.append(e)
        sizes.append(int(e[-1]) + int(rng.integers(0, 50)))      # and bytes after the last
    files = np.array([4, 0, 3, 1, 2])
    steps = 30 // batch
    plan = access.stream_reads(files, sizes, ends, steps, batch, lead, xfer, cycle=cycle)
    got = {}
    for k in range(steps):
        fs, os_, ns = plan.step(k)
        order = list(dict.fromkeys(fs.tolist()))
        # a step's reads: its files in stream order, each file's run together
        assert order == sorted(order, key=lambda f: files.tolist().index(f))
        assert len(order) == len([j for j in range(1, len(fs)) if fs[j] != fs[j - 1]]) + 1 \
            or len(fs) == 0
        for f, o, n in zip(fs.tolist(), os_.tolist(), ns.tolist()):
            got.setdefault((k, files.tolist().index(f)), []).append((o, n))
    assert got == _reference_interleaved(sizes, ends, steps, batch, lead, xfer, cycle)

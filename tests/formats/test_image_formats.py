"""The jpeg and png formats: one square greyscale image per file, decoded by Pillow into the
pixels the format promises, and read by the emulator (reader.access=image) exactly as PIL
reads the file: PIL itself is run on the written files through a raw file that records
every read it is asked for, and the emulator's pattern must be those reads."""
import io
import struct
from pathlib import Path

import numpy as np
import pytest

from dlio_mpi import formats
from dlio_mpi.config import loader as config
from dlio_mpi.readers import numpy_reads
from dlio_mpi.formats import FormatError, FormatSpec, jpeg, png

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

Image = pytest.importorskip("PIL.Image")

SIDES = {"tiny": 40, "one_block": 362, "many_blocks": 1000}


class RecordingFile(io.FileIO):
    """A real file that keeps (offset, bytes asked for) of every read made of it."""

    def __init__(self, path):
        super().__init__(path, "r")
        self.reads = []

    def readinto(self, b):
        self.reads.append((self.tell(), len(b)))
        return super().readinto(b)


def pil_reads(path, blksize=4096):
    """The reads PIL's load (numpy.asarray(Image.open(f))) makes of the file at path, through
    Python's buffered file of blksize bytes, as open(path, "rb") gives it."""
    raw = RecordingFile(path)
    with io.BufferedReader(raw, buffer_size=blksize) as f:
        image = np.asarray(Image.open(f))
    return image, raw.reads


def written(tmp_path, fmt, side, file_index=0):
    spec = FormatSpec(format=fmt, record_length=side * side, seed=3)
    path = tmp_path / f"f{file_index}.{fmt}"
    idx = formats.write_file(str(path), file_index, spec)
    return spec, str(path), idx


@pytest.mark.parametrize("fmt", ["jpeg", "png"])
@pytest.mark.parametrize("size", sorted(SIDES))
def test_pil_decodes_the_promised_image_and_reads_it_as_the_emulator_does(tmp_path, fmt,
                                                                          size):
    side = SIDES[size]
    spec, path, idx = written(tmp_path, fmt, side)
    assert idx == formats.index_file(path, spec, 0)
    assert (idx.num_samples, int(idx.sizes[0]), idx.file_size) == \
        (1, side * side, len(Path(path).read_bytes()))
    image, reads = pil_reads(path)
    assert image.shape == (side, side) and image.dtype == np.uint8
    assert np.array_equal(image, formats.sample_value(spec, 0, 0))
    assert np.array_equal(image.reshape(-1), formats.sample_bytes(spec, 0, 0))
    if fmt == "png":        # lossless: the seeded content itself
        assert np.array_equal(image.reshape(-1), formats.sample_bytes(spec, 0, 0))
        want = numpy_reads.png_reads(idx.file_size, tuple(png.idat_chunks(idx.file_size)))
    else:
        want = numpy_reads.image_reads(idx.file_size)
    assert reads == list(zip(*[a.tolist() for a in want]))


def test_png_is_chunked_as_pillow_chunks_it(tmp_path):
    """IDAT chunks of 64 KiB, the last shorter, and no other chunk: the same chunks a file
    Pillow writes of the same image has."""
    spec, path, idx = written(tmp_path, "png", 700)
    data = Path(path).read_bytes()
    chunks, pos = [], 8
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunks.append((kind, n))
        pos += 12 + n
    assert chunks[0] == (b"IHDR", 13) and chunks[-1] == (b"IEND", 0)
    assert [n for k, n in chunks if k == b"IDAT"] == png.idat_chunks(idx.file_size)
    assert set(k for k, _ in chunks) == {b"IHDR", b"IDAT", b"IEND"}
    theirs = io.BytesIO()
    Image.fromarray(formats.sample_value(spec, 0, 0)).save(theirs, format="PNG")
    raw = theirs.getvalue()
    theirs_chunks, pos = [], 8
    while pos < len(raw):
        n, kind = struct.unpack(">I4s", raw[pos:pos + 8])
        theirs_chunks.append(n if kind == b"IDAT" else None)
        pos += 12 + n
    assert [n for n in theirs_chunks if n is not None][:-1] == \
        png.idat_chunks(idx.file_size)[:-1]


def test_the_pixels_for_a_file_size():
    """The fit's question: the image whose file has a given size."""
    for fmt, mod in (("jpeg", jpeg), ("png", png)):
        pixels = mod.record_length_for(80_000)
        side = int(round(pixels ** 0.5))
        assert side * side == pixels
        assert abs(mod.file_bytes(side) - 80_000) < 0.01 * 80_000, fmt


@pytest.mark.parametrize("size", [49_353, 30_000, 196_608])
def test_a_png_of_a_file_size_to_the_byte(tmp_path, size):
    """A PNG file of a given size to within a byte a 4 KiB page (the squares' files are
    hundreds of bytes apart): the square at or above it, its content made that much compressible
    (dataset.content_fill); the dataset's file written with both has that size, and PIL
    decodes the promised pixels."""
    pixels, fill = png.image_for(size)
    side = int(round(pixels ** 0.5))
    assert side * side == pixels and 0.5 < fill <= 1.0
    near = 8 + pixels // 4096      # the fill moves a byte a 4 KiB page
    assert abs(png.file_bytes(side, fill) - size) <= near
    assert abs(png.file_bytes(int(round(png.record_length_for(size) ** 0.5))) - size) > near
    spec = FormatSpec(format="png", record_length=pixels, seed=0, content_fill=fill)
    path = tmp_path / "img.png"
    formats.write_file(str(path), 0, spec)
    assert abs(path.stat().st_size - size) <= near
    with Image.open(path) as im:
        assert np.array_equal(np.asarray(im), formats.sample_bytes(spec, 0, 0).reshape(side, side))


@pytest.mark.parametrize("fmt", ["jpeg", "png"])
def test_damaged_files_say_where(tmp_path, fmt):
    spec, path, idx = written(tmp_path, fmt, 362)
    with open(path, "r+b") as f:
        f.truncate(idx.file_size // 2)
    with pytest.raises(FormatError) as ei:
        formats.index_file(path, spec, 0)
    assert path in str(ei.value) and "truncated" in str(ei.value)
    other = tmp_path / ("x." + fmt)
    other.write_bytes(b"not an image at all, but long enough to hold a header......")
    with pytest.raises(FormatError) as ei:
        formats.index_file(str(other), spec, 0)
    assert str(other) in str(ei.value) and "\n" not in str(ei.value)


@pytest.mark.parametrize("fmt", ["jpeg", "png"])
def test_one_image_per_file(fmt):
    with pytest.raises(config.ConfigError) as ei:
        config.load(["workload=default", f"dataset.format={fmt}",
                     "dataset.num_samples_per_file=4"])
    assert "one image per file" in str(ei.value) and "\n" not in str(ei.value)


def test_variable_sizes_are_whole_squares():
    spec = FormatSpec(format="png", record_length=10_000, record_length_stdev=2_000, seed=1)
    sizes = [int(formats.sample_sizes(spec, f)[0]) for f in range(20)]
    assert len(set(sizes)) > 5
    assert all(int(round(s ** 0.5)) ** 2 == s for s in sizes)


@pytest.mark.mpi
@pytest.mark.parametrize("fmt", ["jpeg", "png"])
def test_a_run_reads_each_image_as_pil_does(tmp_path, fmt):
    """mpiexec -n 2 of a generated dataset of images, reader.access=image: every load of every
    file, in the op logs, is PIL's reads of that file (the bytes each read returned)."""
    from dlio_mpi_analysis.characterization.characterize import load_job
    from dlio_mpi_analysis.replays.launch import run_emulator

    out = tmp_path / "run"
    run_emulator("image run", 2, [
        "run", "workload=default", f"dataset.format={fmt}", "dataset.num_files_train=8",
        "dataset.num_samples_per_file=1", "dataset.record_length=90000",
        "dataset.record_length_stdev=20000", f"dataset.data_folder={tmp_path / 'data'}",
        "workflow.generate_data=true", "reader.access=image", "reader.transfer_size=64k",
        "reader.buffer_size=4096", "reader.batch_size=2", "reader.read_threads=0",
        "train.epochs=2", "train.computation_time=0.001", "io.keep_oplog=true",
        f"output.folder={out}"])
    job = load_job(str(out), dxt=True).frames()
    trace = job.dxt_segments["DXT_POSIX"]
    reads = trace[trace["op"] == "read"]
    loads = 0
    for fid, mine in reads.groupby("id"):
        path = job.names[int(fid)]
        size = Path(path).stat().st_size
        _, asked = pil_reads(path)
        one = [(o, max(0, min(o + n, size) - o)) for o, n in asked]
        seen = list(zip(mine["offset"].tolist(), mine["length"].tolist()))
        assert seen == one * 2, path         # two epochs, one load each
        loads += 2
    assert loads == 16

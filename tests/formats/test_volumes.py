"""HDF5 volumes (dataset.volumes): N-D datasets chunked and compressed as asked, read as crops
at seeded positions, each crop of each volume one H5Dread of the engine."""

import numpy as np
import pytest

from dlio_mpi import formats
from dlio_mpi.config import loader as config
from dlio_mpi.run import oplog_format
from dlio_mpi.data.dataset import format_spec
from dlio_mpi.formats import volumes
from datautil import load_npz, own_summary
from mpirun import run_mpi

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

VOLS = ('[{name: labels, dtype: int64, chunks: [9, 11, 11], compression: gzip, fill: 0.03}, '
        '{name: raw, dtype: uint8, chunks: [11, 11, 22], compression: gzip, fill: 0.8}]')
BASE = ["workload=default", "dataset.format=hdf5", "io.interface=hdf5_sec2",
        "dataset.num_files_train=1", "io.layout=shared", "dataset.num_samples_per_file=24",
        "dataset.volume_shape=[48,48,48]", "dataset.crop_shape=[17,17,17]",
        f"dataset.volumes={VOLS}", "reader.read_threads=0", "reader.batch_size=2"]


def test_volumes_are_written_as_asked(tmp_path):
    spec = format_spec(config.load(BASE))
    idx = formats.write_file(tmp_path / "v.h5", 0, spec)
    import h5py
    with h5py.File(tmp_path / "v.h5") as f:
        lab, raw = f["labels"], f["raw"]
        assert (lab.shape, lab.dtype, lab.chunks, lab.compression) == (
            (48, 48, 48), np.dtype("int64"), (9, 11, 11), "gzip")
        assert (raw.shape, raw.dtype, raw.chunks) == ((48, 48, 48), np.dtype("uint8"),
                                                      (11, 11, 22))
        # a chunk compresses to about its fill share
        lab_chunk = lab.id.get_chunk_info(0).size / (9 * 11 * 11 * 8)
        raw_chunk = raw.id.get_chunk_info(0).size / (11 * 11 * 22)
    assert 0.02 < lab_chunk < 0.06 and 0.75 < raw_chunk < 0.9
    assert idx.num_samples == 24 and (idx.sizes == volumes.crop_bytes(spec)).all()
    assert volumes.crop_bytes(spec) == 17 ** 3 * 9
    other = spec.replace(volumes=(spec.volumes[0][:2] + ((9, 11, 12),) + spec.volumes[0][3:],
                                  spec.volumes[1]))
    with pytest.raises(formats.FormatError, match="labels"):
        formats.index_file(tmp_path / "v.h5", other)


def test_chunks_lie_in_row_major_order(tmp_path):
    """Every chunk, edge chunks too, lies in the file after the chunk before it in row-major
    order, as in a volume written whole in order: a crop's reads meet the chunks in file order
    along the fastest dimension (with HDF5's chunk cache on during generation, partly written
    edge chunks were stored after their neighbours)."""
    import h5py
    spec = format_spec(config.load(BASE))
    formats.write_file(tmp_path / "v.h5", 0, spec)
    with h5py.File(tmp_path / "v.h5") as f:
        for d in (f["labels"], f["raw"]):
            infos = [d.id.get_chunk_info(i) for i in range(d.id.get_num_chunks())]
            grid = [tuple(o // c for o, c in zip(i.chunk_offset, d.chunks)) for i in infos]
            by_place = [g for _, g in sorted(zip([i.byte_offset for i in infos], grid))]
            assert len(grid) == np.prod([-(-48 // c) for c in d.chunks])
            assert by_place == sorted(grid), d.name


def test_crops_are_seeded_and_inside():
    spec = format_spec(config.load(BASE))
    starts = np.array([volumes.crop_start(spec, 0, k) for k in range(200)])
    assert (starts >= 0).all() and (starts <= 48 - 17).all()
    assert np.array_equal(starts[3], volumes.crop_start(spec, 0, 3))
    assert len({tuple(s) for s in starts}) > 150


def test_tiled_crops_cut_the_volume_in_row_major_order():
    """dataset.crop_placement tiled: sample k is the k-th tile (row-major), again from the
    first after the last; a partial tile at an edge is no tile."""
    spec = format_spec(config.load(BASE + ["dataset.crop_shape=[16,24,17]",
                                           "dataset.crop_placement=tiled"]))
    starts = [tuple(volumes.crop_start(spec, 0, k)) for k in range(13)]
    assert starts[:6] == [(0, 0, 0), (0, 0, 17), (0, 24, 0), (0, 24, 17), (16, 0, 0),
                          (16, 0, 17)]
    assert starts[12] == starts[0] and len(set(starts)) == 12


@pytest.mark.parametrize("overrides,words", [
    (["dataset.crop_shape=[49,17,17]"], "does not fit"),
    (["dataset.crop_shape=[17,17]"], "does not fit"),
    (["dataset.volumes=[{name: a, chunks: [9, 9]}]"], "chunks=[9, 9] does not fit"),
    (["dataset.volumes=[{name: a, chunks: [9, 9, 9], fill: 2}]"], "fill=2"),
    (["dataset.volumes=[{name: a, chunks: [9, 9, 9], colour: red}]"], "unknown key 'colour'"),
    (["dataset.volumes=[{name: a, chunks: [9, 9, 9], dtype: str}]"], "numeric type"),
    (["io.interface=mpiio"], "io.interface must be hdf5, hdf5_coll, hdf5_sec2 or hdf5_core"),
    (["reader.read_threads=2"], "reader.read_threads=0"),
    (["dataset.volume_shape=[]"], "together"),
])
def test_volume_config_errors(overrides, words):
    with pytest.raises(config.ConfigError) as e:
        config.load(BASE + overrides)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_a_run_reads_a_crop_of_every_volume_per_sample(tmp_path):
    """2 ranks share the file: each sample is one H5Dread per volume of the crop's bytes, the
    POSIX reads are libhdf5's (chunks and metadata), and bytes moved are theirs."""
    args = BASE + [f"dataset.data_folder={tmp_path}/d", f"output.folder={tmp_path}/o",
                   "io.keep_oplog=true", "train.epochs=1", "train.computation_time=0"]
    run_mpi(2, "run_cli.py", "run", *args[1:], timeout=240)
    s = own_summary(tmp_path / "o")
    assert s["steps_per_epoch"] == 6
    posix = 0
    for r in range(2):
        z = load_npz(tmp_path / "o" / "latest" / f"oplog_rank{r:05d}.npz")
        op, iface, nb = z["e0_op"], z["e0_iface"], z["e0_bytes"]
        h5 = (op == 0) & (iface == 8)
        assert h5.sum() == 12 * 2
        assert sorted(set(nb[h5].tolist())) == [17 ** 3, 17 ** 3 * 8]
        posix += int(nb[(op == 0) & (iface == 0)].sum())
    assert s["bytes_moved"] == posix > 0


def test_collective_crops_are_one_box_of_every_rank_a_call(tmp_path):
    """io.interface=hdf5_coll: the ranks read their tiles of each sample (a domain
    decomposition) in collective H5Dread calls, one box of every rank a call; each rank reads
    each of its tiles once, and the ranks' tiles together cover every sample's volume."""
    tiled = [a for a in BASE if not a.startswith(("io.interface=", "dataset.crop_shape=",
                                                  "dataset.num_samples_per_file="))]
    args = tiled + ["io.interface=hdf5_coll", "dataset.crop_shape=[1,48,24]",
                    "dataset.crop_placement=tiled", "dataset.num_samples_per_file=8",
                    "reader.sharding=round_robin", "reader.sample_shuffle=off",
                    "reader.file_shuffle=off", f"dataset.data_folder={tmp_path}/d",
                    f"output.folder={tmp_path}/o", "io.keep_oplog=true", "train.epochs=1",
                    "train.computation_time=0", "workflow.generate_data=true"]
    run_mpi(2, "run_cli.py", "run", *args[1:], timeout=240)
    s = own_summary(tmp_path / "o")
    assert s["steps_per_epoch"] == 2
    coll = oplog_format.IFACE["hdf5_coll"]
    for r in range(2):
        z = load_npz(tmp_path / "o" / "latest" / f"oplog_rank{r:05d}.npz")
        op, iface, nb = z["e0_op"], z["e0_iface"], z["e0_bytes"]
        h5 = (op == 0) & (iface == coll)
        # 2 steps of 2 crops, each crop one call a volume
        assert h5.sum() == 2 * 2 * 2
        assert sorted(nb[h5].tolist()) == [48 * 24] * 4 + [48 * 24 * 8] * 4
        assert not ((op == 0) & (iface == oplog_format.IFACE["hdf5_ind"])).any()
        # the box's first index is the call's offset in rows (raw: 48 x 48 bytes a row):
        # each rank reads a tile of each of the 4 indices, once
        raw = h5 & (nb == 48 * 24)
        assert sorted((z["e0_offset"][raw] // (48 * 48)).tolist()) == [0, 1, 2, 3]
    spec = format_spec(config.load(args))
    # round robin over the 8 tiles (4 indices of 2 tiles): rank r the tiles at 24 r
    starts = [tuple(volumes.crop_start(spec, 0, k)) for k in range(8)]
    assert starts == [(i, 0, j) for i in range(4) for j in (0, 24)]


SPLIT = ('[{name: labels, dtype: int64, chunks: [9, 11, 11], compression: gzip, fill: 0.03}, '
         '{name: raw, dtype: uint8, chunks: [11, 11, 22], compression: gzip, fill: 0.8, '
         'file: raw}]')


def test_a_volume_kept_in_a_companion_file(tmp_path):
    """dataset.volumes[i].file: the raw volume in img_..._of_1.raw.h5, the labels in the
    dataset's file; each crop read from its volume's file, the op log naming both files."""
    from dlio_mpi_analysis.characterization.characterize import characterize
    split = [a for a in BASE if not a.startswith("dataset.volumes=")] + [
        f"dataset.volumes={SPLIT}"]
    args = split + [f"dataset.data_folder={tmp_path}/d", f"output.folder={tmp_path}/o",
                    "io.keep_oplog=true", "train.epochs=1", "train.computation_time=0",
                    "workflow.generate_data=true"]
    run_mpi(2, "run_cli.py", "run", *args[1:], timeout=240)
    train = tmp_path / "d" / "train"
    assert sorted(p.name for p in train.iterdir()) == ["img_0000000_of_1.h5",
                                                       "img_0000000_of_1.raw.h5"]
    import h5py
    with h5py.File(train / "img_0000000_of_1.h5") as f:
        assert list(f) == ["labels"]
    with h5py.File(train / "img_0000000_of_1.raw.h5") as f:
        assert list(f) == ["raw"] and f["raw"].chunks == (11, 11, 22)
    spec = format_spec(config.load(split))
    assert volumes.volume_file_id(spec, 1, 0) == oplog_format.COMPANION_ID_BASE + (1 << 20)
    for r in range(2):
        z = load_npz(tmp_path / "o" / "latest" / f"oplog_rank{r:05d}.npz")
        op, iface, nb, fid = z["e0_op"], z["e0_iface"], z["e0_bytes"], z["e0_file"]
        h5 = (op == 0) & (iface == 8)
        # per sample: the labels' crop from the dataset's file, the raw crop from its own
        assert sorted(set(zip(fid[h5].tolist(), nb[h5].tolist()))) == [
            (0, 17 ** 3 * 8), (oplog_format.COMPANION_ID_BASE + (1 << 20), 17 ** 3)]
    c = characterize(tmp_path / "o")
    assert c.data_formats["hdf5"]["files"] == 2
    # a companion missing: generation makes the file again; clean removes both
    (train / "img_0000000_of_1.raw.h5").unlink()
    run_mpi(2, "run_cli.py", "generate", *args[1:], timeout=240)
    assert (train / "img_0000000_of_1.raw.h5").exists()
    run_mpi(1, "run_cli.py", "clean", *args[1:], timeout=120)
    assert not train.exists() or not any(train.iterdir())


def test_the_first_volume_stays_in_the_datasets_file():
    bad = ('[{name: a, chunks: [8, 8, 8], file: x}, {name: b, chunks: [8, 8, 8]}]')
    with pytest.raises(config.ConfigError, match="first volume"):
        config.load([a for a in BASE if not a.startswith("dataset.volumes=")]
                    + [f"dataset.volumes={bad}"])
    with pytest.raises(config.ConfigError, match="companion file"):
        config.load([a for a in BASE if not a.startswith("dataset.volumes=")]
                    + ["dataset.volumes=[{name: a, chunks: [8, 8, 8]}, "
                       "{name: b, chunks: [8, 8, 8], file: 'x/y'}]"])

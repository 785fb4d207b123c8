"""Images loaded through PIL, fitted as the jpeg and png formats (real logs in
tests/fixtures/darshan, truth.json): the DLIO benchmark's JPEG files and a loader of PNG files
of this project's own (pil_png_loader.py), each file read whole the way PIL reads it."""
import json
import os
import warnings

import pytest

import dlio_mpi_analysis as analysis
from dlio_mpi.formats import jpeg, png

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                    "darshan")
with open(os.path.join(HERE, "truth.json")) as _f:
    TRUTH = json.load(_f)


@pytest.fixture(autouse=True)
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.mark.parametrize("name, module", [("dlio_jpeg", jpeg), ("pil_png", png)])
def test_pil_loads_fit_the_image_format(name, module):
    t = TRUTH[name]
    fitted = analysis.fit(os.path.join(HERE, name + ".darshan"))
    w = fitted.workload
    assert w["dataset"]["format"] == t["format"]
    assert (w["dataset"]["num_files_train"], w["dataset"]["num_samples_per_file"]) == \
        (t["num_files"], 1)
    assert (w["reader"]["access"], w["reader"]["buffer_size"], w["reader"]["transfer_size"]) \
        == ("image", 4096, 65536)
    assert (w["reader"]["batch_size"], w["train"]["epochs"]) == (t["batch_size"], t["epochs"])
    # the pixels of the image whose file (as the format writes it) has the real files' size
    side = int(round(w["dataset"]["record_length"] ** 0.5))
    assert side * side == w["dataset"]["record_length"]
    lo, hi = t["files_bytes_min_max"]
    assert 0.99 * lo <= module.file_bytes(side) <= 1.01 * hi
    assert any("read whole as PIL reads them" in n for n in fitted.notes)


def test_png_pixels_are_the_real_ones():
    """Pillow's PNG of noise does not compress: the file's size gives the real image's pixels."""
    w = analysis.fit(os.path.join(HERE, "pil_png.darshan")).workload
    assert w["dataset"]["record_length"] == TRUTH["pil_png"]["image_pixels"]


def test_pngs_of_mixed_sizes_small_ones_read_in_their_buffer_fill(tmp_path):
    """32 PNG images of 0.9 to 36 KB read by PIL: the four smallest are held by the buffer's
    first fill, one read each; they are images among images (their names end as the others'),
    not an index beside the data, and agree with PIL's pattern (dropped before: 28 files for
    32, batch 3 for 4, 0.91)."""
    from fitted_runs import fitted_shape, replay_like
    f, w = fitted_shape("pil_png_mixed_sizes")
    assert "index_files" not in f.evidence
    assert w["reader"]["access"] == "image"
    # (one image size, the files' median, for sizes spread from 0.9 to 36 KB)
    replay_like("pil_png_mixed_sizes", tmp_path, bytes_rel=0.15)

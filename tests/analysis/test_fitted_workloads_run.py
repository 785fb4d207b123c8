"""Every fitted workload is one the emulator takes: the fit of each real log of the fixtures
(tests/fixtures/darshan, truth.json), as a workload document, passes the emulator's own
configuration checks and gives a dataset layout (its HDF5 chunks among them). A fit that writes
a workload the emulator refuses leaves its replay without a score (the DLIO benchmark's
unet3d, stacked NPZ files of sizes with a spread; h5py images and labels read together, a chunk
of the images' that was no whole number of samples)."""
import warnings

import pytest

import dlio_mpi_analysis as analysis
from dlio_mpi.config import loader as config
from dlio_mpi.data.dataset import format_spec
from dlio_mpi_analysis.errors import AnalysisWarning, FitError, LogError

from fitted_runs import TRUTH, log


@pytest.mark.parametrize("name", sorted(TRUTH))
def test_the_fitted_workload_is_one_the_emulator_takes(name):
    try:
        with warnings.catch_warnings():
            # what a log's records miss is said by other tests
            warnings.simplefilter("ignore", AnalysisWarning)
            f = analysis.fit(log(name))
    except (FitError, LogError):
        pytest.skip(f"{name}: no workload is fitted (the fit refuses it, saying why)")
    cfg = config.load(doc=f.workload, doc_source=f"the fit of {name}")
    format_spec(cfg)

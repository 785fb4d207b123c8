import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def pattern(size, seed=0):
    """Deterministic file content of size bytes."""
    return np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8)


@pytest.fixture
def datafile(tmp_path):
    """make(size, seed=0) -> (path, content) of a file written with known bytes."""
    def make(size, seed=0, name="data.bin"):
        data = pattern(size, seed)
        path = tmp_path / name
        data.tofile(path)
        return path, data
    return make

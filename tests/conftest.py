import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from datautil import pattern  # noqa: E402


@pytest.fixture
def datafile(tmp_path):
    """make(size, seed=0) -> (path, content) of a file written with known bytes."""
    def make(size, seed=0, name="data.bin"):
        data = pattern(size, seed)
        path = tmp_path / name
        data.tofile(path)
        return path, data
    return make

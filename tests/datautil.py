"""Test data shared by the engine tests."""
import numpy as np


def pattern(size, seed=0):
    """Deterministic file content of size bytes."""
    return np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8)


def load_npz(path):
    """Every array of an .npz file, the file closed."""
    with np.load(path) as z:
        return {k: z[k] for k in z.files}

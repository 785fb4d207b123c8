"""Test data shared by the engine tests."""
import numpy as np


def pattern(size, seed=0):
    """Deterministic file content of size bytes."""
    return np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8)


def load_npz(path):
    """Every array of an .npz file, the file closed."""
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def drop_dac_capabilities():
    """In a child process: drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, so that file
    permissions apply to root too."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    hdr = Header(0x20080522, 0)
    data = (Data * 2)()
    if libc.capget(ctypes.byref(hdr), data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    mask = ~((1 << 1) | (1 << 2)) & 0xFFFFFFFF
    data[0].effective &= mask
    data[0].permitted &= mask
    data[0].inheritable &= mask
    if libc.capset(ctypes.byref(hdr), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")
    for cap in (1, 2):      # and from the bounding set, or root regains them at exec
        if libc.prctl(24, cap, 0, 0, 0) != 0:     # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def run_summary(out):
    """The summary.json of the latest run in output folder out, whole (the DLIO layout)."""
    import json
    return json.loads((out / "latest" / "summary.json").read_text())


def own_summary(out):
    """This project's own figures in the latest run's summary.json (its dlio_mpi section)."""
    return run_summary(out)["dlio_mpi"]

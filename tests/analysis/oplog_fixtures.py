"""Run directories written by hand: summary.json and oplog_rankNNNNN.npz files holding chosen
calls, for exact tests of the op-log characterization (no MPI)."""

import json

import numpy as np

OPS = {"read": 0, "write": 1, "open": 2, "close": 3, "fsync": 4, "fdatasync": 5, "seek": 6,
       "stat": 7, "mmap": 8, "view": 9}
IFACES = {"posix": 0, "posix_direct": 1, "stdio": 2, "mmap": 3, "mpiio_ind": 4,
          "mpiio_coll": 5, "hdf5_ind": 6, "hdf5_coll": 7, "hdf5_sec2": 8}
ORIGIN = 5_000_000_000  # ns on CLOCK_MONOTONIC


def call(op, start_ns, dur_ns, file=0, offset=-1, nbytes=0, iface="posix"):
    return (start_ns, dur_ns, offset, nbytes, file, OPS[op], IFACES[iface])


def write_run(directory, calls_by_rank, *, files=2, layout="multi", fmt="raw",
              origins=None, hosts=1, bytes_moved=None, phase_s=0.0):
    """A run directory: calls_by_rank maps rank -> list of phases, each a list of call()
    tuples (in log order). bytes_moved defaults to the bytes of all reads."""
    directory.mkdir(parents=True, exist_ok=True)
    ranks = len(calls_by_rank)
    moved = 0
    for rank, phases in calls_by_rank.items():
        arrays = {}
        for i, calls in enumerate(phases):
            table = np.array(calls, dtype=np.int64).reshape(-1, 7)
            arrays.update({
                f"e{i}_start": table[:, 0], f"e{i}_dur": table[:, 1],
                f"e{i}_offset": table[:, 2], f"e{i}_bytes": table[:, 3],
                f"e{i}_file": table[:, 4].astype(np.int32),
                f"e{i}_op": table[:, 5].astype(np.uint8),
                f"e{i}_iface": table[:, 6].astype(np.uint8)})
            moved += int(table[table[:, 5] == 0, 3].sum())
        origin = (origins or {}).get(rank, ORIGIN)
        np.savez(directory / f"oplog_rank{rank:05d}.npz",
                 phases=np.array([f"train{i}" for i in range(len(phases))]),
                 origin_mono_ns=np.int64(origin), **arrays)
    summary = {
        "config": {"dataset": {"data_folder": "/data", "format": fmt, "num_files_train": files,
                               "num_files_eval": 0, "file_prefix": "img",
                               "num_subfolders_train": 0},
                   "io": {"layout": layout}},
        "ranks": ranks, "hosts": hosts, "workload": "handmade", "started": 1.7e9,
        "bytes_moved": moved if bytes_moved is None else bytes_moved,
        "load": None, "evaluations": [],
        "epochs": [{"duration_s": phase_s}],
    }
    (directory / "summary.json").write_text(json.dumps(summary))
    return directory

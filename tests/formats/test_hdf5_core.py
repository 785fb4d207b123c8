"""io.interface=hdf5_core (libhdf5's core driver, h5py's driver='core'): each rank reads the
shared file whole at open, in one read from offset 0, and its samples' H5Dread calls come from
memory: every sample once an epoch over the ranks, no POSIX read after the open."""
import os

import numpy as np
import pytest

from datautil import load_npz, own_summary
from mpirun import run_mpi
from dlio_mpi.run import oplog_format

pytestmark = pytest.mark.mpi      # its tests launch ranks under mpiexec

ROW = 8192


def test_each_rank_reads_the_file_whole_once_and_its_samples_from_memory(tmp_path):
    args = ["dataset.format=hdf5", "io.interface=hdf5_core", "io.layout=shared",
            "dataset.num_files_train=1", "dataset.num_samples_per_file=48",
            f"dataset.record_length={ROW}", "reader.batch_size=1", "reader.read_threads=0",
            "train.epochs=2", "train.computation_time=0", "reader.sample_shuffle=seed",
            f"dataset.data_folder={tmp_path}/d", f"output.folder={tmp_path}/o",
            "io.keep_oplog=true", "workflow.generate_data=true"]
    run_mpi(2, "run_cli.py", "run", *args, timeout=240)
    s = own_summary(tmp_path / "o")
    assert s["steps_per_epoch"] == 24
    (path,) = [p for p in (tmp_path / "d" / "train").iterdir() if p.suffix == ".h5"]
    size = os.path.getsize(path)
    posix, h5 = oplog_format.IFACE["posix"], oplog_format.IFACE["hdf5_sec2"]
    seen = {0: [], 1: []}
    for r in range(2):
        z = load_npz(tmp_path / "o" / "latest" / f"oplog_rank{r:05d}.npz")
        whole = []
        for e in (0, 1):
            op, iface, nb, off = (z[f"e{e}_{k}"] for k in ("op", "iface", "bytes", "offset"))
            reads = op == 0
            whole += list(zip(off[reads & (iface == posix)].tolist(),
                              nb[reads & (iface == posix)].tolist()))
            assert set(nb[reads & (iface == h5)].tolist()) == {ROW}
            seen[e] += (off[reads & (iface == h5)] // ROW).tolist()
        # the one read of the file: at the open, before the first epoch's samples
        assert whole == [(0, size)]
    for e in (0, 1):
        assert sorted(seen[e]) == list(range(48))
    assert s["bytes_moved"] == 2 * size

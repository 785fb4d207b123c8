"""Under mpiexec: all ranks write one shared HDF5 file (contiguous, chunked with gzip, and with
fewer chunks than ranks), every rank gets the same index, and rank 0 checks every row."""
import os
import sys

import h5py
import numpy as np
from mpi4py import MPI

from dlio_mpi import formats

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
out_dir = sys.argv[1]
cases = [
    dict(samples_per_file=10, record_length=1000, dtype="float32"),
    dict(samples_per_file=11, record_length=700, compression="gzip", chunk_rows=3),
    dict(samples_per_file=23, record_length=500, record_length_stdev=100, block_bytes=1200),
    dict(samples_per_file=5, record_length=64, chunked=True, chunk_rows=8, dtype="int16"),
]
for k, kw in enumerate(cases):
    block = {"block_bytes": kw.pop("block_bytes")} if "block_bytes" in kw else {}
    spec = formats.FormatSpec(format="hdf5", seed=7, **kw)
    path = os.path.join(out_dir, f"shared_{k}.h5")
    idx = formats.write_file(path, 4, spec, comm=comm, **block)
    everyone = comm.allgather(idx)
    assert all(i == everyone[0] for i in everyone), f"case {k}: ranks got different indexes"
    if rank == 0:
        assert idx == formats.index_file(path, spec, 4), f"case {k}: index differs"
        with h5py.File(path, "r") as f:
            d = f[spec.dataset]
            assert d.shape[0] == spec.samples_per_file
            for row in range(spec.samples_per_file):
                want = formats.sample_value(spec, 4, row)
                assert d[row].tobytes() == want.tobytes(), f"case {k}: row {row} differs"
    comm.Barrier()
print(f"rank {rank}: ok", flush=True)

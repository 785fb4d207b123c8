# cython: language_level=3, boundscheck=False, wraparound=False, embedsignature=True
"""Thin wrapper of the native engines in csrc/: every blocking call runs without the GIL.

Buffers are any writable contiguous buffer (numpy arrays, bytearray); offsets and lengths are
converted to contiguous int64 arrays. Errors raise EngineError (an OSError) whose message names
the rank, the file and the offset.

The module is made of included parts: errors (the C codes' exceptions and CHK), buffers
(argument conversion, aligned memory, small C helpers), the op log, the handle base class, one
part per engine, read-ahead, and the node barrier.
"""
from libc.stdint cimport int64_t, int32_t, uint32_t, uint64_t, uint8_t
from libc.stdlib cimport malloc, free, realloc
from libc.string cimport memset
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_WRITABLE, PyBUF_SIMPLE
from cpython.ref cimport Py_INCREF
from mpi4py cimport MPI
from mpi4py.libmpi cimport MPI_Comm, MPI_COMM_SELF, MPI_Initialized, MPI_Finalized, \
    MPI_Comm_rank, MPI_COMM_WORLD

cimport numpy as cnp
import errno
import numpy as np
import os

from dlio_mpi.engines._dm cimport *

cnp.import_array()

include "_errors.pxi"
include "_buffers.pxi"
include "_oplog.pxi"
include "_handle.pxi"
include "_posix.pxi"
include "_uring.pxi"
include "_stdio.pxi"
include "_mpiio.pxi"
include "_hdf5.pxi"
include "_readahead.pxi"
include "_barrier.pxi"
include "_steploop.pxi"

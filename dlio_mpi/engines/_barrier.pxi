# NodeBarrier, included by _engines.pyx: a barrier of one node's processes waited on with futexes.

from cpython.exc cimport PyErr_CheckSignals


cdef class NodeBarrier:
    """A barrier of the n processes of one node over shared memory (csrc/run/node_barrier.c):
    `mem` is a writable buffer of at least 8 bytes, aligned to 4, that every process maps (an
    MPI shared-memory window) and that was zeroed before any process used it. A process that
    arrives early spins at most `spin_s` seconds (for processes with a core each, whose steps
    end together), then sleeps in the kernel (no CPU) until the last one wakes them all. The
    waiters wake every `check_s` seconds to run Python's signal handlers."""
    cdef dm_nbar *b
    cdef uint32_t n
    cdef object mem
    cdef readonly double check_s, spin_s

    def __cinit__(self, mem, int n, double spin_s=0.0, double check_s=0.1):
        cdef Py_buffer view
        if n < 1:
            raise ValueError(f"a barrier of {n} processes")
        PyObject_GetBuffer(mem, &view, PyBUF_WRITABLE)
        try:
            if <size_t>view.len < sizeof(dm_nbar) or (<size_t>view.buf) % 4:
                raise ValueError(f"a barrier needs {sizeof(dm_nbar)} bytes aligned to 4 "
                                 f"({view.len} bytes at {<size_t>view.buf:#x})")
            self.b = <dm_nbar *>view.buf
        finally:
            PyBuffer_Release(&view)
        self.mem = mem
        self.n = n
        self.check_s = check_s
        self.spin_s = spin_s

    def wait(self):
        """Arrive, and return once all n processes have arrived in this round."""
        cdef int last = 0, rc
        cdef uint32_t rnd
        cdef int64_t ns = <int64_t>(self.check_s * 1e9)
        cdef int64_t spin = <int64_t>(self.spin_s * 1e9)
        with nogil:
            rnd = dm_nbar_arrive(self.b, self.n, &last)
        if last:
            return
        while True:
            with nogil:
                rc = dm_nbar_wait(self.b, rnd, spin, ns)
            spin = 0
            if rc == 0:
                return
            PyErr_CheckSignals()

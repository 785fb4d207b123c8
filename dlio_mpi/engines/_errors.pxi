# Errors, included by _engines.pyx: one table from the C engines' error codes to exceptions,
# and CHK, the check every C call's return code goes through.


class EngineError(OSError):
    """An I/O engine failure; str() is one line naming rank, operation, file and offset, and
    errno is the system's error number where there is one (EIO for MPI and HDF5 failures).
    rank: the rank the message names (-1 where it names none)."""
    rank = -1

    def __str__(self):
        return self.strerror or super().__str__()


class AlignmentError(EngineError):
    """An O_DIRECT request whose offset, length, transfer size or buffer is not aligned."""


class ShortReadError(EngineError):
    """Fewer bytes than asked for, where the request had to be read whole."""


# dm.h's own codes (above any errno): the exception raised and the errno it carries; any other
# code is the system's errno, raised as an EngineError
_ERRORS = {
    DM_EOF: (ShortReadError, errno.ENODATA),
    DM_EALIGN: (AlignmentError, errno.EINVAL),
    DM_EMPI: (EngineError, errno.EIO),
    DM_EHDF5: (EngineError, errno.EIO),
    DM_EARG: (EngineError, errno.EIO),
    DM_ENOMEM: (EngineError, errno.EIO),
}


cdef int _rank() noexcept nogil:
    cdef int init = 0, fin = 0, r = -1
    MPI_Initialized(&init)
    MPI_Finalized(&fin)
    if init and not fin:
        MPI_Comm_rank(MPI_COMM_WORLD, &r)
    return r


cdef _error(cls, int code, msg):
    """cls(code, "rank N: msg"), naming this rank (where MPI runs) in its text and its rank."""
    r = _rank()
    error = cls(code, (f"rank {r}: " if r >= 0 else "") + msg)
    error.rank = r
    return error


cdef raise_err(dm_err *e):
    cls, code = _ERRORS.get(e.code, (EngineError, e.code))
    raise _error(cls, code, e.msg.decode("utf-8", "replace"))


def end_of_file(path, detail):
    """The ShortReadError of a read that found the end of path too soon, detail saying what
    was wanted where: the message the engines give for it, naming this rank."""
    return _error(ShortReadError, errno.ENODATA, f"unexpected end of file in {path}: {detail}")


cdef inline int CHK(int rc, dm_err *e) except -1 nogil:
    """Raise the error of a C engine call that returned non-zero (from inside nogil too)."""
    if rc == 0:
        return 0
    with gil:
        raise_err(e)
    return -1

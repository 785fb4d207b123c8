"""Every file the emulator and its analysis write is created here, so that an entry planted in a
shared folder (a symbolic link at a temporary or final name) can never redirect a write to the
link's target.

A new file is created with O_CREAT|O_EXCL|O_NOFOLLOW after whatever entry holds its name (a
file a crashed run left, or a planted link) is unlinked: the entry itself, never what a link
points to. If the exclusive create still fails (an entry planted again in between), the error
is one line naming the path. A file meant to appear whole is written under a temporary name in
its own folder and renamed into place; rename replaces a link at the final name, never its
target. Writing that fails (a full disk) removes the temporary file, leaves the final name as
it was, and raises an OSError that names the final file.

No MPI here: analysis uses this module without it; a caller that creates one file from several
ranks passes its communicator, whose rank 0 removes the stale entry."""
import contextlib
import errno
import os

# the flags of every file created for writing: a new file, never through a link at its name
CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def remove_entry(path):
    """Unlink the directory entry at path (a link itself, never its target); nothing there is
    fine. A directory at path is an OSError naming it."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _refused(path, e):
    """The one-line error of an exclusive create that failed after the stale entry went."""
    if isinstance(e, FileExistsError):
        return OSError(errno.EEXIST, "cannot be created: an entry appeared at its name after "
                                     "the stale one was removed (planted?); not written", path)
    return OSError(e.errno, e.strerror, path)


def create_fd(path, perms=0o644, *, replace_stale=True):
    """A descriptor open for writing on a new, empty file at path: a stale entry unlinked
    first, or with replace_stale=False, FileExistsError when any entry holds the name (a
    lock)."""
    if not replace_stale:
        return os.open(path, CREATE_FLAGS, perms)
    remove_entry(path)
    try:
        return os.open(path, CREATE_FLAGS, perms)
    except OSError as e:
        raise _refused(path, e) from None


def create(path, mode="wb", perms=0o644):
    """A new file at path, open for writing ("w" text or "wb" binary), a stale entry unlinked
    first. The caller renames it into place (see replaced() for the whole sequence)."""
    if mode not in ("w", "wb"):
        raise ValueError(f"create: mode {mode!r} is not 'w' or 'wb'")
    fd = create_fd(path, perms)
    try:
        return os.fdopen(fd, mode)
    except BaseException:
        # a signal's exception raised inside fdopen after its file object took the
        # descriptor: that object closed it already, and a second close's EBADF would
        # replace the exception being raised
        try:
            os.close(fd)
        except OSError:
            pass
        raise


def remove_stale(path, comm=None):
    """Before several ranks create one file at path exclusively (MPI_MODE_EXCL, H5F_ACC_EXCL):
    rank 0 of comm unlinks the stale entry, and every rank returns once it is gone (an
    OSError naming path on every rank when it cannot be). Without comm, this process does."""
    if comm is None:
        remove_entry(path)
        return
    err = None
    if comm.Get_rank() == 0:
        try:
            remove_entry(path)
        except OSError as e:
            err = (e.errno, e.strerror)
    err = comm.bcast(err, root=0)
    if err:
        raise OSError(err[0], err[1], path)


def create_hdf5(path, comm=None, **kw):
    """A new HDF5 file at path through h5py (opened with H5F_ACC_EXCL after the stale entry is
    removed; collectively over comm with the mpio driver when comm is given)."""
    import h5py       # imported when HDF5 is used: it costs start-up time

    remove_stale(path, comm)
    if comm is not None:
        kw.update(driver="mpio", comm=comm)
    try:
        return h5py.File(path, "x", **kw)
    except FileExistsError as e:
        raise _refused(path, e) from None


def _named(e, path):
    """e as an OSError that names path (the file being written) when it names no file."""
    if isinstance(e, OSError) and not e.filename:
        return OSError(e.errno, e.strerror or str(e), path)
    return e


@contextlib.contextmanager
def replaced(path, mode="w", *, fsync=False, temp=None):
    """Write a file that appears at path whole or not at all: yields a new file open at the
    temporary name temp (default path + ".part", in path's folder) and, when the block ends
    without an error, (fsyncs and) renames it to path. On an error the temporary file is
    removed, path is untouched, and an OSError without a file name gets path's."""
    temp = temp or f"{path}.part"
    if os.path.dirname(os.path.abspath(temp)) != os.path.dirname(os.path.abspath(path)):
        raise ValueError(f"temporary name {temp} is not in the folder of {path}")
    f = create(temp, "wb" if "b" in mode else "w")
    try:
        with f:
            yield f
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        os.replace(temp, path)
    except BaseException as e:
        with contextlib.suppress(OSError):
            remove_entry(temp)
        named = _named(e, path)
        if named is e:
            raise
        raise named from None


def write_whole(path, data, *, fsync=False, temp=None):
    """data (str or bytes) at path, whole or not at all (see replaced())."""
    with replaced(path, "wb" if isinstance(data, (bytes, bytearray, memoryview)) else "w",
                  fsync=fsync, temp=temp) as f:
        f.write(data)


def replace_link(path, target):
    """A symbolic link at path pointing to target (a name relative to path's folder), made
    under a temporary name and renamed into place: whatever entry held path (a link, a file)
    is replaced, never followed."""
    temp = f"{path}.part"
    remove_entry(temp)
    try:
        os.symlink(target, temp)
    except FileExistsError as e:
        raise _refused(temp, e) from None
    try:
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            remove_entry(temp)
        raise

"""One run at a time in a checkpoint folder: two runs sharing one would replace each other's
checkpoints (same names) without a word. Rank 0 takes the folder's lock when the run starts,
before any I/O, and gives it back when the run ends, whatever the end (a lock left by a run
that died is taken over by the next). A signal that ends the run gives it back even while
rank 0 is inside a blocking call (the status guard, in C): the next job may run on other hosts,
which cannot tell that the process a left lock names is gone."""
import json
import os

from dlio_mpi.files import folder_lock

LOCK = ".dlio_mpi_checkpoints.lock"

# this process's lock (path, record), and whether taking it made the folder (the record of the
# checkpoints written says so, for clean)
held = None
made = False


def take(folder):
    """Rank 0: make the folder if needed and lock it; FolderInUse names the run holding it."""
    global held, made
    fresh = not os.path.isdir(folder)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, LOCK)
    rec = folder_lock.take(path, lambda who: (
        f"checkpoint folder {folder} is in use by another run ({who}); if that run is gone, "
        f"remove {path}"))
    held, made = (path, rec), made or fresh
    from dlio_mpi import engines      # MPI-free imports of this module stay MPI-free
    engines.status_guard_lock(path, json.dumps(rec))


def release():
    global held
    if held is not None:
        from dlio_mpi import engines
        engines.status_guard_lock("", "")
        folder_lock.release(*held)
        held = None

"""What each process of a set of per-process Darshan logs was to its job: a rank of its own, a
data loader's worker (forked or spawned) that reads for a rank, a helper of Python's
multiprocessing, or none of the job's processes (a launcher's helper).

Darshan in non-MPI mode writes one log per process. A training job without MPI then leaves, per
rank, the main process's log, and one log per data-loader worker it started in each epoch; with
the "spawn" start method (PyTorch's DataLoader where fork is unsafe) also one of multiprocessing's
resource tracker. Two things tell them apart:

- Fork parentage, from the log names: Darshan names a log ``..._id<job id>-<pid>_...`` and a
  forked child keeps its parent's job id, which is then another log's pid.
- The command lines, when the job id is a scheduler's (every log of the job shares it) or the
  workers were spawned (a spawned process is a new program, with a job id of its own):
  multiprocessing starts a spawned worker as ``python -c "from multiprocessing.spawn import
  spawn_main; spawn_main(tracker_fd=N, pipe_handle=M)" --multiprocessing-fork`` and its resource
  tracker as ``python -c "from multiprocessing.resource_tracker import main;main(N)"``.

A set without workers (a one-process job, or plain processes started as ranks) may hold the log
of a command the program ran (Python's platform module runs ``uname -p``): a process of another
program than those that did I/O, with no I/O beyond its standard streams, is a helper, not a
rank. A program is its command's first word, and for a Python interpreter the script or module
it runs: torchrun, itself a Python program that starts each rank as a new Python program and
does no I/O of its own, is a helper too.

Which main process spawned which worker is not in the logs. A spawned worker runs its parent's
interpreter and lives within its parent's lifetime; among the main processes alive when it
started, it is given to the one with the fewest of its workers alive then (a data loader starts
the same number of workers on every rank), and among those, to the one whose earlier workers
read the most of the files it reads (a rank's shard, when the sampler keeps it from epoch to
epoch).
"""

import os
import re
from dataclasses import dataclass

from dlio_mpi_analysis.characterization.file_roles import (is_stream, moved_bytes,
                                                           mpi_library_file)

MAIN, FORKED, SPAWNED, TRACKER, HELPER = (
    "main", "forked worker", "spawned worker", "resource tracker", "helper")
WORKER_ROLES = (FORKED, SPAWNED)
SPAWNED_EXE = re.compile(r"multiprocessing\.spawn import spawn_main.*--multiprocessing-fork")
TRACKER_EXE = re.compile(r"multiprocessing\.(resource_tracker|forkserver) import main")
LOG_NAME_IDS = re.compile(r"_id(\d+)-(\d+)_")
# how far (s) a spawned process's log may start before its parent's or end after it: a log's
# times are the runtime's, taken a little after the process starts and before it ends
SPAN_SLACK_S = 1.0


@dataclass(frozen=True)
class ProcessRoles:
    """Per log of a set (in the set's order): its role, the log whose rank it takes (None for
    a main process or a helper), and whether it is one of the job's processes."""

    role: tuple
    parent: tuple
    kept: tuple

    def counts(self):
        """Role -> number of processes of the job in it (helpers included), roles present only."""
        out = {}
        for role in (MAIN, FORKED, SPAWNED, TRACKER, HELPER):
            n = sum(1 for r in self.role if r == role)
            if n:
                out[role] = n
        return out


def exe_role(exe):
    """The role a command line names: SPAWNED, TRACKER, or None (any other program)."""
    if SPAWNED_EXE.search(exe or ""):
        return SPAWNED
    if TRACKER_EXE.search(exe or ""):
        return TRACKER
    return None


def fork_parents(logs):
    """For each log, the index of the log of the process it was forked from, or None."""
    ids = []
    for log in logs:
        m = LOG_NAME_IDS.search(os.path.basename(log.path)) if log.nprocs == 1 else None
        ids.append((int(m.group(1)), int(m.group(2))) if m else None)
    by_pid = {pid: i for i, v in enumerate(ids) if v for job, pid in [v] if job == pid}
    return [by_pid.get(v[0]) if v and v[0] != v[1] else None for v in ids]


def _has_io(log):
    """Whether the process moved bytes to or from a file other than its standard streams and
    the MPI library's own files (a command a program runs, such as the ``uname -p`` Python's
    platform module starts, writes its answer to its stdout, a pipe: no I/O of the job; Open
    MPI's ``orted``, which MPI_Init starts beside a process run without mpiexec, makes its
    session files and opens the hardware's files without reading them)."""
    names = getattr(log, "names", None) or {}
    moved = moved_bytes(names, log.records)
    files = set(moved)
    return any(sum(rw) > 0 and not is_stream(name) and not mpi_library_file(name, files)
               for name, rw in moved.items())


def _data_like_io(log):
    """Whether the process moved bytes to or from a file of a data role (data or checkpoint,
    file_roles of its own log: no code, library, configuration, its program's script or
    Python's tempfile probe; a launcher such as torchrun reads its modules only)."""
    from dlio_mpi_analysis.characterization.file_roles import (DATA_IO, file_roles,
                                                               program_files)

    names = getattr(log, "names", None) or {}
    roles = file_roles(names, log.records, program_files(log.exe))
    moved = moved_bytes(names, log.records)
    return any(roles.get(int(i)) in DATA_IO and sum(moved.get(names.get(int(i), ""), (0, 0)))
               for i in roles)


def _interpreter(exe):
    words = (exe or "").split()
    return words[0] if words else ""


def _program(exe):
    """What a command line runs: its first word, and for a Python interpreter the script or
    module it runs (its options skipped), so that a launcher in Python (torchrun, which starts
    its ranks as new Python programs) is another program than its ranks."""
    words = (exe or "").split()
    if not words:
        return ""
    if not os.path.basename(words[0]).startswith("python"):
        return words[0]
    k = 1
    while k < len(words) and words[k].startswith("-"):
        if words[k] in ("-c", "-m"):
            return " ".join(words[:k + 2])
        k += 2 if words[k] in ("-W", "-X", "-Q") else 1
    return " ".join(words[:1] + words[k:k + 1])


def _files(log):
    return {int(i) for f in log.records.values() if "id" in f for i in f["id"]}


def _span(log):
    return log.start_time, log.start_time + log.run_time


def roles_of(logs):
    """The :class:`ProcessRoles` of a set of logs (see the module docstring)."""
    parents = fork_parents(logs)
    role = [exe_role(log.exe) if log.nprocs == 1 else None for log in logs]
    role = [FORKED if parents[i] is not None and role[i] is None else role[i]
            for i in range(len(logs))]
    spawned = [i for i, r in enumerate(role) if r == SPAWNED]
    interpreters = {_interpreter(logs[i].exe) for i in spawned}
    fork_parent = {p for p in parents if p is not None}
    workers_present = bool(spawned) or bool(fork_parent)
    # the programs of the processes that did I/O beyond their standard streams, and of
    # those that forked workers
    programs = {_program(log.exe) for log in logs if _has_io(log)}
    parent_programs = {_program(logs[p].exe) for p in fork_parent}
    # the programs of the processes (no workers) that read or wrote data or checkpoints
    data_programs = {_program(log.exe) for i, log in enumerate(logs)
                     if role[i] is None and _data_like_io(log)}
    kept = []
    for i, log in enumerate(logs):
        if role[i] is None:
            # with workers in the set, a main process is a fork parent, a process that did
            # I/O beyond its standard streams, or one running the workers' interpreter; any
            # other log is a launcher's helper (orted, a shell command the program ran).
            # Without workers, a process of another program than those that did I/O, with
            # none itself, is a helper too (the `uname -p` Python's platform module runs: a
            # one-process job's set is then that process and its helper, not two ranks)
            # A process of another program than the ones that forked the workers or moved
            # data, that touched no data-like file itself, is a launcher (torchrun, starting
            # the ranks as new programs, reads its modules and configuration only)
            others = parent_programs | data_programs
            launcher = bool(others) and _program(log.exe) not in others \
                and i not in fork_parent and not _data_like_io(log)
            main = log.nprocs > 1 or i in fork_parent or not launcher and (
                _has_io(log) or _interpreter(log.exe) in interpreters
                or (not workers_present and (not programs or _program(log.exe) in programs)))
            role[i] = MAIN if main else HELPER
        kept.append(role[i] in (MAIN, FORKED, SPAWNED) or (role[i] == TRACKER and _has_io(log)))
    parent = list(parents)
    mains = [i for i, r in enumerate(role) if r == MAIN and logs[i].nprocs == 1]
    for kind in (SPAWNED, TRACKER):
        _attach(logs, [i for i, r in enumerate(role) if r == kind], mains, parent,
                outlives=kind == TRACKER)
    for i in range(len(logs)):
        if role[i] == SPAWNED and parent[i] is None:
            role[i] = MAIN          # a worker of a process without a main is a rank itself
        elif role[i] == TRACKER and parent[i] is None:
            # a tracker no main process started (its reads are Python's modules): no rank
            role[i], kept[i] = HELPER, False
    return ProcessRoles(role=tuple(role), parent=tuple(parent), kept=tuple(kept))


def _attach(logs, children, mains, parent, outlives=False):
    """Give each of ``children`` (spawned processes of one kind) a main process: one alive when
    it started (and, unless ``outlives``, until it ended: a resource tracker ends after its
    main process, cleaning up what that left), with the fewest of these children alive then,
    then the most files in common with its earlier children, then the first."""
    given = {m: [] for m in mains}
    for c in sorted(children, key=lambda i: logs[i].start_time):
        start, end = _span(logs[c])
        alive = [m for m in mains if _span(logs[m])[0] - SPAN_SLACK_S <= start
                 and (outlives and start <= _span(logs[m])[1]
                      or end <= _span(logs[m])[1] + SPAN_SLACK_S)]
        if not alive:
            continue
        files = _files(logs[c])

        def preference(m):
            busy = sum(1 for k in given[m] if _span(logs[k])[1] > start)
            shared = len(files & set().union(*(_files(logs[k]) for k in given[m])))
            return busy, -shared, mains.index(m)

        chosen = min(alive, key=preference)
        given[chosen].append(c)
        parent[c] = chosen

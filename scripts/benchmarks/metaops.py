"""File-system metadata system calls of one rank, from `strace -f -ttt` output, up to a moment
(the rank's first batch), sorted by what they touch.

    wrap = metaops.strace_wrap(strace, out_dir)   # put before the rank's command under mpiexec
    calls = metaops.read(path, until=t)           # [(syscall, path or None)]
    kinds = metaops.classify(calls, project=[data_dir, out_dir])
"""
import os
import re
import sys

# calls that ask the file system about names rather than move data
META = ("open", "openat", "openat2", "creat", "stat", "lstat", "fstat", "newfstatat", "statx",
        "access", "faccessat", "faccessat2", "getdents64", "readlink", "readlinkat", "mkdir",
        "mkdirat", "unlink", "unlinkat", "rename", "renameat", "renameat2", "statfs", "fstatfs")
KINDS = ("project", "python", "libraries", "descriptor", "mpi_session", "proc_sys_dev")
# kinds that stay on the node whatever the file systems are: the MPI library's shared-memory
# and session files (/dev/shm, its /tmp session directory), and /proc, /sys, /dev
NODE_LOCAL = ("mpi_session", "proc_sys_dev")

_LINE = re.compile(r"^(?:\d+\s+)?(\d+\.\d+)\s+(\w+)\((.*)$")
_PATH = re.compile(r'"((?:[^"\\]|\\.)*)"')


def strace_wrap(strace, out_dir):
    """A command prefix that runs one rank under strace, writing <out_dir>/rank.<rank>."""
    rank_var = "${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${SLURM_PROCID:-0}}}"
    return ["sh", "-c", f'exec {strace} -f --seccomp-bpf -qq -ttt -e trace={",".join(META)} '
                        f'-o {out_dir}/rank.{rank_var} "$@"', "sh"]


def read(path, until=None, args=False):
    """The metadata calls in one strace output file, up to time `until` (seconds since the
    epoch) if given: a list of (syscall, path), path None for a call on a descriptor, or of
    (syscall, path, the call's arguments as strace wrote them) with args=True."""
    calls = []
    with open(path, errors="replace") as f:
        for line in f:
            m = _LINE.match(line)
            if not m or m.group(2) not in META:
                continue
            if until is not None and float(m.group(1)) > until:
                continue
            p = _PATH.search(m.group(3))
            call = (m.group(2), p.group(1) if p and p.group(1) else None)
            calls.append(call + (m.group(3),) if args else call)
    return calls


def classify(calls, project):
    """Counts per kind: `project` (under one of the given data/output directories), `python`
    (the interpreter's and the project's modules), `libraries` (other libraries, the MPI
    library's components among them, and /etc), `descriptor` (fstat and friends on an open
    file, or a name relative to one), `mpi_session` (the MPI library's shared-memory segments
    and session directory), `proc_sys_dev` (/proc, /sys, /dev but /dev/shm)."""
    project = tuple(os.path.abspath(p).rstrip("/") + "/" for p in project)
    pyroots = tuple({os.path.abspath(p).rstrip("/") + "/" for p in
                     (sys.prefix, sys.base_prefix, sys.exec_prefix,
                      os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))})
    counts = dict.fromkeys(KINDS, 0)
    for _, p, *_ in calls:
        if p is None or not p.startswith("/"):
            kind = "descriptor"
        elif (p.rstrip("/") + "/").startswith(project):
            kind = "project"
        elif p.startswith("/dev/shm") or re.match(r"/tmp/(ompi|openmpi|pmix|prte)", p):
            kind = "mpi_session"
        elif p.startswith(("/proc", "/sys", "/dev")):
            kind = "proc_sys_dev"
        elif p.startswith(pyroots):
            kind = "python"
        else:
            kind = "libraries"
        counts[kind] += 1
    return counts


def on_file_systems(counts):
    """The calls of a classify() result that can reach a file system (all but NODE_LOCAL)."""
    return sum(v for k, v in counts.items() if k not in NODE_LOCAL)

"""The check, before any I/O of a run, that the ranks of each host fit in the memory the host
(and the cgroup the ranks run in) has available, with the buffers dlio_mpi.config.memory_budget
estimates: over io.memory_limit_fraction of it, every rank stops with one ConfigError line
naming the host, the keys that size the largest buffers, and the numbers."""
import os

from dlio_mpi.config.errors import ConfigError
from dlio_mpi.config.memory_budget import rank_need
from dlio_mpi.display import units


def _read_int(path):
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def cgroup_room():
    """(bytes this process's cgroup may still take, "memory.max=...") for the tightest limit
    of its cgroup and their parents (cgroup v2; v1's memory.limit_in_bytes), or None."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    best = None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            top, limit_name, used_name = "/sys/fs/cgroup", "memory.max", "memory.current"
        elif "memory" in parts[1].split(","):
            top, limit_name, used_name = ("/sys/fs/cgroup/memory", "memory.limit_in_bytes",
                                          "memory.usage_in_bytes")
        else:
            continue
        rel = parts[2].strip("/")
        while True:
            where = os.path.join(top, rel) if rel else top
            limit = _read_int(os.path.join(where, limit_name))
            used = _read_int(os.path.join(where, used_name))
            if limit is not None and used is not None and limit < 1 << 60:
                room = max(0, limit - used)
                if best is None or room < best[0]:
                    best = (room, f"{where}/{limit_name}={limit}, {used_name}={used}")
            if not rel:
                break
            rel = os.path.dirname(rel)
    return best


def host_room():
    """(bytes available to this host's ranks, how that is known): MemAvailable, or the
    cgroup's room where it is less; (None, ...) when neither is known."""
    from dlio_mpi.run import sysinfo

    avail = sysinfo.available_memory_bytes()
    room, text = (avail, f"MemAvailable {units.size(avail)}") if avail else (None, "")
    group = cgroup_room()
    if group is not None:
        text += f"{'; ' if text else ''}cgroup room {units.size(group[0])} ({group[1]})"
        if room is None or group[0] < room:
            room = group[0]
    return room, text


def refusal(cfg, needs_by_rank, who, phase, needs, room, room_text, host):
    """The one line of a host whose ranks (needs_by_rank: each one's bytes) need more than
    they may take, else None; who is the neediest rank, whose buffers (needs) it names."""
    fraction = cfg.io.memory_limit_fraction
    if not fraction or room is None:
        return None
    allowed = int(room * fraction)
    total, ranks = sum(needs_by_rank), len(needs_by_rank)
    if total <= allowed:
        return None
    most = max(needs_by_rank)
    top = sorted(needs, key=lambda n: -n.bytes)[:3]
    parts = "; ".join(f"{n.what} {units.size(n.bytes)}: {n.keys}" for n in top)
    each = "per rank" if most * ranks == total else f"on rank {who} (the most of this host)"
    return (f"not enough memory on host {host}: {phase} needs {units.size(most)} {each} "
            f"({parts}); {ranks} rank{'s' if ranks > 1 else ''} on this host need "
            f"{units.size(total)}, more than io.memory_limit_fraction={fraction} of the "
            f"{units.size(room)} available ({room_text}): {units.size(allowed)}")


def check(cfg, comm, generating=False):
    """Collective, before any I/O of a run: a ConfigError on every rank when the ranks of any
    host would together hold more than io.memory_limit_fraction of the memory available there
    (0: not checked). generating: the dataset is generated first."""
    import socket

    from mpi4py import MPI

    if not cfg.io.memory_limit_fraction:
        return
    rank = comm.Get_rank()
    need, phase, needs = rank_need(cfg, comm.Get_size(), rank, generating)
    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        on_host = local.allgather((need, rank))
    finally:
        local.Free()
    line = None
    if max(on_host)[1] == rank:     # the host's neediest rank speaks for its ranks
        room, room_text = host_room()
        line = refusal(cfg, [n for n, _ in on_host], rank, phase, needs, room, room_text,
                       socket.gethostname())
    lines = [x for x in comm.allgather(line) if x]
    if lines:
        raise ConfigError(lines[0])

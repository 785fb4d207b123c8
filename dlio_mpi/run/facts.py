"""What a run ran on, for its summary: the MPI library and MPI-IO component, ranks and hosts,
the data's file system, the dataset against one host's memory, the CPUs per rank against the
read threads, and how O_DIRECT alignment widens sample reads; with the warnings they call for."""
import os

import numpy as np

from dlio_mpi import backends, engines
from dlio_mpi.readers import prefetch
from dlio_mpi.run import sysinfo
from dlio_mpi.run.metrics import _mpi
from dlio_mpi.files.nearest_folder import existing_folder


def run_facts(cfg, comm):
    """What the run ran on, for the summary: MPI library and MPI-IO component, ranks and
    hosts, file system of the data, dataset size against one host's memory."""
    hosts = comm.allgather(os.uname().nodename)
    memory = comm.allreduce(sysinfo.memory_bytes(), op=_mpi().MIN)
    dataset = cfg.num_samples * cfg.dataset.record_length
    facts = {"mpi": sysinfo.mpi_library(), "mpiio": sysinfo.mpiio_component(),
             "ranks": comm.Get_size(), "hosts": len(set(hosts)),
             "ranks_per_host_max": max(hosts.count(h) for h in set(hosts)),
             "filesystem": sysinfo.filesystem_type(cfg.dataset.data_folder),
             "dataset_bytes": dataset, "host_memory_bytes": memory,
             "warnings": []}
    warn = sysinfo.dataset_vs_memory(dataset, memory) if cfg.workflow.train else None
    if warn:
        facts["warnings"].append(warn)
    threads = prefetch.read_ahead_threads(cfg)
    widening = odirect_widening(cfg) if comm.Get_rank() == 0 else None
    widening = comm.bcast(widening, root=0)
    if widening:
        facts["odirect_widening"] = widening
        facts["warnings"].append(
            f"io.interface=posix_direct: O_DIRECT alignment ({widening['alignment']} bytes on "
            f"{cfg.dataset.data_folder}) widens each sample read to up to "
            f"{widening['read_bytes_max']} bytes (samples of {widening['sample_bytes_max']} "
            f"bytes at most); bytes moved include the widening (file 0: "
            f"{widening['file0_read_bytes']} bytes read for {widening['file0_sample_bytes']} "
            "bytes of samples)")
    facts.update(rank_slice(cfg, comm))
    facts.update(rank_priority(cfg, comm))
    cpus = comm.allreduce(len(os.sched_getaffinity(0)), op=_mpi().MIN)
    facts["cpus_per_rank_min"] = cpus
    if threads > 1 and threads > cpus:
        facts["warnings"].append(
            f"reader.read_threads={threads} on {cpus} CPU{'s' if cpus > 1 else ''} per rank "
            "(the launcher's binding): the threads share the rank's CPUs (they give way to "
            "the rank's own thread), so reads that the CPU does, as from the page cache, go no "
            "faster than with fewer threads; bind each rank to "
            f"{threads} CPUs or more (mpiexec --map-by slot:PE={threads}, srun "
            "--cpus-per-task) or not at all (--bind-to none)")
    return facts


def host_figures(comm):
    """One (name, CPUs, memory bytes) per host of the job, in the order of their first rank
    (rank 0's host first): what the DLIO layout of the summary lists per host."""
    seen = {}
    for name, cpus, memory in comm.allgather((os.uname().nodename, os.cpu_count() or 0,
                                              sysinfo.memory_bytes())):
        seen.setdefault(name, (name, cpus, memory))
    return list(seen.values())


def rank_slice(cfg, comm):
    """Ask for io.rank_slice_us for the rank's thread (engines.thread_slice); the fact: the
    slice every rank was given (us), or 0 and why not."""
    want = cfg.io.rank_slice_us
    try:
        got, why = engines.thread_slice(want * 1e-6), ""
    except OSError as e:
        got, why = 0.0, e.strerror
    got = comm.allreduce(round(got * 1e6), op=_mpi().MIN)
    fact = {"rank_slice_us": got}
    if want and got != want:
        why = comm.allgather(why)
        fact["rank_slice_note"] = (
            f"io.rank_slice_us={want}: "
            + (next(w for w in why if w) if any(why) else
               "the kernel takes no time slice for a thread (Linux before 6.12)")
            + "; woken rank threads wait for the read threads' slices")
    return fact


def rank_priority(cfg, comm):
    """Whether every rank's thread may run its training steps under SCHED_FIFO at
    io.rank_priority (engines.thread_fifo_probe), and its read threads catch up at nice
    engines.STEPS_BOOST_NICE there (thread_nice_probe); the facts: the priority, or 0 and why
    not; the nice value, or 0 and why not."""
    want = cfg.io.rank_priority
    if not want:
        return {"rank_priority": 0, "read_boost_nice": 0}
    why = boost_why = ""
    try:
        engines.thread_fifo_probe(want)
    except OSError as e:
        why = e.strerror
    try:
        engines.thread_nice_probe(engines.STEPS_BOOST_NICE)
    except OSError as e:
        boost_why = e.strerror
    whys = comm.allgather((why, boost_why))
    why = [w for w, _ in whys if w]
    if why:
        return {"rank_priority": 0, "read_boost_nice": 0, "rank_priority_note": (
            f"io.rank_priority={want}: {why[0]}; the steps run under the thread's own policy, "
            "where a woken rank may wait for read threads' time slices (more threads than "
            "cores)")}
    facts = {"rank_priority": want, "read_boost_nice": engines.STEPS_BOOST_NICE}
    boost_why = [w for _, w in whys if w]
    if boost_why:
        facts.update(read_boost_nice=0, read_boost_note=(
            f"read threads behind: {boost_why[0]}; a rank whose next batch falls behind gets "
            "the cores' share of every other rank"))
    return facts


def odirect_widening(cfg):
    """With io.interface=posix_direct and per-sample reads, how O_DIRECT alignment widens the
    reads of the samples of the first training file (the aligned ranges covering them, cut at
    the file's end, as the reader reads them), or None when no read is widened."""
    if (not backends.of(cfg).direct or not cfg.workflow.train
            or cfg.reader.access != "sample" or cfg.io.read_type != "on_demand"):
        return None
    from dlio_mpi.data.dataset import Dataset
    data = Dataset(cfg)
    if not data.byte_ranges or data.num_files == 0:
        return None
    # the data folder, or with io.write_first the folder it is made in (not made yet)
    align = engines.dio_alignment(existing_folder(data.root))[1]
    idx = data.index(0)
    offs, lens = idx.ranges(np.arange(data.spf))
    start = offs - offs % align
    end = np.minimum(-(-(offs + lens) // align) * align, max(int(idx.file_size), 0))
    read = np.maximum(end - start, lens)
    if int(read.sum()) == int(lens.sum()):
        return None
    return {"alignment": int(align), "sample_bytes_max": int(lens.max()),
            "read_bytes_max": int(read.max()), "file0_sample_bytes": int(lens.sum()),
            "file0_read_bytes": int(read.sum())}

"""The minimum training dataset by MLPerf Storage's two rules: enough samples for 500 steps per
epoch at the largest process count and the batch size, and enough bytes for 5x the summed
memory of the client hosts; the larger decides. Files round up (at least, never just under),
and a dataset beyond mlpstorage's file count is sharded into subfolders."""
import dataclasses
import math

from dlio_mpi.acceptance.rules import (FILES_PER_SUBFOLDER, HOST_MEMORY_MULTIPLIER,
                                       MAX_FILES_UNSHARDED, MIN_STEPS_PER_EPOCH,
                                       AcceptanceError)
from dlio_mpi.display import units

GIB = 2**30
RULE_MEMORY = f"{HOST_MEMORY_MULTIPLIER}x client memory"
RULE_STEPS = f"{MIN_STEPS_PER_EPOCH} steps per epoch"


@dataclasses.dataclass(frozen=True)
class Minimum:
    """The inputs, each rule's minimum, and the dataset they ask for."""
    record_length: int
    samples_per_file: int
    batch_size: int
    hosts: int
    accelerators: int           # over all the hosts
    host_memory_bytes: int      # summed over the hosts
    samples_by_steps: int
    samples_by_memory: int
    num_files_train: int
    num_subfolders_train: int
    rule: str

    @property
    def dataset_bytes(self):
        return self.num_files_train * self.samples_per_file * self.record_length

    @property
    def dataset_gib(self):
        return self.dataset_bytes / GIB

    def as_json(self):
        return {"num_files_train": self.num_files_train,
                "num_subfolders_train": self.num_subfolders_train,
                "dataset_gib": round(self.dataset_gib, 3), "rule": self.rule}


def subfolders(num_files):
    """Subfolders for num_files training files: none up to MAX_FILES_UNSHARDED, else enough
    that none holds more than FILES_PER_SUBFOLDER."""
    return 0 if num_files <= MAX_FILES_UNSHARDED else math.ceil(num_files / FILES_PER_SUBFOLDER)


def check_even(hosts, accelerators):
    """Every host runs the same number of accelerators: the total a multiple of the hosts."""
    if hosts >= 1 and accelerators % hosts:
        raise AcceptanceError(
            f"{accelerators} accelerators on {hosts} hosts: every host runs the same number "
            "of accelerators (the total is a multiple of the hosts)")


def minimum(*, record_length, samples_per_file, batch_size, hosts, accelerators,
            host_memory_bytes):
    """The minimum dataset for `accelerators` in total on `hosts` hosts whose memory sums to
    host_memory_bytes (AcceptanceError for inputs the rules cannot size)."""
    for name, value in (("hosts", hosts), ("accelerators", accelerators),
                        ("record length", record_length), ("batch size", batch_size),
                        ("samples per file", samples_per_file)):
        if value < 1:
            raise AcceptanceError(f"{name} {value}: must be at least 1")
    if host_memory_bytes <= 0:
        raise AcceptanceError("host memory unknown or zero: give --host-memory-gib")
    by_steps = MIN_STEPS_PER_EPOCH * batch_size * accelerators
    by_memory = math.ceil(HOST_MEMORY_MULTIPLIER * host_memory_bytes / record_length)
    files = math.ceil(max(by_steps, by_memory) / samples_per_file)
    return Minimum(record_length, samples_per_file, batch_size, hosts, accelerators,
                   host_memory_bytes, by_steps, by_memory, files, subfolders(files),
                   RULE_MEMORY if by_memory > by_steps else RULE_STEPS)


def explain(m):
    """The arithmetic of m, as lines."""
    per_host = m.host_memory_bytes / m.hosts
    dataset = max(m.samples_by_steps, m.samples_by_memory)
    lines = [
        f"{RULE_STEPS}: {MIN_STEPS_PER_EPOCH} x batch {m.batch_size} x {m.accelerators} "
        f"accelerators = {m.samples_by_steps:,} samples",
        f"{RULE_MEMORY}: {HOST_MEMORY_MULTIPLIER} x {m.hosts} hosts x {units.size_in(per_host, 'GiB')} / "
        f"{m.record_length:,} bytes per sample = {m.samples_by_memory:,} samples (rounded up)",
        f"decided by {m.rule}: {dataset:,} samples / {m.samples_per_file:,} per file = "
        f"{m.num_files_train:,} files (rounded up), {units.size_in(m.dataset_bytes, 'GiB')}",
    ]
    if m.num_subfolders_train:
        lines.append(f"{m.num_files_train:,} files > {MAX_FILES_UNSHARDED:,}: "
                     f"{m.num_subfolders_train} subfolders of at most "
                     f"{FILES_PER_SUBFOLDER:,} files")
    return lines

"""HDF5 files read whole into memory at open: libhdf5's core driver (h5py's
``File(path, driver='core')``). Each open of such a file is one read of the whole file from
offset 0 (more only if the kernel returns less), and every H5Dread after it is a copy out of
memory: Darshan's H5D record counts the calls and their bytes, and no POSIX read lies beneath
them. The sec2 and MPI-IO drivers always read the superblock and object headers apart from the
data, so a file whose every POSIX read is the whole file was opened through the core driver.

The samples are then seen only at HDF5: an H5Dread's bytes (Darshan keeps no dimensions, so
a call's rows cannot be told apart: a sample is a call), the calls' count and the datasets'
bytes (how many passes), and the calls' span in time (the step's pace). Their order cannot be
seen (no trace of H5Dread calls, no reads beneath them)."""
import numpy as np

from dlio_mpi_analysis.fitting import fit_patterns


def whole_file_reads(job, data):
    """Whether every data file that H5Dread calls read was read only whole: each POSIX read
    of it the file's full size, as many reads as opens at most (its ranks' records summed)."""
    posix = job.records.get("POSIX")
    datasets = fit_patterns.h5d_datasets(job, set(data["name"]))
    if posix is None or posix.empty or not datasets:
        return False
    read_by_h5d = {name.split(":", 1)[0] for name in datasets}
    if not read_by_h5d or not read_by_h5d <= set(data["name"]):
        return False
    for i, name in data["name"].items():
        if name not in read_by_h5d:
            continue
        mine = posix[posix["id"] == int(i)]
        reads = int(mine["POSIX_READS"].clip(lower=0).sum())
        nbytes = int(mine["POSIX_BYTES_READ"].clip(lower=0).sum())
        whole = int(mine["POSIX_MAX_BYTE_READ"].max()) + 1
        opens = int(mine["POSIX_OPENS"].clip(lower=0).sum())
        size = int(data.loc[i, "size"]) if "size" in data else whole
        if reads < 1 or nbytes != reads * whole or whole < size or reads > max(opens, 1):
            return False
    return True


def core_workload(workload, job, data, ranks, notes, evidence):
    """The workload of a job that read its HDF5 files through the core driver: io.interface
    hdf5_core, the samples and steps from the H5D records (see the module docstring)."""
    datasets = fit_patterns.h5d_datasets(job, set(data["name"]))
    reads = sum(r for r, _, _ in datasets.values())
    asked = sum(b for _, b, _ in datasets.values())
    holds = sum(h for _, _, h in datasets.values())
    per_read = int(round(asked / reads))
    ds, rd, io, train = (workload[k] for k in ("dataset", "reader", "io", "train"))
    if io.get("layout") == "replicated":
        # every rank read the whole file at open, whatever share of it its calls took: a
        # shared file (each rank's share of the samples, the data-parallel rule)
        io["layout"] = "shared"
    layout = io.get("layout", "multi")
    files = max(1, int(ds.get("num_files_train", len(data))))
    per_file = holds / max(len(data), 1)
    spf = max(1, int(round(per_file / max(per_read, 1))))
    passes_of = files * spf * per_read * (ranks if layout == "replicated" else 1)
    epochs = max(1, int(round(asked / max(passes_of, 1))))
    for key in ("hdf5_fields", "record_length_stdev", "chunk_size", "enable_chunking",
                "compression"):
        ds.pop(key, None)
    ds.update({"num_samples_per_file": spf, "record_length": per_read})
    compute = _pace(job, datasets, reads, ranks)
    rd.update({"batch_size": 1, "read_threads": 0, "transfer_size": 0,
               "sample_shuffle": "off"})
    for key in ("access", "hdf5_reads", "batch_order", "whole_file", "reopen"):
        rd.pop(key, None)
    train.update({"epochs": epochs, "computation_time": round(compute, 6)})
    train.pop("total_training_steps", None)
    io.update({"interface": "hdf5_core", "read_type": "on_demand"})
    # the one read a file at open looked like a load at start: the H5Dread calls after it
    # are the steps, which that note denies
    notes[:] = [n for n in notes if "io.read_type memory" not in n]
    evidence["hdf5_core"] = {"h5dreads": reads, "bytes_per_read": per_read,
                             "dataset_bytes": holds, "epochs": epochs}
    notes.append(
        f"every POSIX read of the HDF5 files was the whole file, one an open, and the "
        f"{reads} H5Dread calls ({per_read} bytes each) read nothing beneath them: libhdf5's "
        f"core driver (h5py driver='core'; io.interface hdf5_core); a sample is an H5Dread "
        f"(Darshan keeps no dimensions to tell its rows), {epochs} pass(es) over "
        f"{holds} bytes of datasets, {compute:.4g} s between calls; their order cannot be "
        "seen (reads from memory): in order")


def _pace(job, datasets, reads, ranks):
    """Seconds between a rank's H5Dread calls less their own time: the span from its first
    call's start to its last's end, over its calls, the calls' time taken out (the median
    over the ranks)."""
    h5d = job.records.get("H5D")
    if h5d is None or "H5D_F_READ_START_TIMESTAMP" not in h5d:
        return 0.0
    mine = h5d[[job.names.get(int(i), "") in datasets for i in h5d["id"]]]
    paces = []
    for _, rows in mine.groupby("rank"):
        n = int(rows["H5D_READS"].clip(lower=0).sum())
        if n < 2:
            continue
        span = float(rows["H5D_F_READ_END_TIMESTAMP"].max()
                     - rows["H5D_F_READ_START_TIMESTAMP"].min())
        busy = float(rows["H5D_F_READ_TIME"].clip(lower=0).sum())
        paces.append(max(0.0, (span - busy) / (n - 1)))
    return float(np.median(paces)) if paces else 0.0

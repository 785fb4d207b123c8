"""MLPerf Storage's rules for training workloads, as figures: the workloads they define and
the AU each must sustain, the dataset's minimum against client memory and steps per epoch, the
runs a result is the mean of, and the parameters a CLOSED or OPEN submission may change."""


class AcceptanceError(ValueError):
    """Input the procedure refuses before it starts anything (one line, exit 2)."""


# the minimum accelerator utilization of each training workload, in percent
AU_THRESHOLD_PERCENT = {"unet3d": 90.0, "resnet50": 90.0, "cosmoflow": 70.0}

# the dataset holds at least this many times the summed MemTotal of the client hosts
HOST_MEMORY_MULTIPLIER = 5
# and at least this many steps per epoch at the largest process count
MIN_STEPS_PER_EPOCH = 500
# a result is the mean of this many runs, after one warm-up run
RUNS = 5

# beyond this many training files mlpstorage shards the dataset into subfolders, and it
# suggests about this many files in each
MAX_FILES_UNSHARDED = 128 * 1024
FILES_PER_SUBFOLDER = 10_000

# the content seed the generator keeps for every run (the runs change train.seed only)
DATA_SEED = 10

# parameters a submission may change, under the DLIO benchmark's names; anything else makes
# a run neither CLOSED nor OPEN
CLOSED_PARAMETERS = frozenset({
    "dataset.num_files_train", "dataset.num_subfolders_train", "dataset.data_folder",
    "reader.read_threads", "reader.computation_threads", "reader.transfer_size",
    "reader.odirect", "reader.prefetch_size", "checkpoint.checkpoint_folder",
    "storage.storage_type", "storage.storage_root"})
OPEN_PARAMETERS = frozenset({
    "framework", "dataset.format", "dataset.num_samples_per_file", "reader.data_loader"})


def threshold(workload):
    """The AU threshold (percent) of a training workload the rules define."""
    try:
        return AU_THRESHOLD_PERCENT[workload]
    except KeyError:
        raise AcceptanceError(
            f"workload {workload!r}: MLPerf Storage's training rules define "
            f"{', '.join(sorted(AU_THRESHOLD_PERCENT))}") from None


def division(parameter):
    """"closed", "open" or "not allowed": what changing parameter (section.key) leaves a run."""
    name = parameter.lstrip("+")
    if name.startswith("workload."):
        name = name[len("workload."):]
    if name in CLOSED_PARAMETERS:
        return "closed"
    if name in OPEN_PARAMETERS:
        return "open"
    return "not allowed"

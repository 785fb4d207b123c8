"""The workload's configuration at each step of the procedure, as overrides over the shipped
workload: the data and checkpoint folders in the results folder (unless given), the content
seed fixed, the dataset's size, the user's own overrides, then what each run sets for itself
(its seed, its output folder, no generation: the dataset is made once, by datagen)."""
from dlio_mpi.config import loader as config
from dlio_mpi.acceptance import results_folder
from dlio_mpi.acceptance.rules import DATA_SEED, AcceptanceError


def given(overrides):
    """{section.key: value} of the user's overrides (Hydra's ++ and workload. prefixes off)."""
    out = {}
    for item in overrides:
        key, _, value = item.partition("=")
        key = key.strip().lstrip("+")
        if key.startswith("workload."):
            key = key[len("workload."):]
        out[key] = value
    return out


# keys the procedure sets for itself, and where the user sets them instead
RESERVED = {"workload": "the command's argument", "train.seed": "--seed",
            "dataset.seed": "fixed by the procedure", "output.folder": "--results",
            "workflow.generate_data": "datagen makes the dataset once",
            "io.fail_below_au": "result.json's pass"}


def check_overrides(overrides):
    """The user's overrides are section.key=value, none of the keys the procedure sets."""
    for item in overrides:
        if "=" not in item:
            raise AcceptanceError(f"{item!r}: overrides are section.key=value")
        key = next(iter(given([item])))
        if key in RESERVED:
            raise AcceptanceError(f"{item!r}: the procedure sets {key} ({RESERVED[key]})")


def base(workload, results, user_overrides, sized=None):
    """Overrides of the dataset's configuration: sized is (files, subfolders) or None."""
    out = [f"workload={workload}",
           f"dataset.data_folder={results_folder.default_data_folder(results, workload)}",
           "checkpoint.checkpoint_folder="
           f"{results_folder.default_checkpoint_folder(results, workload)}",
           f"dataset.seed={DATA_SEED}"]
    if sized is not None:
        out += [f"dataset.num_files_train={sized[0]}", f"dataset.num_subfolders_train={sized[1]}"]
    return out + list(user_overrides)


def for_run(base_overrides, seed, output_folder):
    """Overrides of one run of the procedure (the warm-up or a measured run)."""
    return list(base_overrides) + [f"train.seed={seed}", f"output.folder={output_folder}",
                                   "workflow.generate_data=false", "io.fail_below_au=false"]


def load(overrides):
    """The validated configuration (AcceptanceError naming the bad key)."""
    try:
        return config.load(overrides)
    except config.ConfigError as e:
        raise AcceptanceError(f"config error: {e}") from None

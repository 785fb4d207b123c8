"""The results folder of one acceptance procedure, laid out as mlpstorage lays out its
results: DIR/training/WORKLOAD/datagen/TIME/ (the generation's log and record) and
DIR/training/WORKLOAD/run/TIME/ (the warm-up and each run as an output folder of its own, in
DLIO's layout, and result.json), `latest` linking the newest of each. DIR/acceptance.json says
which procedure the folder belongs to and describes its dataset (by default DIR/data/WORKLOAD),
so that the runs read the dataset datagen made and another procedure's runs are refused."""
import json
import os

from dlio_mpi.run import outputs
from dlio_mpi.files import safe_files
from dlio_mpi.acceptance.rules import AcceptanceError

MARKER = "acceptance.json"
PROCEDURE = "mlperf_storage_training"
RESULT = "result.json"
WARMUP = "warmup"


def run_name(i):
    """The folder of measured run i (from 1)."""
    return f"run_{i}"


def workload_folder(results, workload):
    return os.path.join(results, "training", workload)


def default_data_folder(results, workload):
    return os.path.join(results, "data", workload)


def default_checkpoint_folder(results, workload):
    return os.path.join(results, "checkpoints", workload)


def read_marker(results):
    """The folder's acceptance.json (None when there is none); AcceptanceError when it cannot
    be read."""
    path = os.path.join(results, MARKER)
    try:
        with open(path) as f:
            marker = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise AcceptanceError(f"{path} cannot be read: {e}") from None
    if not isinstance(marker, dict):
        raise AcceptanceError(f"{path} cannot be read: not a JSON object")
    return marker


def check_owner(results, workload, marker):
    """Refuse a results folder that belongs to another procedure or workload, or that holds
    other files and no acceptance.json."""
    if marker is None:
        if os.path.isdir(results) and os.listdir(results):
            raise AcceptanceError(
                f"results folder {results} holds files but no {MARKER}: it is not an "
                "acceptance procedure's; give an empty or new folder")
        return
    if marker.get("procedure") != PROCEDURE or marker.get("workload") != workload:
        raise AcceptanceError(
            f"results folder {results} holds the runs of {marker.get('procedure')} "
            f"{marker.get('workload')}, not of {PROCEDURE} {workload}: give another folder")


def write_marker(results, marker):
    safe_files.write_whole(os.path.join(results, MARKER), json.dumps(marker, indent=1),
                           fsync=True)


def new_step_folder(results, workload, step, started):
    """DIR/training/WORKLOAD/STEP/TIME (step: "datagen" or "run"), made now, `latest`
    linked to it."""
    parent = os.path.join(workload_folder(results, workload), step)
    os.makedirs(parent, exist_ok=True)
    return outputs.new_run_folder(parent, started)


def write_json(path, doc):
    safe_files.write_whole(path, json.dumps(doc, indent=1), fsync=True)
